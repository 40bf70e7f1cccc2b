"""The report's figures, rendered with matplotlib's Agg backend into PNG bytes: the page's common
figure style (:class:`Plot`, the grid, legend and axis helpers, "not measured"), the figures that
combine families (data-parallel scaling, FP16/FP32 speedup), and :func:`render_all`, which adds every
family's own figures (``families/<family>.py``: ``figures(data)``) and orders them by ``Plot.order``.

A figure whose data is absent carries a ``missing`` sentence instead of an image ("not measured"),
never an error.
"""

from __future__ import annotations

import math
import warnings
from collections import defaultdict
from dataclasses import dataclass

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator  # noqa: E402

from . import derive  # noqa: E402
from .load import ReportData  # noqa: E402
from .figure_boxes import png_with_boxes  # noqa: E402
from .util import fmt_bytes, fmt_bytes_short  # noqa: E402

DPI = 100
_OOM_COLOR = "black"  # never a series colour (C3 is red)
MAX_PANELS = 8
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


def _grid(n: int, cols_max: int = 2, w: float = 5.6, h: float = 3.6):
    if n == 1 and w < 7.5:
        w = 7.5
    cols = min(n, cols_max)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(w * cols, h * rows), squeeze=False, layout="constrained")
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


def _plot_dp(plot: Plot, series: list) -> Plot:
    """Data-parallel training against GPU count: throughput (measured points, predicted line, ideal line
    N x 1-GPU) and efficiency (N-GPU over N x 1-GPU throughput)."""
    plot.caption = ("Data-parallel ResNet-50 training against GPU count: throughput (points measured by the "
                    "train_dp family, lines predicted by nodebench advise: the bound set by communication and input, "
                    "leaving out framework, optimizer and straggler costs; dashed the ideal N x 1-GPU) and "
                    "scaling efficiency (N-GPU throughput over N x 1-GPU throughput).")
    if any(s.predicted_label.startswith("predicted from profile") for s in series):
        plot.caption += " Predicted from profile, not measured."
    with plt.rc_context(_STYLE):
        fig, (ax, ax2) = _grid(2, w=5.6, h=3.8)
        xs_all: set[int] = set()
        for i, s in enumerate(series[:8]):
            c = _color(i)
            if s.measured:
                ax.plot([q.gpus for q in s.measured], [q.images_per_s for q in s.measured], "o", color=c,
                        label=f"{s.label} (measured)")
                pts = [q for q in s.measured if q.efficiency is not None]
                ax2.plot([q.gpus for q in pts], [q.efficiency * 100 for q in pts], "o", color=c)
            if s.predicted:
                ax.plot([q.gpus for q in s.predicted], [q.images_per_s for q in s.predicted], "-", color=c,
                        label=f"{s.label} (predicted)")
                ax2.plot([q.gpus for q in s.predicted], [q.efficiency * 100 for q in s.predicted], "-", color=c)
            xs = sorted({q.gpus for q in s.measured + s.predicted})
            xs_all.update(xs)
            if s.one_gpu_ips:
                ax.plot(xs, [x * s.one_gpu_ips for x in xs], "--", color=c, lw=1, alpha=0.7)
        ax2.axhline(100, color="gray", ls="--", lw=1, label="ideal")
        for a in (ax, ax2):
            a.set_xticks(sorted(xs_all))
            a.set_xlabel("GPU count")
        ax.set_ylabel("images/s (dashed: ideal N x 1 GPU)")
        ax2.set_ylabel("scaling efficiency (%)")
        ax2.set_ylim(0, 110)
        _legend(ax)
        plot.png = _png(fig)
    return plot


def plot_scaling(data: ReportData) -> Plot:
    plot = Plot("scaling", "Scaling efficiency against GPU count",
                "All-reduce bus bandwidth at the largest message relative to the smallest GPU count, and the "
                "estimated data-parallel ResNet-50 training efficiency (FP32 gradients, no overlap).", order=70)
    from .families import nccl, train_dp  # here: family modules import this one
    series = [s for s in train_dp.dp_series(data) if s.measured or s.predicted]
    if series:
        return _plot_dp(plot, series)
    sc = nccl.scaling(data)
    if sc is None:
        plot.missing = _absent(data, "nccl", "scaling")
        return plot
    with plt.rc_context(_STYLE):
        fig, (ax,) = _grid(1, w=7.0, h=3.8)
        xs = [r.ngpus for r in sc.rows]
        ax.plot(xs, [r.busbw_efficiency * 100 for r in sc.rows], "o-", color="C0",
                label=f"all-reduce bus bandwidth at {fmt_bytes(sc.common_bytes)},\nrelative to {xs[0]} GPUs")
        if sc.step_s is not None:
            ax.plot([1] + xs, [100.0] + [r.train_efficiency * 100 for r in sc.rows], "s-", color="C1",
                    label=f"data-parallel training efficiency\n({sc.step_label}, no overlap)")
        ax.axhline(100, color="gray", ls="--", lw=1, label="ideal")
        ax.set_xticks(sorted(set(([1] if sc.step_s is not None else []) + xs)))
        lo = min([r.busbw_efficiency * 100 for r in sc.rows] +
                 ([r.train_efficiency * 100 for r in sc.rows] if sc.step_s is not None else []))
        ax.set_ylim(min(lo - 5, 80), max(105, max(r.busbw_efficiency * 100 for r in sc.rows) + 5))
        ax.set_xlabel("GPU count")
        ax.set_ylabel("efficiency (%)")
        _legend(ax)
        plot.png = _png(fig)
    return plot


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
        ax.set_xticklabels([s if len(s) < 28 else s[:26] + "..." for s in sources], fontsize=8)
        ax.set_ylabel("speedup (x)")
        ax.set_ylim(0, max(r.speedup_x for r in rows) * 1.18)
        if len(gpus) > 1:
            _legend(ax)
        plot.png = _png(fig)
    return plot


def render_all(data: ReportData) -> list[Plot]:
    """The figures across families and every family's own, in page order."""
    from . import families  # here: family modules import this one
    # odd values (huge, zero on a log axis) must not spill library warnings into the command's output
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        figures = [plot_scaling(data), plot_speedup(data)] + families.figures(data)
    return sorted(figures, key=lambda p: p.order)
