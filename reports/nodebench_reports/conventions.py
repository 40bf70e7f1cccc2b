"""The conventions of the result format that every reader shares: case identity (id, GPUs, rank,
mode), a record's figure of merit and its direction, structured skip reasons, measurement settings.

No family is named here: a record's figure of merit is its own ``primary_metric`` (every file written
since that field exists); files older than that fall back to the family module's ``PRIMARY``
(``families/<family>.py``).
"""

from __future__ import annotations

import math
from typing import Any


def is_number(value: Any) -> bool:
    """A JSON number (bool excluded), finite."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def record_key(rec: dict) -> tuple[str, tuple[int, ...], int | None]:
    """Case identity across runs: the record id plus the GPUs it ran on (plus the MPI rank that
    ran it, for runs of one process per GPU, where every rank has its own GPU 0)."""
    rank = rec.get("rank")
    return rec["id"], tuple(rec["gpus"]), rank if isinstance(rank, int) and not isinstance(rank, bool) else None


def key_label(key: tuple) -> str:
    rid, gpus = key[0], key[1]
    rank = key[2] if len(key) > 2 else None
    where = f"gpu {','.join(str(g) for g in gpus)}" if gpus else "host"
    if rank is not None:
        where += f", rank {rank}"
    return f"{rid} [{where}]"


def primary_metric(rec: dict) -> str:
    """The metric that best summarises a record (used by trend and fleet when none is given): the
    record's own ``primary_metric`` when it names a metric it has; ``median_s`` when it states none
    (``null``: a record with no figure, e.g. skipped); else (files written before that field, or a
    name the record lacks) the first of its family module's ``PRIMARY`` that it has; else ``median_s``."""
    metrics = rec.get("metrics") or {}
    named = rec.get("primary_metric")
    if isinstance(named, str) and is_number(metrics.get(named)):
        return named
    if "primary_metric" in rec and named is None:
        return "median_s"
    from .families import primary_fallback  # here, not at the top: the family modules import this one
    for name in primary_fallback(rec.get("family")):
        if metrics.get(name) is not None:
            return name
    return "median_s"


def higher_is_better(metric: str) -> bool:
    """The metric's direction as its declaration says (:mod:`.metrics`: the family's ``METRICS``, else
    its name's unit suffix: throughput higher, times, latencies, bytes lower)."""
    from .metrics import by_name  # here: metrics asks the family modules, which import this one
    return by_name(metric).higher_is_better


def record_higher_is_better(rec: dict, metric: str) -> bool:
    """Direction of `metric` for this record: ``primary_better`` when the record states it for its
    primary metric, else its family's declaration of the metric."""
    better = rec.get("primary_better")
    if metric == rec.get("primary_metric") and better in ("higher", "lower"):
        return better == "higher"
    from .metrics import of_record  # here: metrics asks the family modules, which import this one
    return of_record(rec, metric).higher_is_better


# Structured skip/failure kinds (record ``reason_kind``); older files only have the text.
REASON_KINDS = ("oom", "smaller_oom", "unsupported", "needs_gpus", "timeout", "error", "wrong_result", "above_peak", "shared_gpu",
                "not_built", "interrupted", "unusable_gpu", "peer_rank", "plateau")


def reason_kind(rec: dict) -> str | None:
    """The record's ``reason_kind``; for older files guessed from the reason text where it is
    unambiguous (out of memory), else None."""
    kind = rec.get("reason_kind")
    if isinstance(kind, str) and kind:
        return kind
    if rec.get("status") != "ok" and str(rec.get("reason") or "").lower().startswith("out of memory"):
        return "oom"
    return None


def record_mode(rec: dict) -> str:
    """"alone" (GPUs measured one at a time; also when absent) or "concurrent"."""
    mode = rec.get("mode")
    return mode if isinstance(mode, str) and mode else "alone"


def measurement_settings(rec: dict, options: dict) -> dict:
    """The settings that change what a case measures: L2 mode, target CV, fixed repetitions, mode.
    The record's ``measurement`` wins over the run's ``options``; unknown settings are None."""
    meas = rec.get("measurement") if isinstance(rec.get("measurement"), dict) else {}
    opts = options if isinstance(options, dict) else {}

    def pick(*pairs):
        for src, key in pairs:
            value = src.get(key)
            if value is not None and value != "family default":
                return value
        return None

    reps = pick((meas, "fixed_samples"), (meas, "repetitions"), (opts, "repetitions"))
    return {"l2": pick((meas, "l2"), (opts, "l2")), "target_cv": pick((meas, "target_cv"), (opts, "target_cv")),
            "repetitions": reps if reps else None,  # 0: not fixed (run until target_cv)
            "mode": record_mode(rec)}


def metric_value(rec: dict, metric: str) -> float | None:
    if metric == "median_s":
        stats = rec.get("stats")
        return stats["median"] if stats else None
    value = (rec.get("metrics") or {}).get(metric)
    return value if is_number(value) else None
