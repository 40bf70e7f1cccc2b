"""The report's figures, rendered with matplotlib's Agg backend into PNG bytes: the page's common
figure style (:class:`Plot`, the grid, legend and axis helpers, "not measured") and the figure read from
the file's analyses rather than a family's records (FP16/FP32 speedup). The families' own figures are
in their modules (``families/<family>.py``: ``figures(data)``); :func:`assemble.render_all` puts all in
page order. Nothing here names a family.

A figure whose data is absent carries a ``missing`` sentence instead of an image ("not measured"),
never an error.
"""

from __future__ import annotations

import math
import textwrap
from collections import defaultdict
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator  # noqa: E402

from . import derive  # noqa: E402
from .load import ReportData  # noqa: E402
from .figure_boxes import png_with_boxes  # noqa: E402
from .util import fmt_bytes_short  # noqa: E402

DPI = 100
_OOM_COLOR = "black"  # never a series colour (C3 is red)
MAX_PANELS = 8
MAX_SERIES = 6      # lines per panel at most: more are split into small multiples (split_series)
_PREC_ORDER = ["fp64", "fp32", "tf32", "fp16", "fp16acc16", "bf16", "int8", "fp8"]
_STYLE = {
    "axes.grid": True, "grid.alpha": 0.3, "axes.spines.top": False, "axes.spines.right": False,
    "font.size": 9, "axes.titlesize": 10, "legend.fontsize": 8, "figure.dpi": DPI,
}


@dataclass
class Plot:
    key: str
    title: str
    caption: str
    png: bytes | None = None
    missing: str | None = None
    order: int = 500            # place on the page (the families' figures: 10, 20, ...; README)


def _png(fig) -> bytes:
    png = png_with_boxes(fig, DPI)   # the bytes, with where its plot areas and legends are (.boxes)
    plt.close(fig)
    return png


def _color(i: int) -> str:
    return f"C{i % 10}"


def _prec_key(p: str):
    return (_PREC_ORDER.index(p) if p in _PREC_ORDER else len(_PREC_ORDER), p)


def _bytes_axis(ax) -> None:
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(LogLocator(base=4))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: fmt_bytes_short(v)))


def _pow2_axis(ax) -> None:
    ax.set_xscale("log", base=2)
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))


def _legend(ax, handles=None, labels=None, ncol: int = 1) -> None:
    """Legend outside the plot area, to the right, so that it never hides data."""
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    if handles:
        ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0,
                  frameon=False, ncol=ncol)


def split_series(series: list, lines_each: int = 1, most: int = MAX_SERIES) -> list[list]:
    """The series of one panel split into small multiples of at most ``most`` lines (each series draws
    ``lines_each``), in their order, the parts as even as can be: 7 precisions -> 4 + 3."""
    per = max(1, most // max(1, lines_each))
    if len(series) <= per:
        return [list(series)]
    parts = math.ceil(len(series) / per)
    size = math.ceil(len(series) / parts)
    return [list(series[i:i + size]) for i in range(0, len(series), size)]


def _grid(n: int, cols_max: int = 2, w: float = 5.6, h: float = 3.6, sharey: bool = False):
    if n == 1 and w < 7.5:
        w = 7.5
    cols = min(n, cols_max)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(w * cols, h * rows), squeeze=False, layout="constrained",
                             sharey=sharey)
    flat = [ax for row in axes for ax in row]
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def _absent(data: ReportData, family: str, what: str) -> str:
    recs = data.family(family, status=None)
    if not recs:
        return f"not measured: no {family} records in these results"
    counts = defaultdict(int)
    for r in recs:
        counts[r["status"]] += 1
    return (f"not measured: {len(recs)} {family} record(s) but none usable for {what} "
            f"({', '.join(f'{v} {k}' for k, v in sorted(counts.items()))})")


# ----------------------------------------------------------------------------------------------
# figures across families


def plot_speedup(data: ReportData) -> Plot:
    plot = Plot("fp16_speedup", "FP16 / FP32 speedup",
                "Speedup of FP16 (mixed precision) over FP32; the line at 1x is no gain.", order=80)
    rows, _, source = derive.fp16_speedups(data)
    rows = [r for r in rows if r.speedup_x is not None]
    if not rows:
        plot.missing = (derive.missing_analysis(data, "fp16_vs_fp32") or
                        "not measured: no FP16/FP32 pair (gemm fp16 and fp32, conv, or analysis.fp16_vs_fp32)")
        return plot
    plot.caption += f" Source: {source}."
    sources = list(dict.fromkeys(r.source for r in rows))
    gpus = list(dict.fromkeys(r.who for r in rows))
    width = min(0.8 / len(gpus), 0.5)
    with plt.rc_context(_STYLE):
        fig, (ax,) = _grid(1, w=max(6.0, 1.6 * len(sources) + 2), h=3.8)
        for j, gpu in enumerate(gpus):
            xs, ys = [], []
            for i, src in enumerate(sources):
                for r in rows:
                    if r.who == gpu and r.source == src:
                        xs.append(i + width * (j - (len(gpus) - 1) / 2))
                        ys.append(r.speedup_x)
            bars = ax.bar(xs, ys, width=width * 0.9, color=_color(j), label=gpu)
            ax.bar_label(bars, fmt="%.1fx", fontsize=7, padding=2)
        ax.axhline(1.0, color="black", lw=1)
        ax.set_xticks(range(len(sources)))
        # each source's name whole, wrapped onto lines (never cut off)
        ax.set_xticklabels([textwrap.fill(s, 22) for s in sources], fontsize=8)
        ax.set_ylabel("speedup (x)")
        ax.set_ylim(0, max(r.speedup_x for r in rows) * 1.18)
        if len(gpus) > 1:
            _legend(ax)
        plot.png = _png(fig)
    return plot
