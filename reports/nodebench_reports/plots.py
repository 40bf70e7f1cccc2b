"""The report's plots, rendered with matplotlib's Agg backend into PNG bytes.

Each ``plot_*`` function returns a :class:`Plot`; when the results hold nothing for it, the plot
carries a ``missing`` sentence instead of an image ("not measured"), never an error.
"""

from __future__ import annotations

import io
import math
import warnings
from collections import defaultdict
from dataclasses import dataclass

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator  # noqa: E402

from . import derive, derive_train  # noqa: E402
from .load import ReportData, is_number  # noqa: E402
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


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


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


def plot_gemm(data: ReportData) -> Plot:
    plot = Plot("gemm", "GEMM throughput against size",
                "TFLOPS (TOPS for int8) per precision, best API at each size; dashed lines: the expected peak.")
    series: dict = defaultdict(lambda: defaultdict(lambda: defaultdict(dict)))  # gpus -> shape -> prec -> x -> v
    peaks: dict = defaultdict(dict)
    for rec in data.family("gemm"):
        p, m = rec["params"], rec["metrics"]
        value = m.get("tflops") if is_number(m.get("tflops")) else m.get("tops")
        shape = str(p.get("shape", "square"))
        x = p.get("m") if shape == "square" else p.get("batch", p.get("m"))
        if not is_number(value) or not is_number(x):
            continue
        prec = str(p.get("precision", "?"))
        g = derive.where(rec)
        cur = series[g][shape][prec]
        cur[x] = max(cur.get(x, 0.0), value)
        pop = rec.get("percent_of_peak")
        if pop and is_number(pop.get("peak")):
            peaks[g][prec] = max(peaks[g].get(prec, 0.0), pop["peak"])
    if not series:
        plot.missing = _absent(data, "gemm", "this plot")
        return plot
    panels, single = [], set()
    for g in sorted(series)[:MAX_PANELS]:
        for shape in sorted(series[g], key=lambda s: (s != "square", s)):
            if shape == "square" or any(len(v) > 1 for v in series[g][shape].values()):
                panels.append((g, shape))
            else:
                single.add(shape)
    if not panels:  # only model shapes at one size each: show them anyway
        panels = [(g, shape) for g in sorted(series)[:MAX_PANELS] for shape in sorted(series[g])]
        single = set()
    if single:
        plot.caption += (f" Shapes measured at a single size ({', '.join(sorted(single))}) are not drawn; "
                         f"see the records table.")
    with plt.rc_context(_STYLE):
        fig, axes = _grid(len(panels))
        precs = sorted({p for g in series for s in series[g] for p in series[g][s]}, key=_prec_key)
        colors = {p: _color(i) for i, p in enumerate(precs)}
        for ax, (g, shape) in zip(axes, panels):
            top = 0.0
            for prec in sorted(series[g][shape], key=_prec_key):
                pts = sorted(series[g][shape][prec].items())
                ax.plot([x for x, _ in pts], [v for _, v in pts], "o-", color=colors[prec], label=prec, ms=4)
                top = max(top, max(v for _, v in pts))
                if prec in peaks[g]:
                    ax.axhline(peaks[g][prec], color=colors[prec], ls="--", lw=1, alpha=0.7)
            _pow2_axis(ax)
            ax.set_xlabel("M = N = K" if shape == "square" else f"batch (M), {shape} shape")
            ax.set_ylabel("TFLOPS / TOPS")
            ax.set_title(f"{derive.gpu_label(g)}: {derive.model_of(data, g)}, {shape}")
            handles, labels = ax.get_legend_handles_labels()
            handles.append(Line2D([], [], color="gray", ls="--", lw=1))
            labels.append("peak")
            _legend(ax, handles, labels)
            ax.set_yscale("log")
        plot.png = _png(fig)
    return plot


