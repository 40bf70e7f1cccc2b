"""The memory family in the report: no figure or item of its own yet (its records are listed with the
others and compared by ``compare``); its bandwidth is the figure of merit of old files."""

from __future__ import annotations

from ..records import where
from ..metrics import declare, metric

FAMILY = "memory"
PRIMARY = ("gbps",)
METRICS = declare(metric("gbps", "GB/s"))


def group_key(rec: dict) -> tuple:
    """(Where, kernel): one kernel's sizes."""
    return where(rec), str((rec.get("params") or {}).get("kernel", "?"))
