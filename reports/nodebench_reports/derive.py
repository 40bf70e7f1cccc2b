"""Numbers derived from the records, shared by the checklist and the plots so both agree."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import NamedTuple

from .load import ReportData, is_number, reason_kind

# ResNet-50 (torchvision): 25,557,032 parameters; FP32 gradients are all-reduced in data parallel.
RESNET50_PARAMS = 25_557_032
RESNET50_GRAD_BYTES = RESNET50_PARAMS * 4
# One 224x224 RGB input image as an FP32 tensor, as a typical data loader sends it to the GPU.
IMAGE_BYTES = 3 * 224 * 224 * 4
NETWORK_LAYER = "resnet50_total"
ALLREDUCE_NAMES = ("all_reduce", "allreduce", "all-reduce")


def num(value) -> float | None:
    return float(value) if is_number(value) else None


class Where(NamedTuple):
    """Where a record ran: its MPI rank (-1 for a run of one process) and its GPUs."""
    rank: int
    gpus: tuple

    @property
    def first_gpu(self) -> int | None:
        return self.gpus[0] if self.gpus else None

    @property
    def rank_or_none(self) -> int | None:
        return None if self.rank < 0 else self.rank


def where(rec: dict) -> Where:
    rank = rec.get("rank")
    return Where(rank if isinstance(rank, int) and not isinstance(rank, bool) else -1, tuple(rec["gpus"]))


def gpu_label(w) -> str:
    """"GPU 0", "GPU 0,1", "rank 3 GPU 0" or "host" for a Where or a list of GPU indices."""
    rank = w.rank if isinstance(w, Where) else -1
    gpus = list(w.gpus if isinstance(w, Where) else w)
    text = ("GPU " + ",".join(str(g) for g in gpus)) if gpus else "host"
    return f"rank {rank} {text}" if rank >= 0 else text


def model_of(data: ReportData, w: Where) -> str:
    return data.latest.gpu_model(w.gpus, w.rank_or_none)


def is_oom(rec: dict) -> bool:
    """Skipped for lack of memory: ``reason_kind`` "oom" (or "smaller_oom": a smaller batch of the
    series did not fit), else (older files) the reason's text."""
    return rec["status"] == "skipped" and reason_kind(rec) in ("oom", "smaller_oom")


# ----------------------------------------------------------------------------------------------
# conv


@dataclass
class ConvPoint:
    where: Where
    precision: str
    layout: str
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
        points.append(ConvPoint(where(rec), str(params.get("precision", "?")), str(params.get("layout", "")),
                                int(params["batch"]), rec["status"], is_oom(rec), num(m.get("train_images_per_s")),
                                num(m.get("fwd_images_per_s")), num(m.get("peak_memory_bytes")), rec.get("reason")))
    return sorted(points, key=lambda p: (p.where, p.precision, p.layout, p.batch))


@dataclass
class BatchRec:
    gpu: int | None
    precision: str
    batch: int | None           # None: no batch recommended (reason says why)
    train_images_per_s: float | None
    memory_fraction: float | None
    source: str
    layout: str = ""
    limit: float | None = None  # memory_fraction_limit the recommendation was made under
    reason: str = ""
    batches_measured: int = 0   # distinct batch sizes measured for this series (0: unknown)

    @property
    def one_batch(self) -> bool:
        """Only one batch size was measured: a throughput, not a recommendation."""
        return self.batches_measured == 1

    @property
    def label(self) -> str:
        who = f"GPU {self.gpu}" if self.gpu is not None else "node"
        return f"{who} {self.precision}" + (f" {self.layout}" if self.layout else "")


def batch_recommendations(data: ReportData) -> list[BatchRec]:
    """From analysis.batch_recommendation, else derived: the batch with the best training throughput."""
    recs = []
    raw = data.analysis.get("batch_recommendation")
    if isinstance(raw, list):
        for item in raw:
            if not isinstance(item, dict):
                continue
            gpu = item.get("gpu")
            # one batch measured: no batch recommended, the measured one shown as such (one_batch)
            batch = item.get("batch") if is_number(item.get("batch")) else item.get("measured_batch")
            recs.append(BatchRec(gpu if isinstance(gpu, int) and not isinstance(gpu, bool) else None,
                                 str(item.get("precision", "?")),
                                 int(batch) if is_number(batch) else None,
                                 num(item.get("train_images_per_s")), num(item.get("memory_fraction")),
                                 "analysis.batch_recommendation", str(item.get("layout") or ""),
                                 num(item.get("memory_fraction_limit")), str(item.get("reason") or "")))
        if recs:
            _count_batches(data, recs)
            return recs
    best: dict[tuple, ConvPoint] = {}
    for p in conv_network(data):
        if p.status != "ok" or p.train_ips is None:
            continue
        k = (p.where, p.precision, p.layout)
        if k not in best or p.train_ips > best[k].train_ips:
            best[k] = p
    for (w, precision, layout), p in sorted(best.items()):
        gpu = data.gpu(w.first_gpu) if w.first_gpu is not None else None
        frac = None
        if p.peak_memory_bytes is not None and gpu and gpu.get("memory_bytes"):
            frac = p.peak_memory_bytes / gpu["memory_bytes"]
        recs.append(BatchRec(w.first_gpu, precision, p.batch, p.train_ips, frac,
                             "derived: batch with the highest training images/s", layout))
    _count_batches(data, recs)
    return recs


