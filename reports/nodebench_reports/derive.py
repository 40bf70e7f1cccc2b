"""Numbers derived from the records, shared by the checklist and the plots so both agree."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

from .load import ReportData, is_number

# ResNet-50 (torchvision): 25,557,032 parameters; FP32 gradients are all-reduced in data parallel.
RESNET50_PARAMS = 25_557_032
RESNET50_GRAD_BYTES = RESNET50_PARAMS * 4
# One 224x224 RGB input image as an FP32 tensor, as a typical data loader sends it to the GPU.
IMAGE_BYTES = 3 * 224 * 224 * 4
NETWORK_LAYER = "resnet50_total"
ALLREDUCE_NAMES = ("all_reduce", "allreduce", "all-reduce")


def num(value) -> float | None:
    return float(value) if is_number(value) else None


def gpu_label(gpus) -> str:
    gpus = list(gpus)
    if not gpus:
        return "host"
    return "GPU " + ",".join(str(g) for g in gpus)


def is_oom(rec: dict) -> bool:
    return rec["status"] == "skipped" and str(rec.get("reason") or "").lower().startswith("out of memory")


# ----------------------------------------------------------------------------------------------
# conv


@dataclass
class ConvPoint:
    gpus: tuple
    precision: str
    batch: int
    status: str
    oom: bool
    train_ips: float | None
    fwd_ips: float | None
    peak_memory_bytes: float | None
    reason: str | None


def conv_network(data: ReportData) -> list[ConvPoint]:
    """Network-level (ResNet-50 total) conv points, ok and out-of-memory ones."""
    points = []
    for rec in data.family("conv", status=None):
        params = rec["params"]
        if params.get("layer") != NETWORK_LAYER or not is_number(params.get("batch")):
            continue
        if rec["status"] != "ok" and not is_oom(rec):
            continue
        m = rec["metrics"]
        points.append(ConvPoint(tuple(rec["gpus"]), str(params.get("precision", "?")), int(params["batch"]),
                                rec["status"], is_oom(rec), num(m.get("train_images_per_s")),
                                num(m.get("fwd_images_per_s")), num(m.get("peak_memory_bytes")), rec.get("reason")))
    return sorted(points, key=lambda p: (p.gpus, p.precision, p.batch))


@dataclass
class BatchRec:
    gpu: int | None
    precision: str
    batch: int
    train_images_per_s: float | None
    memory_fraction: float | None
    source: str


def batch_recommendations(data: ReportData) -> list[BatchRec]:
    """From analysis.batch_recommendation, else derived: the batch with the best training throughput."""
    recs = []
    raw = data.analysis.get("batch_recommendation")
    if isinstance(raw, list):
        for item in raw:
            if not isinstance(item, dict) or not is_number(item.get("batch")):
                continue
            recs.append(BatchRec(item.get("gpu") if isinstance(item.get("gpu"), int) else None,
                                 str(item.get("precision", "?")), int(item["batch"]),
                                 num(item.get("train_images_per_s")), num(item.get("memory_fraction")),
                                 "analysis.batch_recommendation"))
        if recs:
            return recs
    best: dict[tuple, ConvPoint] = {}
    for p in conv_network(data):
        if p.status != "ok" or p.train_ips is None:
            continue
        k = (p.gpus, p.precision)
        if k not in best or p.train_ips > best[k].train_ips:
            best[k] = p
    for (gpus, precision), p in sorted(best.items()):
        gpu = data.gpu(gpus[0]) if gpus else None
        frac = None
        if p.peak_memory_bytes is not None and gpu and gpu.get("memory_bytes"):
            frac = p.peak_memory_bytes / gpu["memory_bytes"]
        recs.append(BatchRec(gpus[0] if gpus else None, precision, p.batch, p.train_ips, frac,
                             "derived: batch with the highest training images/s"))
    return recs


def training_step(data: ReportData) -> tuple[float, str] | None:
    """Seconds per training step at the recommended batch (fastest recommendation), with a label."""
    best = None
    for r in batch_recommendations(data):
        if r.train_images_per_s:
            step = r.batch / r.train_images_per_s
            if best is None or r.train_images_per_s > best[2]:
                best = (step, f"ResNet-50 {r.precision} batch {r.batch}", r.train_images_per_s)
    return (best[0], best[1]) if best else None


def best_train_ips(data: ReportData, gpu: int) -> tuple[float, str] | None:
    """Best training images/s measured on this GPU, else on a GPU of the same model."""
    def model(index):
        g = data.gpu(index) if index is not None else None
        return g["name"] if g else None

    recs = [r for r in batch_recommendations(data) if r.train_images_per_s]
    mine = [r for r in recs if r.gpu == gpu or r.gpu is None]
    same = [r for r in recs if model(r.gpu) is not None and model(r.gpu) == model(gpu)]
    pick = mine or same
    if not pick:
        return None
    best = max(pick, key=lambda r: r.train_images_per_s)
    where = "" if best.gpu in (gpu, None) else f", measured on GPU {best.gpu}"
    return best.train_images_per_s, f"{best.precision} batch {best.batch}{where}"


# ----------------------------------------------------------------------------------------------
# hostlink


def hostlink_curves(data: ReportData) -> dict[tuple, dict[tuple, list[tuple[float, float]]]]:
    """{gpus: {(direction, memory): [(bytes, gbps), ...]}}"""
    out: dict = defaultdict(lambda: defaultdict(list))
    for rec in data.family("hostlink"):
        p = rec["params"]
        gbps = num(rec["metrics"].get("gbps"))
        if gbps is None or not is_number(p.get("bytes")):
            continue
        engine = p.get("engine", "ce")
        key = (str(p.get("direction", "?")), str(p.get("memory", "?")) + ("" if engine in ("ce", None) else f"/{engine}"))
        out[tuple(rec["gpus"])][key].append((float(p["bytes"]), gbps))
    for curves in out.values():
        for pts in curves.values():
            pts.sort()
    return out


def link_gbps(data: ReportData, gpus: tuple) -> float | None:
    """The link's theoretical one-direction bandwidth: from the records, else the environment."""
    best = None
    for rec in data.family("hostlink"):
        if tuple(rec["gpus"]) == gpus:
            v = num(rec["metrics"].get("link_gbps"))
            if v:
                best = max(best or 0, v)
    if best:
        return best
    if gpus:
        gpu = data.gpu(gpus[0])
        pcie = (gpu or {}).get("pcie") or {}
        return num(pcie.get("theoretical_gbps"))
    return None


