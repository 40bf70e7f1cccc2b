"""The latency family in the report: no figure or item of its own yet (its records are listed with the
others and compared by ``compare``); its latency is the figure of merit of old files."""

from __future__ import annotations

from ..records import where

FAMILY = "latency"
PRIMARY = ("latency_us",)


def group_key(rec: dict) -> tuple:
    """(Where, what is timed)."""
    return where(rec), str((rec.get("params") or {}).get("what", "?"))
