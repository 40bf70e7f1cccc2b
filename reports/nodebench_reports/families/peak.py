"""The peak family in the report: no figure or item of its own; its records feed the FP16-versus-FP32
verdict (``analysis.fp16_vs_fp32``, read by the checklist's mixed-precision item and the speedup figure)."""

from __future__ import annotations

from ..records import where
from ..metrics import declare, metric

FAMILY = "peak"
PRIMARY = ("tflops", "tops")
METRICS = declare(metric("tflops", "TFLOPS"), metric("tops", "TOPS"), "theoretical_tflops", "theoretical_tops", "sm_clock_mhz")
FEEDS = ("fp16_vs_fp32",)


def group_key(rec: dict) -> tuple:
    """(Where, unit): one execution unit's kernel."""
    return where(rec), str((rec.get("params") or {}).get("unit", "?"))