def hostlink_at_largest(data: ReportData, gpus: tuple, direction: str, memory: str) -> tuple[float, float, dict] | None:
    """(bytes, gbps, record) of the largest transfer of that direction and memory kind (copy engine)."""
    best = None
    for rec in data.family("hostlink"):
        p = rec["params"]
        if tuple(rec["gpus"]) != gpus or p.get("direction") != direction or p.get("memory") != memory:
            continue
        if p.get("engine", "ce") not in ("ce", None):
            continue
        gbps = num(rec["metrics"].get("gbps"))
        if gbps is None or not is_number(p.get("bytes")):
            continue
        if best is None or p["bytes"] > best[0]:
            best = (float(p["bytes"]), gbps, rec)
    return best


# ----------------------------------------------------------------------------------------------
# p2p


def p2p_matrices(data: ReportData) -> dict[str, dict[tuple[int, int], float]]:
    """{mode: {(src, dst): gbps}}, peer access enabled preferred, the largest transfer per pair."""
    chosen: dict[tuple, tuple] = {}
    for rec in data.family("p2p"):
        p = rec["params"]
        gbps = num(rec["metrics"].get("gbps"))
        if gbps is None or not isinstance(p.get("src"), int) or not isinstance(p.get("dst"), int):
            continue
        mode = str(p.get("mode", "one_way"))
        enabled = p.get("peer", "enabled") == "enabled"
        size = float(p["bytes"]) if is_number(p.get("bytes")) else 0.0
        k = (mode, p["src"], p["dst"])
        rank = (enabled, size)
        if k not in chosen or rank > chosen[k][0]:
            chosen[k] = (rank, gbps)
    out: dict[str, dict] = defaultdict(dict)
    for (mode, src, dst), (_, gbps) in chosen.items():
        out[mode][(src, dst)] = gbps
    return dict(out)


# ----------------------------------------------------------------------------------------------
# nccl


def allreduce_curves(data: ReportData) -> dict[int, list[tuple[float, float]]]:
    """{ngpus: [(bytes, busbw_gbps), ...]} for all-reduce; the best of in-place/out-of-place per size."""
    best: dict[tuple[int, float], float] = {}
    for rec in data.family("nccl"):
        p = rec["params"]
        if str(p.get("collective", "")).lower() not in ALLREDUCE_NAMES:
            continue
        bw = num(rec["metrics"].get("busbw_gbps"))
        ngpus = p.get("ngpus") if isinstance(p.get("ngpus"), int) else len(rec["gpus"])
        if bw is None or not is_number(p.get("bytes")) or not ngpus:
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
    step = training_step(data)
    rows = []
    for n, pts in curves.items():
        bw = busbw_at(pts, common)
        grad_bw = busbw_at(pts, RESNET50_GRAD_BYTES)
        ar = RESNET50_GRAD_BYTES * 2 * (n - 1) / n / (grad_bw * 1e9) if n > 1 and grad_bw > 0 else 0.0
        train_eff = step[0] / (step[0] + ar) if step else None
        rows.append(ScalingRow(n, bw, bw / base_bw if base_bw > 0 else 0.0, ar, train_eff))
    return Scaling(rows, common, step[0] if step else None, step[1] if step else None)