def _count_batches(data: ReportData, recs: list[BatchRec]) -> None:
    """How many batch sizes were measured (ok) behind each recommendation's series."""
    seen: dict[tuple, set] = defaultdict(set)
    for p in conv_network(data):
        if p.status == "ok":
            seen[(p.where.first_gpu, p.precision, p.layout)].add(p.batch)
            seen[(None, p.precision, p.layout)].add(p.batch)
    for r in recs:
        batches = seen.get((r.gpu, r.precision, r.layout)) or seen.get((r.gpu, r.precision, ""))
        r.batches_measured = len(batches) if batches else 0


def training_step(data: ReportData) -> tuple[float, str] | None:
    """Seconds per training step at the recommended batch (fastest recommendation), with a label."""
    best = None
    for r in batch_recommendations(data):
        if r.train_images_per_s and r.batch:
            step = r.batch / r.train_images_per_s
            if best is None or r.train_images_per_s > best[2]:
                best = (step, f"ResNet-50 {r.precision} batch {r.batch}", r.train_images_per_s)
    return (best[0], best[1]) if best else None


def best_train_ips(data: ReportData, gpu: int) -> tuple[float, str] | None:
    """Best training images/s measured on this GPU, else on a GPU of the same model."""
    def model(index):
        g = data.gpu(index) if index is not None else None
        return g["name"] if g else None

    recs = [r for r in batch_recommendations(data) if r.train_images_per_s and r.batch]
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
    """{Where: {(direction, memory): [(bytes, gbps), ...]}}"""
    out: dict = defaultdict(lambda: defaultdict(list))
    for rec in data.family("hostlink"):
        p = rec["params"]
        gbps = num(rec["metrics"].get("gbps"))
        if gbps is None or not is_number(p.get("bytes")):
            continue
        engine = p.get("engine", "ce")
        key = (str(p.get("direction", "?")), str(p.get("memory", "?")) + ("" if engine in ("ce", None) else f"/{engine}"))
        out[where(rec)][key].append((float(p["bytes"]), gbps))
    for curves in out.values():
        for pts in curves.values():
            pts.sort()
    return out


# PCIe one-direction GB/s per lane after encoding (8b/10b for Gen1-2, 128b/130b from Gen3), as the
# binary computes it (harness/node/profiles.cpp, pcie_gbps).
PCIE_LANE_GBPS = {1: 0.25, 2: 0.5, 3: 0.984615, 4: 1.969231, 5: 3.938462, 6: 7.876923}


def max_link_gbps(gpu: dict | None) -> float | None:
    """One direction of the GPU's maximum PCIe link (gen_max x width_max). The environment's
    theoretical_gbps is that of the link as it was when captured: idle GPUs (a P40 at Gen1) train down."""
    pcie = (gpu or {}).get("pcie") or {}
    gen, width = pcie.get("gen_max"), pcie.get("width_max")
    if isinstance(gen, int) and not isinstance(gen, bool) and gen in PCIE_LANE_GBPS and is_number(width) and width > 0:
        return PCIE_LANE_GBPS[gen] * width
    return num(pcie.get("theoretical_gbps"))


def link_gbps(data: ReportData, w: Where) -> float | None:
    """The link's theoretical one-direction bandwidth: from the records, else the GPU's maximum link."""
    best = None
    for rec in data.family("hostlink"):
        if where(rec) == w:
            v = num(rec["metrics"].get("link_gbps"))
            if v:
                best = max(best or 0, v)
    if best:
        return best
    if w.first_gpu is not None and w.rank <= 0:
        return max_link_gbps(data.gpu(w.first_gpu))
    return None