def plot_conv(data: ReportData) -> Plot:
    plot = Plot("conv", "Convolution throughput against batch size",
                "ResNet-50 images/s per precision (solid: training, dashed: forward); black crosses on the axis: "
                "batches that ran out of memory.")
    points = derive.conv_network(data)
    if not points:
        return _plot_conv_layers(data, plot)
    groups = sorted({p.where for p in points})[:MAX_PANELS]
    layouts = {p.layout for p in points}

    def name(p):  # "fp16" or, when several layouts were measured, "fp16 nhwc"
        return p.precision + (f" {p.layout}" if len(layouts) > 1 and p.layout else "")

    with plt.rc_context(_STYLE):
        fig, axes = _grid(len(groups))
        series = sorted({(p.precision, p.layout) for p in points}, key=lambda s: (_prec_key(s[0]), s[1]))
        colors = {s: _color(i) for i, s in enumerate(series)}
        for ax, g in zip(axes, groups):
            mine = [p for p in points if p.where == g]
            for s in series:
                ok = [p for p in mine if (p.precision, p.layout) == s and p.status == "ok"]
                if not ok:
                    continue
                if any(p.train_ips for p in ok):
                    xs = [(p.batch, p.train_ips) for p in ok if p.train_ips]
                    ax.plot(*zip(*xs), "o-", color=colors[s], label=f"{name(ok[0])} train", ms=4)
                if any(p.fwd_ips for p in ok):
                    xs = [(p.batch, p.fwd_ips) for p in ok if p.fwd_ips]
                    ax.plot(*zip(*xs), "s--", color=colors[s], label=f"{name(ok[0])} forward", ms=3, alpha=0.8)
            ooms = [p for p in mine if p.oom]
            if ooms:
                ax.scatter([p.batch for p in ooms], [0] * len(ooms), marker="X", s=90, color=_OOM_COLOR, zorder=5,
                           label="out of memory", clip_on=False)
                for p in ooms:
                    ax.annotate(f"OOM {name(p)}", (p.batch, 0), textcoords="offset points", xytext=(0, 8),
                                ha="center", fontsize=7, color=_OOM_COLOR)
            _pow2_axis(ax)
            ax.set_ylim(bottom=0)
            ax.set_xlabel("batch size")
            ax.set_ylabel("images/s")
            ax.set_title(f"{derive.gpu_label(g)}: {derive.model_of(data, g)}")
            _legend(ax)
        plot.png = _png(fig)
    return plot


def _plot_conv_layers(data: ReportData, plot: Plot) -> Plot:
    series: dict = defaultdict(dict)
    ooms: dict = defaultdict(list)
    for rec in data.family("conv", status=None):
        p = rec["params"]
        if not is_number(p.get("batch")):
            continue
        label = f"{p.get('layer', '?')} {p.get('precision', '?')} {p.get('pass', '')}".strip()
        if rec["status"] == "ok" and is_number(rec["metrics"].get("images_per_s")):
            series[label][p["batch"]] = rec["metrics"]["images_per_s"]
        elif derive.is_oom(rec):
            ooms[label].append(p["batch"])
    if not series and not ooms:
        plot.missing = _absent(data, "conv", "this plot")
        return plot
    plot.caption = "Per-layer convolution images/s per precision and pass; black crosses: out of memory."
    with plt.rc_context(_STYLE):
        fig, (ax,) = _grid(1, w=8, h=4.2)
        for i, (label, pts) in enumerate(sorted(series.items())[:12]):
            xs = sorted(pts.items())
            ax.plot([x for x, _ in xs], [v for _, v in xs], "o-", color=_color(i), label=label, ms=4)
        all_oom = [b for bs in ooms.values() for b in bs]
        if all_oom:
            ax.scatter(all_oom, [0] * len(all_oom), marker="X", s=90, color=_OOM_COLOR, label="out of memory",
                       clip_on=False, zorder=5)
        _pow2_axis(ax)
        ax.set_ylim(bottom=0)
        ax.set_xlabel("batch size")
        ax.set_ylabel("images/s")
        _legend(ax)
        plot.png = _png(fig)
    return plot


_TOTALS = ("bidir", "h2d_all_gpus", "d2h_all_gpus")
# single-size series (pageable, SM copy, write-combined): markers of their own, never lines
_POINT_MARKERS = {"pageable": "v", "pinned/sm": "D", "write_combined": "*"}
_POINT_COLORS = {"pageable": "C4", "pinned/sm": "C2", "write_combined": "C6"}
_DIR_COLORS = {"h2d": "C0", "d2h": "C1"}