# ----------------------------------------------------------------------------------------------
# FP16 vs FP32


@dataclass
class SpeedupRow:
    gpu: int | None
    source: str
    fp32: float | None
    fp16: float | None
    speedup_x: float | None


@dataclass
class SpeedupVerdict:
    gpu: int | None
    verdict: str       # pays / does_not_pay
    reason: str


def fp16_speedups(data: ReportData) -> tuple[list[SpeedupRow], list[SpeedupVerdict], str]:
    """From analysis.fp16_vs_fp32, else derived from GEMM and network conv records."""
    raw = data.analysis.get("fp16_vs_fp32")
    rows: list[SpeedupRow] = []
    verdicts: list[SpeedupVerdict] = []
    if isinstance(raw, list):
        for entry in raw:
            if not isinstance(entry, dict):
                continue
            gpu = entry.get("gpu") if isinstance(entry.get("gpu"), int) else None
            for row in entry.get("rows") or []:
                if not isinstance(row, dict):
                    continue
                fp32, fp16, sp = num(row.get("fp32")), num(row.get("fp16")), num(row.get("speedup_x"))
                if sp is None and fp32 and fp16:
                    sp = fp16 / fp32
                rows.append(SpeedupRow(gpu, str(row.get("source", "?")), fp32, fp16, sp))
            if entry.get("verdict") in ("pays", "does_not_pay"):
                verdicts.append(SpeedupVerdict(gpu, entry["verdict"], str(entry.get("reason") or "")))
        if rows or verdicts:
            return rows, verdicts, "analysis.fp16_vs_fp32"

    # derived: GEMM at the largest square size measured in both precisions, per GPU
    gemm: dict[tuple, dict[str, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    for rec in data.family("gemm"):
        p = rec["params"]
        if p.get("shape", "square") != "square" or p.get("precision") not in ("fp32", "fp16"):
            continue
        v = num(rec["metrics"].get("tflops"))
        if v is None or not isinstance(p.get("m"), int):
            continue
        by_size = gemm[tuple(rec["gpus"])][p["precision"]]
        by_size[p["m"]] = max(by_size.get(p["m"], 0.0), v)
    for gpus, prec in sorted(gemm.items()):
        common = set(prec.get("fp32", {})) & set(prec.get("fp16", {}))
        if common:
            size = max(common)
            a, b = prec["fp32"][size], prec["fp16"][size]
            rows.append(SpeedupRow(gpus[0] if gpus else None, f"GEMM {size}^3 TFLOPS", a, b, b / a if a else None))
    conv: dict[tuple, dict[str, float]] = defaultdict(dict)
    for p in conv_network(data):
        if p.status == "ok" and p.train_ips and p.precision in ("fp32", "fp16"):
            conv[p.gpus][p.precision] = max(conv[p.gpus].get(p.precision, 0.0), p.train_ips)
    for gpus, prec in sorted(conv.items()):
        if "fp32" in prec and "fp16" in prec:
            rows.append(SpeedupRow(gpus[0] if gpus else None, "ResNet-50 training images/s (best batch)",
                                   prec["fp32"], prec["fp16"], prec["fp16"] / prec["fp32"]))
    by_gpu: dict = defaultdict(list)
    for r in rows:
        if r.speedup_x is not None:
            by_gpu[r.gpu].append(r)
    for gpu, rs in sorted(by_gpu.items(), key=lambda kv: (kv[0] is None, kv[0] or 0)):
        prefer = [r for r in rs if r.source.startswith("ResNet")] or rs
        sp = min(r.speedup_x for r in prefer)
        pays = sp >= 1.3
        verdicts.append(SpeedupVerdict(gpu, "pays" if pays else "does_not_pay",
                                       f"{prefer[0].source}: FP16 is {sp:.2f}x FP32 "
                                       f"({'>=' if pays else '<'} 1.3x)"))
    return rows, verdicts, "derived from gemm/conv records"
