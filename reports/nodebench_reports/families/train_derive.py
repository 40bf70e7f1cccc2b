"""Numbers derived from the train family's records (the ResNet-50 training step) and its
``train_recommendation`` analysis, shared by the train family's checklist items and figures and by the
input family (what a training step consumes). No family module itself (no ``FAMILY``)."""

from __future__ import annotations

from dataclasses import dataclass

from ..load import ReportData, is_number
from ..records import Where, is_oom, num, where
from .resnet50 import BatchPoint

KINDS = ("conv", "bn", "elementwise", "pool", "fc", "loss", "update")


@dataclass
class TrainPoint(BatchPoint):
    images_per_s: float | None
    step_time_ms: float | None
    peak_memory_bytes: float | None
    device_used_bytes: float | None
    memory_fraction: float | None
    elementwise_share: float | None
    note: str = ""
    eager_images_per_s: float | None = None  # the step issued call by call (no CUDA graph)


def train_points(data: ReportData) -> list[TrainPoint]:
    out = []
    for rec in data.records:
        if rec.get("family") != "train":
            continue
        p, m = rec.get("params") or {}, rec.get("metrics") or {}
        if not is_number(p.get("batch")):
            continue
        note = (rec.get("details") or {}).get("note") or ""
        out.append(TrainPoint(where(rec), str(p.get("precision", "")), str(p.get("layout", "")), int(p["batch"]),
                              rec["status"], is_oom(rec), num(m.get("images_per_s")), num(m.get("step_time_ms")),
                              num(m.get("peak_memory_bytes")), num(m.get("device_used_bytes")),
                              num(m.get("memory_fraction_x")), num(m.get("elementwise_share")), str(note),
                              num(m.get("eager_images_per_s"))))
    return sorted(out, key=lambda t: (t.where, t.precision, t.layout, t.batch))


@dataclass
class TrainRec:
    gpu: int | None
    precision: str
    layout: str
    batch: int | None
    reason: str
    memory_batch: int | None
    memory_fraction: float | None        # at the recommended batch
    memory_batch_fraction: float | None  # at the largest batch within the limit
    limit: float
    accumulation: str
    note: str = ""

    @property
    def label(self) -> str:
        who = f"GPU {self.gpu}" if self.gpu is not None else "node"
        return f"{who} {self.precision} {self.layout}".rstrip()


@dataclass
class PlateauStop:
    batch: int                    # the first batch the sweep did not run
    plan_fraction: float | None   # the step's memory plan at that batch, of the GPU's memory


def plateau_stops(data: ReportData) -> dict[tuple, PlateauStop]:
    """The sweeps that stopped at their throughput plateau (records skipped with reason_kind
    "plateau"), by (GPU, precision, layout): where they stopped and what the step's memory plan
    says for that batch (details.memory_plan_fraction)."""
    out: dict[tuple, PlateauStop] = {}
    for rec in data.records:
        if rec.get("family") != "train" or rec.get("status") != "skipped" or rec.get("reason_kind") != "plateau":
            continue
        p = rec.get("params") or {}
        if not is_number(p.get("batch")):
            continue
        key = (where(rec).first_gpu, str(p.get("precision", "")), str(p.get("layout", "")))
        b = int(p["batch"])
        if key not in out or b < out[key].batch:
            out[key] = PlateauStop(b, num((rec.get("details") or {}).get("memory_plan_fraction")))
    return out


def train_recommendations(data: ReportData) -> list[TrainRec]:
    out = []
    for e in data.analysis.get("train_recommendation") or []:
        if not isinstance(e, dict):
            continue
        ib = lambda v: int(v) if is_number(v) else None  # noqa: E731
        out.append(TrainRec(ib(e.get("gpu")), str(e.get("precision", "")), str(e.get("layout", "")), ib(e.get("batch")),
                            str(e.get("reason") or ""), ib(e.get("memory_batch")), num(e.get("memory_fraction")),
                            num(e.get("memory_batch_fraction")), num(e.get("memory_fraction_limit")) or 0.9,
                            str(e.get("accumulation_reason") or ""), str(e.get("note") or "")))
    return out


def elementwise_bound(data: ReportData) -> tuple[float, TrainPoint] | None:
    """The measured memory-bound share (batch norm, ReLU, add, pooling) of the step at the largest
    ok batch of the fastest series: what a fusing compiler (XLA, torch.compile) can save at most."""
    ok = [p for p in train_points(data) if p.status == "ok" and p.elementwise_share is not None and p.images_per_s]
    if not ok:
        return None
    best = max(ok, key=lambda p: (p.images_per_s, p.batch))
    return best.elementwise_share, best


HOST_BOUND = 0.9  # issued call by call, below 90% of the graph step's images/s: the host bounds it