def _is_total(direction: str, w) -> bool:
    return direction in _TOTALS or direction.endswith("_all_gpus") or len(w.gpus) > 1


def plot_hostlink(data: ReportData) -> Plot:
    plot = Plot("hostlink", "Host link bandwidth against transfer size",
                "Per GPU: copy bandwidth per direction (colour: blue host-to-device, orange device-to-host) "
                "and host memory kind; transfer sizes measured once are markers (triangle pageable, diamond SM "
                "copy, star write-combined; filled h2d, hollow d2h); dotted black: the link's theoretical "
                "one-direction bandwidth. Totals (both directions at once, all GPUs at once) are in their own "
                "panel, against one and several links.")
    curves = derive.hostlink_curves(data)
    if not curves:
        plot.missing = _absent(data, "hostlink", "this plot")
        return plot
    per_gpu: dict = defaultdict(dict)
    totals = []  # (label, bytes, gbps, links it may use)
    for w, series in curves.items():
        for (direction, memory), pts in series.items():
            if _is_total(direction, w):
                b, v = pts[-1]
                n_links = (2 if direction == "bidir" else 1) * max(1, len(w.gpus))
                what = "both ways" if direction == "bidir" else direction.replace("_all_gpus", " all GPUs")
                totals.append((f"{derive.gpu_label(w)} {what}\n{memory}, {fmt_bytes_short(b)}", b, v, n_links))
            else:
                per_gpu[w][(direction, memory)] = pts
    groups = sorted(per_gpu)[:MAX_PANELS]
    with plt.rc_context(_STYLE):
        fig, axes = _grid(len(groups) + (1 if totals else 0))
        for ax, g in zip(axes, groups):
            for (direction, memory), pts in sorted(per_gpu[g].items()):
                base = direction.split("_")[0]
                color = _DIR_COLORS.get(base, "C7")
                xs, ys = [b for b, _ in pts], [v for _, v in pts]
                if len(pts) >= 2:
                    ax.plot(xs, ys, "-" if memory == "pinned" else "--", marker="o", ms=3, color=color,
                            label=f"{direction} {memory}")
                else:
                    pc = _POINT_COLORS.get(memory, "C5")
                    filled = base == "h2d"
                    ax.plot(xs, ys, ls="none", marker=_POINT_MARKERS.get(memory, "P"), ms=8,
                            markerfacecolor=pc if filled else "white", markeredgecolor=pc, markeredgewidth=1.5,
                            label=f"{direction} {memory} ({fmt_bytes_short(xs[0])} only)", zorder=4)
            link = derive.link_gbps(data, g)
            if link:
                ax.axhline(link, color="black", ls=":", lw=1.2, label=f"link {link:.1f} GB/s one way")
            _bytes_axis(ax)
            ax.set_ylim(bottom=0)
            ax.set_xlabel("transfer size (bytes)")
            ax.set_ylabel("bandwidth (GB/s)")
            ax.set_title(f"{derive.gpu_label(g)}: {derive.model_of(data, g)}")
            _legend(ax)
        if totals:
            ax = axes[len(groups)]
            totals.sort()
            ys = range(len(totals))
            ax.barh(list(ys), [t[2] for t in totals], color="C9", height=0.55)
            for y, t in zip(ys, totals):
                ax.text(t[2], y, f" {t[2]:.1f}", va="center", fontsize=8)
            ax.set_yticks(list(ys))
            ax.set_yticklabels([t[0] for t in totals], fontsize=7)
            ax.invert_yaxis()
            link = next((derive.link_gbps(data, g) for g in sorted(curves) if derive.link_gbps(data, g)), None)
            if link:
                for k, ls in ((1, ":"), (2, "--")):
                    ax.axvline(link * k, color="black", ls=ls, lw=1.0,
                               label=f"{k} link{'s' if k > 1 else ''}: {link * k:.0f} GB/s")
            ax.set_xlabel("total bandwidth (GB/s)")
            ax.set_title("totals: both directions at once, all GPUs at once")
            ax.set_xlim(left=0)
            _legend(ax)
        plot.png = _png(fig)
    return plot