def hostlink_at_largest(data: ReportData, w: Where, direction: str, memory: str) -> tuple[float, float, dict] | None:
    """(bytes, gbps, record) of the largest transfer of that direction and memory kind (copy engine)."""
    best = None
    for rec in data.family("hostlink"):
        p = rec["params"]
        if where(rec) != w or p.get("direction") != direction or p.get("memory") != memory:
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
        if p.get("test", "bandwidth") != "bandwidth":
            continue
        mode = str(p.get("mode", "one_way"))
        enabled = p.get("peer", "enabled") == "enabled"
        engine_ce = p.get("engine", "ce") == "ce"
        size = float(p["bytes"]) if is_number(p.get("bytes")) else 0.0
        k = (mode, p["src"], p["dst"])
        preference = (enabled, engine_ce, size)
        if k not in chosen or preference > chosen[k][0]:
            chosen[k] = (preference, gbps)
    out: dict[str, dict] = defaultdict(dict)
    for (mode, src, dst), (_, gbps) in chosen.items():
        out[mode][(src, dst)] = gbps
    for mode, cells in out.items():   # bidir is measured once per unordered pair: both cells show it
        if mode == "bidir":
            for (src, dst), gbps in list(cells.items()):
                cells.setdefault((dst, src), gbps)
    return dict(out)


# ----------------------------------------------------------------------------------------------
# nccl


def single_rank(rec: dict) -> bool:
    """A collective over one rank: nothing crossed a link, so it is no bandwidth figure (the flag
    single_rank; files written before the flag say one GPU in params.ngpus or metrics.gpu_count)."""
    p, m = rec.get("params") or {}, rec.get("metrics") or {}
    return "single_rank" in (rec.get("flags") or []) or p.get("ngpus") == 1 or m.get("gpu_count") == 1


def allreduce_curves(data: ReportData) -> dict[int, list[tuple[float, float]]]:
    """{ngpus: [(bytes, busbw_gbps), ...]} for all-reduce (float when measured, two GPUs or more); the best
    variant (in-place or not, CUDA graph or not) per size."""
    recs = [r for r in data.family("nccl") if str(r["params"].get("collective", "")).lower() in ALLREDUCE_NAMES]
    dtypes = {str(r["params"].get("dtype", "")) for r in recs}
    dtype = "float" if "float" in dtypes else (sorted(dtypes)[0] if dtypes else "")
    best: dict[tuple[int, float], float] = {}
    for rec in recs:
        p = rec["params"]
        if str(p.get("dtype", "")) != dtype:
            continue
        bw = num(rec["metrics"].get("busbw_gbps"))
        ngpus = p.get("ngpus") if isinstance(p.get("ngpus"), int) else len(rec["gpus"])
        # one rank crosses no link: never a point of the curves
        if bw is None or not is_number(p.get("bytes")) or not isinstance(ngpus, int) or ngpus < 2 or single_rank(rec):
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
# data-parallel training: measured (train_dp records) and predicted (nodebench advise)


@dataclass
class DpPoint:
    gpus: int
    images_per_s: float
    efficiency: float | None


@dataclass
class DpSeries:
    """One configuration (precision, layout, per-GPU batch, accumulation) against GPU count."""
    key: tuple[str, str, int, int]
    measured: list[DpPoint]
    predicted: list[DpPoint]
    one_gpu_ips: float | None      # the 1-GPU throughput the ideal line and efficiency rest on
    predicted_label: str = ""

    @property
    def label(self) -> str:
        p, l, b, k = self.key
        return f"ResNet-50 {p} {l} batch {b}/GPU" + (f", {k} accumulation steps" if k > 1 else "")


def _ok_number(v) -> float | None:
    return float(v) if is_number(v) else None


def dp_series(data: ReportData) -> list[DpSeries]:
    """Measured points from train_dp records and predicted points from the advise document, per configuration.
    Efficiency: the record's scaling_efficiency_ratio (N-GPU over N x 1-GPU throughput), else derived from the
    1-GPU point of the same configuration."""
    series: dict[tuple, DpSeries] = {}

    def get(key):
        return series.setdefault(key, DpSeries(key, [], [], None))

    for rec in data.family("train_dp"):
        p, m = rec["params"], rec["metrics"]
        n, b, ips = p.get("gpus"), p.get("batch"), _ok_number(m.get("images_per_s"))
        if not isinstance(n, int) or not isinstance(b, int) or ips is None:
            continue
        key = (str(p.get("precision", "")), str(p.get("layout", "")), b, int(p.get("accumulation", 1) or 1))
        eff = _ok_number(m.get("scaling_efficiency_ratio"))
        if eff is not None and eff > 1.5:   # given in percent
            eff /= 100.0
        get(key).measured.append(DpPoint(n, ips, eff))
    if data.advice:
        for r in data.advice.get("rows", []):
            key = (str(r.get("precision", "")), str(r.get("layout", "")), int(r["batch"]), int(r["accumulation"]))
            s = get(key)
            s.predicted.append(DpPoint(int(r["gpus"]), float(r["images_per_s"]), float(r["efficiency"])))
            s.predicted_label = str(data.advice.get("label", "predicted"))
    out = []
    for s in series.values():
        s.measured.sort(key=lambda q: q.gpus)
        s.predicted.sort(key=lambda q: q.gpus)
        ones = [q.images_per_s for q in s.measured if q.gpus == 1] or [q.images_per_s for q in s.predicted if q.gpus == 1]
        s.one_gpu_ips = ones[0] if ones else None
        for q in s.measured:
            if q.efficiency is None and s.one_gpu_ips:
                q.efficiency = q.images_per_s / (q.gpus * s.one_gpu_ips)
        out.append(s)
    return sorted(out, key=lambda s: s.key)


