"""The nccl family in the report: the all-reduce bus bandwidth figure against message size per GPU
count, and the scaling estimate the strategy item and the scaling figure fall back on without
data-parallel training results: the all-reduce of ResNet-50's FP32 gradients against one GPU's training
step (from the family that measured it), no overlap assumed."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

from matplotlib.ticker import FuncFormatter

from .. import families, plots
from ..conventions import is_number
from ..load import ReportData
from ..records import num
from ..metrics import LOWER, declare, metric
from .resnet50 import RESNET50_GRAD_BYTES

FAMILY = "nccl"
PRIMARY = ("busbw_gbps", "algbw_gbps")
METRICS = declare(metric("busbw_gbps", "bus bandwidth (GB/s)"), metric("algbw_gbps", "algorithm bandwidth (GB/s)"),
                  "bus_factor_x", "data_bytes", "gpu_count", "scaling_efficiency_pct", metric("wrong_count", better=LOWER))
FEEDS = ("nccl_scaling",)
PLOT_ORDER = 60
ALLREDUCE_NAMES = ("all_reduce", "allreduce", "all-reduce")


def group_key(rec: dict) -> tuple:
    """(collective, dtype, GPU count): one curve against message size."""
    p = rec.get("params") or {}
    ngpus = p.get("ngpus") if isinstance(p.get("ngpus"), int) else len(rec.get("gpus") or [])
    return str(p.get("collective", "")).lower(), str(p.get("dtype", "")), ngpus


def single_rank(rec: dict) -> bool:
    """A collective over one rank: nothing crossed a link, so it is no bandwidth figure (the flag
    single_rank; files written before the flag say one GPU in params.ngpus or metrics.gpu_count)."""
    p, m = rec.get("params") or {}, rec.get("metrics") or {}
    return "single_rank" in (rec.get("flags") or []) or p.get("ngpus") == 1 or m.get("gpu_count") == 1


def allreduce_curves(data: ReportData) -> dict[int, list[tuple[float, float]]]:
    """{ngpus: [(bytes, busbw_gbps), ...]} for all-reduce (float when measured, two GPUs or more); the best
    variant (in-place or not, CUDA graph or not) per size."""
    recs = [r for r in data.family(FAMILY) if group_key(r)[0] in ALLREDUCE_NAMES]
    dtypes = {group_key(r)[1] for r in recs}
    dtype = "float" if "float" in dtypes else (sorted(dtypes)[0] if dtypes else "")
    best: dict[tuple[int, float], float] = {}
    for rec in recs:
        _, rec_dtype, ngpus = group_key(rec)
        if rec_dtype != dtype:
            continue
        p = rec["params"]
        bw = num(rec["metrics"].get("busbw_gbps"))
        # one rank crosses no link: never a point of the curves
        if bw is None or not is_number(p.get("bytes")) or ngpus < 2 or single_rank(rec):
            continue
        k = (ngpus, float(p["bytes"]))
        best[k] = max(best.get(k, 0.0), bw)
    out: dict[int, list] = defaultdict(list)
    for (n, size), bw in best.items():
        out[n].append((size, bw))
    return {n: sorted(pts) for n, pts in sorted(out.items())}


def busbw_at(points: list[tuple[float, float]], size: float) -> float:
    """Bus bandwidth at a message size, interpolated in log(size); clamped at the ends."""
    if size <= points[0][0]:
        return points[0][1]
    if size >= points[-1][0]:
        return points[-1][1]
    for (s0, b0), (s1, b1) in zip(points, points[1:]):
        if s0 <= size <= s1:
            t = (math.log(size) - math.log(s0)) / (math.log(s1) - math.log(s0))
            return b0 + t * (b1 - b0)
    return points[-1][1]


@dataclass
class ScalingRow:
    ngpus: int
    busbw_gbps: float            # at the largest size measured for every GPU count
    busbw_efficiency: float      # busbw relative to the smallest GPU count
    allreduce_s: float           # ResNet-50 FP32 gradient all-reduce time, estimated
    train_efficiency: float | None  # step / (step + all-reduce), no overlap assumed


@dataclass
class Scaling:
    rows: list[ScalingRow]
    common_bytes: float
    step_s: float | None
    step_label: str | None


def scaling(data: ReportData) -> Scaling | None:
    curves = allreduce_curves(data)
    if not curves:
        return None
    common = min(pts[-1][0] for pts in curves.values())
    base_n = min(curves)
    base_bw = busbw_at(curves[base_n], common)
    step = families.ask("training_step", data)   # one GPU's training step, from the family that measured it
    rows = []
    for n, pts in curves.items():
        bw = busbw_at(pts, common)
        grad_bw = busbw_at(pts, RESNET50_GRAD_BYTES)
        ar = RESNET50_GRAD_BYTES * 2 * (n - 1) / n / (grad_bw * 1e9) if n > 1 and grad_bw > 0 else 0.0
        train_eff = step[0] / (step[0] + ar) if step else None
        rows.append(ScalingRow(n, bw, bw / base_bw if base_bw > 0 else 0.0, ar, train_eff))
    return Scaling(rows, common, step[0] if step else None, step[1] if step else None)


def plot_allreduce(data: ReportData) -> plots.Plot:
    plot = plots.Plot("allreduce", "All-reduce bus bandwidth against message size",
                      "NCCL all-reduce bus bandwidth per GPU count (best of in-place and out-of-place).",
                      order=PLOT_ORDER)
    curves = allreduce_curves(data)
    if not curves:
        plot.missing = plots._absent(data, FAMILY, "all-reduce")
        return plot
    with plots.plt.rc_context(plots._STYLE):
        fig, (ax,) = plots._grid(1, w=7.5, h=4.0)
        for i, (n, pts) in enumerate(curves.items()):
            pos = [(b, v) for b, v in pts if v > 0]  # log axis: a zero has no place on it
            if pos:
                ax.plot([b for b, _ in pos], [v for _, v in pos], "o-", ms=3, color=plots._color(i), label=f"{n} GPUs")
        plots._bytes_axis(ax)
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_xlabel("message size (bytes, log scale)")
        ax.set_ylabel("bus bandwidth (GB/s, log scale)")
        plots._legend(ax)
        plot.png = plots._png(fig)
    return plot


def figures(data: ReportData) -> list:
    return [plot_allreduce(data)]