def plot_p2p(data: ReportData) -> Plot:
    plot = Plot("p2p", "Peer-to-peer bandwidth",
                "GB/s from source GPU (row) to destination GPU (column), the largest transfer measured.")
    mats = derive.p2p_matrices(data)
    if not mats:
        plot.missing = _absent(data, "p2p", "this plot")
        return plot
    modes = sorted(mats, key=lambda m: (m != "one_way", m))
    n = 1 + max(max(s, d) for m in mats.values() for s, d in m)
    n = max(n, len(data.gpus))
    with plt.rc_context(_STYLE):
        fig, axes = _grid(len(modes), w=1.0 + 0.55 * max(n, 4) + 1.2, h=0.55 * max(n, 4) + 1.0)
        for ax, mode in zip(axes, modes):
            grid = np.full((n, n), np.nan)
            for (s, d), v in mats[mode].items():
                grid[s, d] = v
            ax.grid(False)
            im = ax.imshow(grid, cmap="viridis", vmin=0)
            vmax = np.nanmax(grid) if np.any(~np.isnan(grid)) else 1.0
            if n <= 10:
                for s in range(n):
                    for d in range(n):
                        if not np.isnan(grid[s, d]):
                            ax.text(d, s, f"{grid[s, d]:.0f}", ha="center", va="center", fontsize=7,
                                    color="white" if grid[s, d] < 0.6 * vmax else "black")
            ax.set_xticks(range(n))
            ax.set_yticks(range(n))
            ax.set_xlabel("destination GPU")
            ax.set_ylabel("source GPU")
            ax.set_title(mode.replace("_", "-"))
            fig.colorbar(im, ax=ax, label="GB/s", shrink=0.85)
        plot.png = _png(fig)
    return plot


def plot_allreduce(data: ReportData) -> Plot:
    plot = Plot("allreduce", "All-reduce bus bandwidth against message size",
                "NCCL all-reduce bus bandwidth per GPU count (best of in-place and out-of-place).")
    curves = derive.allreduce_curves(data)
    if not curves:
        plot.missing = _absent(data, "nccl", "all-reduce")
        return plot
    with plt.rc_context(_STYLE):
        fig, (ax,) = _grid(1, w=7.5, h=4.0)
        for i, (n, pts) in enumerate(curves.items()):
            pos = [(b, v) for b, v in pts if v > 0]  # log axis: a zero has no place on it
            if pos:
                ax.plot([b for b, _ in pos], [v for _, v in pos], "o-", ms=3, color=_color(i), label=f"{n} GPUs")
        _bytes_axis(ax)
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_xlabel("message size (bytes, log scale)")
        ax.set_ylabel("bus bandwidth (GB/s, log scale)")
        _legend(ax)
        plot.png = _png(fig)
    return plot


def _plot_dp(plot: Plot, series: list) -> Plot:
    """Data-parallel training against GPU count: throughput (measured points, predicted line, ideal line
    N x 1-GPU) and efficiency (N-GPU over N x 1-GPU throughput)."""
    plot.caption = ("Data-parallel ResNet-50 training against GPU count: throughput (points measured by the "
                    "train_dp family, lines predicted by nodebench advise, dashed the ideal N x 1-GPU) and "
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
                "estimated data-parallel ResNet-50 training efficiency (FP32 gradients, no overlap).")
    series = [s for s in derive.dp_series(data) if s.measured or s.predicted]
    if series:
        return _plot_dp(plot, series)
    sc = derive.scaling(data)
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
                "Speedup of FP16 (mixed precision) over FP32; the line at 1x is no gain.")
    rows, _, source = derive.fp16_speedups(data)
    rows = [r for r in rows if r.speedup_x is not None]
    if not rows:
        plot.missing = "not measured: no FP16/FP32 pair (gemm fp16 and fp32, conv, or analysis.fp16_vs_fp32)"
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


