"""The example family in the report (tests/example_family/README.md): the device fill rate against
size, one line per GPU, and the checklist item that reads the file's ``analysis.example_fill``. Both
only for files with example records: the family is built into the tests alone, so no other report
shows either."""

from __future__ import annotations

from collections import defaultdict

from .. import derive, plots
from ..checklist import NOT_MEASURED, PASS, Item, placed
from ..conventions import is_number
from ..load import ReportData
from ..records import Where, gpu_label, where
from ..metrics import declare, metric

FAMILY = "example"
PRIMARY = ("gbps",)
METRICS = declare(metric("gbps", "GB/s"))
FEEDS = ("example_fill",)
# After every real family's figure (the input family's, 90) and item (train's, 82), before the run item (1000).
PLOT_ORDER, CHECK_ORDER = 95, 90
PLOT_KEY = "example"


def group_key(rec: dict) -> tuple:
    """(Where, kernel): one line of the figure."""
    return where(rec), str((rec.get("params") or {}).get("kernel", "?"))


def fill_curves(data: ReportData) -> dict[tuple[Where, str], list[tuple[float, float]]]:
    """{(Where, kernel): [(bytes, gbps), ...] by bytes} of the ok records."""
    out: dict = defaultdict(list)
    for rec in data.family(FAMILY):
        p, m = rec.get("params") or {}, rec.get("metrics") or {}
        if is_number(p.get("bytes")) and is_number(m.get("gbps")):
            out[group_key(rec)].append((float(p["bytes"]), float(m["gbps"])))
    return {k: sorted(v) for k, v in sorted(out.items())}


def plot_fill(data: ReportData) -> plots.Plot:
    plot = plots.Plot(PLOT_KEY, "Example: device fill rate against size",
                      "GB/s of cudaMemsetAsync over a device buffer against its size, one line per GPU "
                      "(the example family, tests only).", order=PLOT_ORDER)
    curves = fill_curves(data)
    if not curves:
        plot.missing = plots._absent(data, FAMILY, "a fill curve")
        return plot
    with plots.plt.rc_context(plots._STYLE):
        fig, (ax,) = plots._grid(1)
        for i, ((w, kernel), pts) in enumerate(curves.items()):
            xs, ys = zip(*pts)
            ax.plot(xs, ys, "o-", color=plots._color(i), label=f"{gpu_label(w)} {kernel}", ms=4)
        plots._bytes_axis(ax)
        ax.set_ylim(bottom=0)
        ax.set_xlabel("buffer size")
        ax.set_ylabel("GB/s")
        ax.set_title("Device fill")
        plots._legend(ax)
        plot.png = plots._png(fig)
    return plot


def check_fill(data: ReportData) -> Item:
    title = "The example fill ran (example family, tests only)"
    missing = derive.missing_analysis(data, "example_fill")
    if missing:
        return Item("example_fill", title, NOT_MEASURED, missing)
    entries = data.analysis.get("example_fill") or []
    if not entries:
        return Item("example_fill", title, NOT_MEASURED, "no ok example records: nothing to summarise")
    ev = [f"GPU {e['gpu']}: {e['best_gbps']:,.1f} GB/s at best ({e['best_id']}); its smallest fill "
          f"({e['smallest_id']}) reaches {100 * e['smallest_share']:.0f}% of that" for e in entries]
    best = max(entries, key=lambda e: e["best_gbps"])
    ev.append("source: analysis.example_fill")
    return Item("example_fill", title, PASS, f"fastest fill {best['best_gbps']:,.1f} GB/s on GPU {best['gpu']}", ev)


def figures(data: ReportData) -> list:
    return [plot_fill(data)] if data.has_family(FAMILY) else []


def checklist_items(data: ReportData) -> list:
    return [placed(check_fill(data), CHECK_ORDER)] if data.has_family(FAMILY) else []
