"""Predicted data-parallel scaling of the ResNet-50 training step, for the report's first screen:
the model of ``nodebench advise`` (docs/ADVISE.md, harness/advise/advise.{hpp,cpp}), computed again
from the result file's records so that the page needs no second command. Where a ``nodebench advise
--json`` document is given (``html --advise``), its rows are used instead. A test checks this module
against advise's own output on the P40 fixture (reports/tests/test_summary.py).

The model, for N GPUs, per-GPU batch b (no accumulation):
    step = max(compute(b) + exposed all-reduce, pinned host-to-device copy of b images)
    images/s = N b / step; efficiency = images/s / (N b / compute(b))
and beside it, what the host can decode (the input family's measured curve: one worker per core,
one core per GPU to drive it), which the model leaves out."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..conventions import is_number

RESNET50_PARAMS = 25557032.0     # torchvision's resnet50, as advise (kResnet50Params)
BACKWARD_SHARE = 2.0 / 3.0       # advise's kBackwardShare
IMAGE_BYTES_U8 = 224.0 * 224.0 * 3.0
COMM_BOUND_SHARE = 0.10          # advise's kCommBoundShare
BUCKET_BYTES = 25.0 * 1048576.0  # DDP's default bucket, advise's --bucket-mib default
NETWORK_LATENCY_S = 5e-6         # advise's kDefaultNetworkLatencyS
GPU_COUNTS = (1, 2, 4, 8)
NODE_COUNTS = (2, 4, 8)

COMPUTE, ALLREDUCE, PCIE, DECODE = "compute", "all-reduce", "PCIe", "host decode"


@dataclass
class Inputs:
    curves: dict[int, list[tuple[float, float]]] = field(default_factory=dict)  # GPUs -> [(bytes, busbw GB/s)]
    curve_dtype: str = ""
    pinned_gbps: float | None = None
    pageable_gbps: float | None = None
    steps: dict[tuple[str, str, int], tuple[float, str]] = field(default_factory=dict)  # -> (seconds, record id)
    decode: dict[str, tuple[float, int]] = field(default_factory=dict)  # series -> (images/s per core, host CPUs)


def _num(d, k):
    v = (d or {}).get(k)
    return float(v) if is_number(v) else None


def gather(records: list[dict], analysis: dict | None = None, grad_dtype: str = "float") -> Inputs:
    """What advise reads (advise_inputs.cpp): the all-reduce curves (ok records over 2 or more GPUs,
    several at one size averaged; the gradient's dtype, else the dtype with most points), the host
    link (the largest pinned / pageable copy-engine transfer per GPU, the slowest GPU), the one-GPU
    train steps (the slowest per precision, layout and batch), and the input family's decode curve."""
    cells: dict[str, dict[int, dict[float, list[float]]]] = {}
    host: dict[tuple[str, int], tuple[float, float]] = {}
    inp = Inputs()
    for r in records:
        if not isinstance(r, dict) or r.get("status") != "ok":
            continue
        rid, p, m = str(r.get("id", "")), r.get("params") or {}, r.get("metrics") or {}
        gpus = r.get("gpus") or [0]
        if rid.startswith("nccl/") and p.get("collective") == "all_reduce":
            bw = _num(m, "busbw_gbps")
            size = _num(m, "data_bytes") or _num(p, "bytes")
            n = _num(m, "gpu_count") or _num(p, "ngpus")
            if bw and size and n and n >= 2 and bw > 0 and "single_rank" not in (r.get("flags") or []):
                cells.setdefault(str(p.get("dtype", "")), {}).setdefault(int(n), {}).setdefault(size, []).append(bw)
        elif rid.startswith("hostlink/h2d/") and p.get("direction") == "h2d" and p.get("engine", "ce") in ("", "ce"):
            mem, gbps, size = p.get("memory"), _num(m, "gbps"), _num(p, "bytes")
            if mem in ("pinned", "pageable") and gbps and size:
                key = (mem, int(gpus[0]))
                old = host.get(key)
                if old is None or size > old[0] or (size == old[0] and gbps > old[1]):
                    host[key] = (size, gbps)
        elif rid.startswith("train/resnet50/"):
            ms, b = _num(m, "step_time_ms"), _num(p, "batch")
            if ms and b and ms > 0:
                k = (str(p.get("precision", "")), str(p.get("layout", "")), int(b))
                if k not in inp.steps or ms * 1e-3 > inp.steps[k][0]:
                    inp.steps[k] = (ms * 1e-3, rid)
    dtype = grad_dtype if grad_dtype in cells else max(cells, key=lambda d: sum(len(s) for s in cells[d].values()),
                                                       default="")
    if dtype:
        inp.curve_dtype = dtype
        inp.curves = {n: sorted((b, sum(v) / len(v)) for b, v in sizes.items()) for n, sizes in cells[dtype].items()}
    for (mem, _), (_, gbps) in host.items():
        attr = "pinned_gbps" if mem == "pinned" else "pageable_gbps"
        if getattr(inp, attr) is None or gbps < getattr(inp, attr):
            setattr(inp, attr, gbps)
    for c in ((analysis or {}).get("input_pipeline") or {}).get("curves") or []:
        pts = [q for q in c.get("points") or [] if is_number(q.get("per_core_images_per_s"))]
        if pts and is_number(c.get("host_cpus")):
            top = max(pts, key=lambda q: q.get("cores") or 0)   # beyond the curve: its largest point's rate
            inp.decode[str(c.get("series"))] = (float(top["per_core_images_per_s"]), int(c["host_cpus"]))
    return inp


# ----------------------------------------------------------------------------------------------
# advise.cpp, line for line


def interpolate_busbw(points: list[tuple[float, float]], size: float) -> float:
    pts = sorted((b, bw) for b, bw in points if b > 0 and bw > 0)
    if not pts:
        raise ValueError("no all-reduce point with a bus bandwidth")
    if size <= pts[0][0]:
        return pts[0][1]
    if size >= pts[-1][0]:
        return pts[-1][1]
    for (lo_b, lo_bw), (hi_b, hi_bw) in zip(pts, pts[1:]):
        if size <= hi_b:
            if hi_b == lo_b:
                return hi_bw
            t = (math.log2(size) - math.log2(lo_b)) / (math.log2(hi_b) - math.log2(lo_b))
            return lo_bw + t * (hi_bw - lo_bw)
    return pts[-1][1]


def ring_allreduce_s(size: float, n: int, bw_gbps: float, latency_s: float) -> float:
    if n <= 1 or size <= 0:
        return 0.0
    return 2.0 * (n - 1) / n * size / (bw_gbps * 1e9) + 2.0 * (n - 1) * latency_s


def hierarchical_allreduce_s(size, per_node, nodes, intra_busbw, inter_gbps, inter_latency_s) -> float:
    intra = (per_node - 1) / per_node * size / (intra_busbw * 1e9) if per_node > 1 else 0.0
    return 2 * intra + ring_allreduce_s(size, nodes, inter_gbps, inter_latency_s)


def curve_for(curves: dict, n: int):
    usable = {k: v for k, v in curves.items() if k >= 2 and any(bw > 0 for _, bw in v)}
    if n in usable:
        return n, usable[n]
    if not usable:
        return None, None
    top = max(usable)
    return top, usable[top]


def allreduce_s(inp: Inputs, size: float, per_node: int, nodes: int = 1, inter_gbps: float | None = None) -> float:
    total = per_node * max(1, nodes)
    if total <= 1 or size <= 0:
        return 0.0
    _, pts = curve_for(inp.curves, per_node)
    intra = interpolate_busbw(pts, size) if pts else 0.0
    if pts is None and (per_node > 1 or inter_gbps is None):
        raise ValueError("no measured all-reduce over two or more GPUs (nccl family)")
    if nodes <= 1:
        return ring_allreduce_s(size, per_node, intra, 0.0)
    if inter_gbps is None:
        raise ValueError("several nodes need the network's bandwidth (--inter-node-gbps)")
    flat = ring_allreduce_s(size, total, inter_gbps, NETWORK_LATENCY_S)
    hier = hierarchical_allreduce_s(size, per_node, nodes, intra, inter_gbps, NETWORK_LATENCY_S)
    return min(hier, flat)


def exposed_s(grad_bytes: float, bucket: float, backward_s: float, bucket_time) -> float:
    full = math.floor(grad_bytes / bucket)
    rest = grad_bytes - full * bucket
    nfull = int(full)
    if rest <= 0:
        rest, nfull = bucket, nfull - 1
    buckets = nfull + 1
    before_last = (bucket_time(bucket) if nfull > 0 else 0.0) * nfull
    window = backward_s * (buckets - 1) / buckets
    return max(0.0, before_last - window) + bucket_time(rest)


@dataclass
class Prediction:
    gpus: int              # in total
    per_node: int
    nodes: int
    images_per_s: float | None = None
    efficiency: float | None = None
    step_ms: float | None = None
    exposed_ms: float = 0.0
    input_pinned_ms: float = 0.0
    decode_images_per_s: float | None = None   # what the host can decode per node (None: not measured)
    limit: str = ""                            # compute, all-reduce, PCIe, host decode
    why: str = ""
    missing: str = ""                          # why nothing could be predicted


def predict(inp: Inputs, precision: str, layout: str, batch: int, per_node: int, nodes: int = 1,
            inter_gbps: float | None = None) -> Prediction:
    out = Prediction(per_node * nodes, per_node, nodes)
    step = inp.steps.get((precision, layout, batch))
    if step is None:
        out.missing = f"no train record for {precision} {layout} batch {batch}"
        return out
    compute = step[0]
    total = per_node * nodes
    grad = RESNET50_PARAMS * 4.0
    try:
        exposed = exposed_s(grad, BUCKET_BYTES, BACKWARD_SHARE * compute,
                            lambda b: allreduce_s(inp, b, per_node, nodes, inter_gbps)) if total > 1 else 0.0
    except ValueError as exc:
        out.missing = str(exc)
        return out
    pinned = batch * IMAGE_BYTES_U8 / (inp.pinned_gbps * 1e9) if inp.pinned_gbps else 0.0
    device = compute + exposed
    step_s = max(device, pinned)
    out.images_per_s = total * batch / step_s
    out.efficiency = out.images_per_s / (total * batch / compute)
    out.step_ms, out.exposed_ms, out.input_pinned_ms = step_s * 1e3, exposed * 1e3, pinned * 1e3
    if pinned > device:
        out.limit = PCIE
        out.why = f"copying {batch} images per GPU takes {pinned * 1e3:.2f} ms from pinned memory against {device * 1e3:.2f} ms"
    elif exposed > 0 and exposed >= COMM_BOUND_SHARE * step_s:
        out.limit = ALLREDUCE
        out.why = f"exposed all-reduce {exposed * 1e3:.2f} ms is {100 * exposed / step_s:.1f}% of the {step_s * 1e3:.2f} ms step"
    else:
        out.limit = COMPUTE
        out.why = f"compute {compute * 1e3:.2f} ms of the {step_s * 1e3:.2f} ms step (exposed all-reduce {exposed * 1e3:.2f} ms)"
    series = f"{layout}/{'fp16' if precision == 'fp16' else 'fp32'}"
    dec = inp.decode.get(series)
    if dec:
        per_core, cpus = dec
        out.decode_images_per_s = max(0, cpus - per_node) * per_core
        per_node_rate = out.images_per_s / nodes
        if per_node_rate > out.decode_images_per_s:
            out.limit = DECODE
            out.why = (f"{per_node_rate:.0f} images/s per node to decode, the host decodes {out.decode_images_per_s:.0f} "
                       f"({cpus - per_node} of {cpus} CPUs at {per_core:.0f} images/s per core, one per GPU to drive it)")
    return out


def from_advice(advice: dict, precision: str, layout: str, batch: int) -> list[Prediction]:
    """The rows of a ``nodebench advise --json`` document for one step (accumulation 1)."""
    names = {"compute": COMPUTE, "gradient all-reduce": ALLREDUCE, "host input pipeline": PCIE}
    out = []
    for r in advice.get("rows") or []:
        if (r.get("precision"), r.get("layout"), r.get("batch"), r.get("accumulation")) != (precision, layout, batch, 1):
            continue
        nodes = int(r.get("nodes") or 1)
        out.append(Prediction(int(r["gpus"]), int(r.get("gpus_per_node") or r["gpus"]), nodes, float(r["images_per_s"]),
                              float(r["efficiency"]), _num(r, "step_ms"), _num(r, "exposed_comm_ms") or 0.0,
                              _num(r, "input_pinned_ms") or 0.0, None, names.get(r.get("bottleneck"), str(r.get("bottleneck", ""))),
                              str(r.get("why", ""))))
    return sorted(out, key=lambda p: (p.nodes, p.gpus))