def plot_train(data: ReportData) -> Plot:
    plot = Plot("train", "ResNet-50 training step: throughput and memory against batch size",
                "Left: images/s of the measured training step per precision and layout (solid: the step as one "
                "CUDA graph; dashed: the same step issued call by call, as a loop without graphs runs it). Right: "
                "measured device "
                "memory in use (fraction of the GPU) with the memory limit (dashed) and the recommended batch "
                "(star); black crosses: batches that ran out of memory.")
    points = derive_train.train_points(data)
    if not points:
        plot.missing = _absent(data, "train", "a batch sweep")
        return plot
    recs = {(r.gpu, r.precision, r.layout): r for r in derive_train.train_recommendations(data)}
    groups = sorted({p.where for p in points})[:MAX_PANELS // 2]
    series = sorted({(p.precision, p.layout) for p in points}, key=lambda s: (_prec_key(s[0]), s[1]))
    colors = {s: _color(i) for i, s in enumerate(series)}
    with plt.rc_context(_STYLE):
        fig, axes = _grid(2 * len(groups))
        for gi, g in enumerate(groups):
            ax_t, ax_m = axes[2 * gi], axes[2 * gi + 1]
            limit = 0.9
            for s in series:
                ok = [p for p in points if p.where == g and (p.precision, p.layout) == s and p.status == "ok"]
                label = f"{s[0]} {s[1]}"
                if any(p.images_per_s for p in ok):
                    ax_t.plot(*zip(*[(p.batch, p.images_per_s) for p in ok if p.images_per_s]), "o-",
                              color=colors[s], label=label, ms=4)
                eager = [(p.batch, p.eager_images_per_s) for p in ok if p.eager_images_per_s]
                if eager:
                    ax_t.plot(*zip(*eager), "--", color=colors[s], label=f"{label}, call by call", lw=1.2, alpha=0.8)
                if any(p.memory_fraction is not None for p in ok):
                    ax_m.plot(*zip(*[(p.batch, p.memory_fraction) for p in ok if p.memory_fraction is not None]),
                              "o-", color=colors[s], label=label, ms=4)
                r = recs.get((g.first_gpu, s[0], s[1]))
                if r is not None:
                    limit = r.limit
                    hit = [p for p in ok if p.batch == r.batch]
                    if hit and hit[0].images_per_s:
                        ax_t.plot([r.batch], [hit[0].images_per_s], "*", ms=14, color=colors[s], mec="black",
                                  label=f"recommended {label}: {r.batch}")
                    if hit and hit[0].memory_fraction is not None:
                        ax_m.plot([r.batch], [hit[0].memory_fraction], "*", ms=14, color=colors[s], mec="black")
            ooms = [p for p in points if p.where == g and p.oom]
            for ax in (ax_t, ax_m):
                if ooms:
                    ax.scatter([p.batch for p in ooms], [0] * len(ooms), marker="X", s=90, color=_OOM_COLOR,
                               zorder=5, label="out of memory", clip_on=False)
                _pow2_axis(ax)
                ax.set_ylim(bottom=0)
                ax.set_xlabel("batch size")
            ax_m.axhline(limit, ls="--", color="gray", label=f"{limit:.0%} of memory")
            ax_m.set_ylim(0, 1.05)
            ax_t.set_ylabel("images/s")
            ax_m.set_ylabel("device memory used (fraction)")
            name = f"{derive.gpu_label(g)}: {derive.model_of(data, g)}"
            ax_t.set_title(f"{name}: throughput")
            ax_m.set_title(f"{name}: memory")
            _legend(ax_t)
            _legend(ax_m)
        plot.png = _png(fig)
    return plot


from .families import input as _input_family  # noqa: E402  (it uses the helpers above)

PLOTS = (plot_gemm, plot_conv, plot_train, plot_hostlink, plot_p2p, plot_allreduce, plot_scaling, plot_speedup,
         _input_family.plot_input)


def render_all(data: ReportData) -> list[Plot]:
    # odd values (huge, zero on a log axis) must not spill library warnings into the command's output
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return [fn(data) for fn in PLOTS]
