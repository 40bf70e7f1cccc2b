"""Helpers every part of the report uses on records and the environment, whatever the family: where
a record ran, how that is labelled, a number or None, whether a record was skipped for memory, and
a GPU's maximum PCIe link."""

from __future__ import annotations

from typing import NamedTuple

from .conventions import is_number, reason_kind
from .load import ReportData


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
