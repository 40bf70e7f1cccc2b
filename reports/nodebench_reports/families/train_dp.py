"""The train_dp family in the report: measured data-parallel training throughput and efficiency
against GPU count, per configuration, beside the advisor's prediction (``nodebench advise --json``,
given with ``html --advise``). The scaling figure and the strategy item (plots.py, checklist.py)
combine them with the nccl estimate."""

from __future__ import annotations

from dataclasses import dataclass

from ..load import ReportData
from ..records import num

FAMILY = "train_dp"
PRIMARY = ("images_per_s",)


def group_key(rec: dict) -> tuple | None:
    """(precision, layout, per-GPU batch, accumulation steps): one configuration against GPU count."""
    p = rec.get("params") or {}
    if not isinstance(p.get("batch"), int):
        return None
    return str(p.get("precision", "")), str(p.get("layout", "")), p["batch"], int(p.get("accumulation", 1) or 1)


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


def dp_series(data: ReportData) -> list[DpSeries]:
    """Measured points from train_dp records and predicted points from the advise document, per configuration.
    Efficiency: the record's scaling_efficiency_ratio (N-GPU over N x 1-GPU throughput), else the ratio to
    the 1-GPU point of the same configuration."""
    series: dict[tuple, DpSeries] = {}

    def get(key):
        return series.setdefault(key, DpSeries(key, [], [], None))

    for rec in data.family(FAMILY):
        p, m = rec["params"], rec["metrics"]
        n, ips, key = p.get("gpus"), num(m.get("images_per_s")), group_key(rec)
        if not isinstance(n, int) or key is None or ips is None:
            continue
        eff = num(m.get("scaling_efficiency_ratio"))
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