# ----------------------------------------------------------------------------------------------
# FP16 vs FP32


@dataclass
class SpeedupRow:
    who: str                   # "GPU 0", "rank 2 GPU 0", "node"
    source: str
    fp32: float | None
    fp16: float | None
    speedup_x: float | None


@dataclass
class SpeedupVerdict:
    who: str
    verdict: str               # pays / does_not_pay / not_measured
    reason: str
    recommendation: str = ""


MIXED_PRECISION_PAYS_X = 1.5


def fp16_speedups(data: ReportData) -> tuple[list[SpeedupRow], list[SpeedupVerdict], str]:
    """From analysis.fp16_vs_fp32, else derived from GEMM and network conv records."""
    raw = data.analysis.get("fp16_vs_fp32")
    rows: list[SpeedupRow] = []
    verdicts: list[SpeedupVerdict] = []
    if isinstance(raw, list):
        for entry in raw:
            if not isinstance(entry, dict):
                continue
            gpu = entry.get("gpu")
            who = f"GPU {gpu}" if isinstance(gpu, int) and not isinstance(gpu, bool) else "node"
            rows_raw = entry.get("rows")
            for row in rows_raw if isinstance(rows_raw, list) else []:
                if not isinstance(row, dict) or row.get("kind") == "int8" or "fp16" not in row:
                    continue   # INT8 rows compare another precision
                fp32, fp16, sp = num(row.get("fp32")), num(row.get("fp16")), num(row.get("speedup_x"))
                if sp is None and fp32 and fp16:
                    sp = fp16 / fp32
                source = str(row.get("source", "?"))
                if row.get("kind") and str(row["kind"]) not in source:
                    source = f"{row['kind']}: {source}"
                rows.append(SpeedupRow(who, source, fp32, fp16, sp))
            if entry.get("verdict") in ("pays", "does_not_pay", "not_measured"):
                verdicts.append(SpeedupVerdict(who, entry["verdict"], str(entry.get("reason") or ""),
                                               str(entry.get("recommendation") or "")))
        if rows or verdicts:
            return rows, verdicts, "analysis.fp16_vs_fp32"

    # derived: GEMM at the largest square size measured in both precisions, per GPU
    gemm: dict[Where, dict[str, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    for rec in data.family("gemm"):
        p = rec["params"]
        if p.get("shape", "square") != "square" or p.get("precision") not in ("fp32", "fp16"):
            continue
        v = num(rec["metrics"].get("tflops"))
        if v is None or not isinstance(p.get("m"), int):
            continue
        by_size = gemm[where(rec)][p["precision"]]
        by_size[p["m"]] = max(by_size.get(p["m"], 0.0), v)
    for w, prec in sorted(gemm.items()):
        common = set(prec.get("fp32", {})) & set(prec.get("fp16", {}))
        if common:
            size = max(common)
            a, b = prec["fp32"][size], prec["fp16"][size]
            rows.append(SpeedupRow(gpu_label(w), f"GEMM {size}^3 TFLOPS", a, b, b / a if a else None))
    conv: dict[Where, dict[str, float]] = defaultdict(dict)
    for p in conv_network(data):
        if p.status == "ok" and p.train_ips and p.precision in ("fp32", "fp16"):
            conv[p.where][p.precision] = max(conv[p.where].get(p.precision, 0.0), p.train_ips)
    for w, prec in sorted(conv.items()):
        if "fp32" in prec and "fp16" in prec:
            rows.append(SpeedupRow(gpu_label(w), "ResNet-50 training images/s (best batch)",
                                   prec["fp32"], prec["fp16"], prec["fp16"] / prec["fp32"]))
    by_who: dict = defaultdict(list)
    for r in rows:
        if r.speedup_x is not None:
            by_who[r.who].append(r)
    for who, rs in by_who.items():
        best = max(rs, key=lambda r: r.speedup_x)   # the best GEMM speedup, as the harness does
        pays = best.speedup_x >= MIXED_PRECISION_PAYS_X
        verdicts.append(SpeedupVerdict(who, "pays" if pays else "does_not_pay",
                                       f"{best.source}: FP16 is {best.speedup_x:.2f}x FP32 "
                                       f"({'>=' if pays else '<'} {MIXED_PRECISION_PAYS_X}x)"))
    return rows, verdicts, "derived from gemm/conv records"
