"""The gemm family in the report: the throughput figure against size per GPU, shape and precision.
Its records also feed the FP16-versus-FP32 verdict (``analysis.fp16_vs_fp32``, read by the checklist)."""

from __future__ import annotations

from collections import defaultdict

from matplotlib.lines import Line2D

from .. import plots
from ..conventions import is_number
from ..load import ReportData
from ..records import gpu_label, model_of, where
from ..metrics import declare, metric

FAMILY = "gemm"
PRIMARY = ("tflops", "tops")
METRICS = declare(metric("tflops", "TFLOPS"), metric("tops", "TOPS"))
FEEDS = ("fp16_vs_fp32",)
PLOT_ORDER = 10


def group_key(rec: dict) -> tuple:
    """(Where, shape, precision): a line of the figure (panels per GPU and shape)."""
    p = rec.get("params") or {}
    return where(rec), str(p.get("shape", "square")), str(p.get("precision", "?"))


def _series(data: ReportData):
    """{(Where, shape): {precision: {size: best value}}} and {Where: {precision: peak}}."""
    series: dict = defaultdict(lambda: defaultdict(dict))
    peaks: dict = defaultdict(dict)
    for rec in data.family(FAMILY):
        p, m = rec["params"], rec["metrics"]
        value = m.get("tflops") if is_number(m.get("tflops")) else m.get("tops")
        g, shape, prec = group_key(rec)
        x = p.get("m") if shape == "square" else p.get("batch", p.get("m"))
        if not is_number(value) or not is_number(x):
            continue
        cur = series[(g, shape)][prec]
        cur[x] = max(cur.get(x, 0.0), value)
        pop = rec.get("percent_of_peak")
        if pop and is_number(pop.get("peak")):
            peaks[g][prec] = max(peaks[g].get(prec, 0.0), pop["peak"])
    return series, peaks


def _panels(series) -> tuple[list, set]:
    """The (Where, shape) panels to draw: square shapes, and model shapes measured at two sizes or more."""
    gpus = sorted({g for g, _ in series})[:plots.MAX_PANELS]
    panels, single = [], set()
    for g in gpus:
        for shape in sorted((s for h, s in series if h == g), key=lambda s: (s != "square", s)):
            if shape == "square" or any(len(v) > 1 for v in series[(g, shape)].values()):
                panels.append((g, shape))
            else:
                single.add(shape)
    if not panels:  # only model shapes at one size each: show them anyway
        return [(g, s) for g in gpus for s in sorted(s for h, s in series if h == g)], set()
    return panels, single


def plot_gemm(data: ReportData) -> plots.Plot:
    plot = plots.Plot("gemm", "GEMM throughput against size",
                      "TFLOPS (TOPS for int8) per precision, best API at each size; dashed lines: the expected peak.",
                      order=PLOT_ORDER)
    series, peaks = _series(data)
    if not series:
        plot.missing = plots._absent(data, FAMILY, "this plot")
        return plot
    panels, single = _panels(series)
    if single:
        plot.caption += (f" Shapes measured at a single size ({', '.join(sorted(single))}) are not drawn; "
                         f"see the records table.")
    # more precisions than a panel reads at a glance: small multiples, sharing the y axis
    panels = [(g, shape, part) for g, shape in panels
              for part in plots.split_series(sorted(series[(g, shape)], key=plots._prec_key))]
    with plots.plt.rc_context(plots._STYLE):
        fig, axes = plots._grid(len(panels), sharey=len(panels) > 1)
        precs = sorted({p for lines in series.values() for p in lines}, key=plots._prec_key)
        colors = {p: plots._color(i) for i, p in enumerate(precs)}
        for ax, (g, shape, part) in zip(axes, panels):
            for prec in part:
                pts = sorted(series[(g, shape)][prec].items())
                ax.plot([x for x, _ in pts], [v for _, v in pts], "o-", color=colors[prec], label=prec, ms=4)
                if prec in peaks[g]:
                    ax.axhline(peaks[g][prec], color=colors[prec], ls="--", lw=1, alpha=0.7)
            plots._pow2_axis(ax)
            ax.set_xlabel("M = N = K" if shape == "square" else f"batch (M), {shape} shape")
            ax.set_ylabel("TFLOPS / TOPS")
            ax.set_title(f"{gpu_label(g)}: {model_of(data, g)}, {shape}")
            handles, labels = ax.get_legend_handles_labels()
            handles.append(Line2D([], [], color="gray", ls="--", lw=1))
            labels.append("peak")
            plots._legend(ax, handles, labels)
            ax.set_yscale("log")
        plot.png = plots._png(fig)
    return plot


def figures(data: ReportData) -> list:
    return [plot_gemm(data)]