@dataclass
class HostBound:
    where: Where
    precision: str
    layout: str
    bound_batches: list[int]          # batches where the call-by-call step is host-bound
    ratios: dict[int, float]          # batch -> eager images/s over graph images/s
    recommended: int | None

    @property
    def largest(self) -> int | None:
        return max(self.bound_batches) if self.bound_batches else None


def host_bound(data: ReportData) -> list[HostBound]:
    """Per series, the batches at which the step issued call by call (no CUDA graph) reaches less
    than HOST_BOUND of the graph step's images/s: a training loop without graphs is bound by the
    host's cost of issuing the step's library calls there."""
    recs = {(r.gpu, r.precision, r.layout): r.batch for r in train_recommendations(data)}
    series: dict = {}
    for p in train_points(data):
        if p.status == "ok" and p.images_per_s and p.eager_images_per_s:
            series.setdefault((p.where, p.precision, p.layout), []).append(p)
    out = []
    for (w, prec, layout), pts in sorted(series.items()):
        ratios = {p.batch: p.eager_images_per_s / p.images_per_s for p in pts}
        out.append(HostBound(w, prec, layout, sorted(b for b, r in ratios.items() if r < HOST_BOUND), ratios,
                             recs.get((w.first_gpu, prec, layout))))
    return out


MEMORY_BOUND_KINDS = ("bn", "elementwise", "pool", "update")


@dataclass
class FusionHeadroom:
    """What a fusing compiler could still save of a fused training step, from its record: each
    memory-bound kind's time above the time its byte floor takes at the GPU's memory bandwidth
    (the memory family's best figure for that GPU in the same data), added up. An upper bound: the
    floor moves every tensor once, less than any implementation."""
    where: Where
    precision: str
    layout: str
    batch: int
    step_ms: float
    fused_layers: int
    kinds_ms: dict          # kind -> ms per step
    floor_bytes: dict       # kind -> bytes
    bandwidth_gbps: float | None
    bandwidth_id: str       # the memory record it came from
    floor_ms: dict          # kind -> ms at that bandwidth (0 without one)
    savings_ms: float

    @property
    def share(self) -> float:
        return self.savings_ms / self.step_ms if self.step_ms else 0.0


def memory_bandwidth(data: ReportData, gpu: int | None) -> tuple[float, str] | None:
    """The highest gbps the memory family measured on that GPU, and its record id."""
    best = None
    for rec in data.records:
        if rec.get("family") != "memory" or rec.get("status") != "ok":
            continue
        w = where(rec)
        g = num((rec.get("metrics") or {}).get("gbps"))
        if g and (gpu is None or w.first_gpu == gpu) and (best is None or g > best[0]):
            best = (g, str(rec.get("id", "")))
    return best


def fusion_headroom(data: ReportData) -> FusionHeadroom | None:
    """The fused step (details.fusion.fused_layers > 0) at the largest images/s among the train
    records that carry the per-kind times and the byte floors; None when there is none."""
    cands = []
    for rec in data.records:
        if rec.get("family") != "train" or rec.get("status") != "ok":
            continue
        m, d, p = rec.get("metrics") or {}, rec.get("details") or {}, rec.get("params") or {}
        fused = (d.get("fusion") or {}).get("fused_layers")
        need = [f"time_{k}_ms" for k in MEMORY_BOUND_KINDS] + [f"{k}_floor_bytes" for k in MEMORY_BOUND_KINDS]
        if not is_number(fused) or fused <= 0 or not all(is_number(m.get(k)) for k in need + ["step_time_ms", "images_per_s"]):
            continue
        cands.append(rec)
    if not cands:
        return None
    rec = max(cands, key=lambda r: (r["metrics"]["images_per_s"], r["params"].get("batch", 0)))
    m, w = rec["metrics"], where(rec)
    bw = memory_bandwidth(data, w.first_gpu)
    kinds = {k: float(m[f"time_{k}_ms"]) for k in MEMORY_BOUND_KINDS}
    floors = {k: float(m[f"{k}_floor_bytes"]) for k in MEMORY_BOUND_KINDS}
    floor_ms = {k: (floors[k] / (bw[0] * 1e9) * 1e3 if bw else 0.0) for k in MEMORY_BOUND_KINDS}
    savings = sum(max(0.0, kinds[k] - floor_ms[k]) for k in MEMORY_BOUND_KINDS)
    p = rec["params"]
    return FusionHeadroom(w, str(p.get("precision", "")), str(p.get("layout", "")), int(p.get("batch", 0)),
                          float(m["step_time_ms"]), int(rec["details"]["fusion"]["fused_layers"]), kinds, floors,
                          bw[0] if bw else None, bw[1] if bw else "", floor_ms, savings)
