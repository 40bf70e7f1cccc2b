"""The peak family in the report: no figure or item of its own; its records feed the FP16-versus-FP32
verdict (``analysis.fp16_vs_fp32``, read by the checklist's mixed-precision item and the speedup figure)."""

from __future__ import annotations

from ..records import where

FAMILY = "peak"
PRIMARY = ("tflops", "tops")
FEEDS = ("fp16_vs_fp32",)


def group_key(rec: dict) -> tuple:
    """(Where, unit): one execution unit's kernel."""
    return where(rec), str((rec.get("params") or {}).get("unit", "?"))
