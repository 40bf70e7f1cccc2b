"""The latency family in the report: no figure or item of its own yet (its records are listed with the
others and compared by ``compare``); its latency is the figure of merit of old files."""

from __future__ import annotations

from ..records import where
from ..metrics import declare, metric

FAMILY = "latency"
PRIMARY = ("latency_us",)
METRICS = declare(metric("latency_us", "latency (us)"), "p90_latency_us")


def group_key(rec: dict) -> tuple:
    """(Where, what is timed)."""
    return where(rec), str((rec.get("params") or {}).get("what", "?"))
