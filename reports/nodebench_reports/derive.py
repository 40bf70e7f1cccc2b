"""What the checklist and the plots read across families, so that both agree: the FP16-versus-FP32
verdict from the file's ``analysis.fp16_vs_fp32`` and the sentence for an analysis a file lacks. What is one family's lives in ``families/<family>.py``; the helpers on
records (``records.py``) are re-exported here.

A verdict the harness writes into the file is read, never computed again: a file without it (an
older nodebench, a run stopped before its analyses) says "not in this file" and what to run.
"""

from __future__ import annotations

from dataclasses import dataclass

from .load import ReportData
from .records import PCIE_LANE_GBPS, Where, gpu_label, is_oom, max_link_gbps, model_of, num, where  # noqa: F401


def missing_analysis(data: ReportData, key: str) -> str | None:
    """When the records of a family whose analysis ``key`` is (its module's ``FEEDS``) are there but
    ``analysis.<key>`` is not: the sentence that says so and what to run. None otherwise."""
    from .families import feeders  # here: the family modules import this one

    if key in data.analysis:
        return None
    present = [f for f in feeders(key) if data.has_family(f)]
    if not present:
        return None
    return (f"not in this file: analysis.{key} (the file has {', '.join(present)} records without it: written by "
            f"an older nodebench, or the run stopped before its analyses); run `nodebench run --family "
            f"{','.join(present)}` with a current build for the verdict")


# ----------------------------------------------------------------------------------------------
# FP16 vs FP32 (analysis.fp16_vs_fp32, written from the gemm, peak, conv and train records)


@dataclass
class SpeedupRow:
    who: str                   # "GPU 0", "rank 2 GPU 0", "node"
    source: str
    fp32: float | None
    fp16: float | None
    speedup_x: float | None


@dataclass
class SpeedupVerdict:
    who: str
    verdict: str               # pays / does_not_pay / not_measured
    reason: str
    recommendation: str = ""


FP16_SOURCE = "analysis.fp16_vs_fp32"


def _speedup_rows(who: str, rows) -> list[SpeedupRow]:
    out = []
    for row in rows if isinstance(rows, list) else []:
        if not isinstance(row, dict) or row.get("kind") == "int8" or "fp16" not in row:
            continue   # INT8 rows compare another precision
        fp32, fp16, sp = num(row.get("fp32")), num(row.get("fp16")), num(row.get("speedup_x"))
        if sp is None and fp32 and fp16:
            sp = fp16 / fp32
        source = str(row.get("source", "?"))
        if row.get("kind") and str(row["kind"]) not in source:
            source = f"{row['kind']}: {source}"
        out.append(SpeedupRow(who, source, fp32, fp16, sp))
    return out


def fp16_speedups(data: ReportData) -> tuple[list[SpeedupRow], list[SpeedupVerdict], str]:
    """The rows and verdicts of ``analysis.fp16_vs_fp32`` (nothing when the file has none: see
    :func:`missing_analysis`), and where they came from."""
    raw = data.analysis.get("fp16_vs_fp32")
    rows: list[SpeedupRow] = []
    verdicts: list[SpeedupVerdict] = []
    for entry in raw if isinstance(raw, list) else []:
        if not isinstance(entry, dict):
            continue
        gpu = entry.get("gpu")
        who = f"GPU {gpu}" if isinstance(gpu, int) and not isinstance(gpu, bool) else "node"
        rows += _speedup_rows(who, entry.get("rows"))
        if entry.get("verdict") in ("pays", "does_not_pay", "not_measured"):
            verdicts.append(SpeedupVerdict(who, entry["verdict"], str(entry.get("reason") or ""),
                                           str(entry.get("recommendation") or "")))
    return rows, verdicts, FP16_SOURCE
