"""The node checklist: one item per question, each with a status and its evidence.

Statuses: ``pass``, ``warn``, ``fail``, ``not measured`` (the results hold nothing to judge by;
never an error). This module holds the item type and the items that are no family's: the GPUs and
the build, the PCIe links, clocks and throttling, the run's health, and mixed precision from the
file's ``analysis.fp16_vs_fp32``. Each family's own items come from its module
(``families/<family>.py``: ``checklist_items(data)``); :func:`assemble.build_checklist` places every
item by its ``order``. Nothing here names a family.
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field

from . import derive
from .conventions import is_number
from .load import ReportData
from .util import fmt_num

PASS, WARN, FAIL, NOT_MEASURED = "pass", "warn", "fail", "not measured"
STATUSES = (PASS, WARN, FAIL, NOT_MEASURED)
_RANK = {NOT_MEASURED: 0, PASS: 1, WARN: 2, FAIL: 3}

# thresholds (documented in README.md; the families' own are in their modules)
CLOCK_RATIO_WARN = 0.85
MEMORY_PASS, MEMORY_WARN = 0.90, 0.95

# places on the page of the items kept here (the families' items sit between them: README.md)
ORDER = {"compute_capability": 10, "pcie": 20, "mixed_precision": 60, "clocks": 70, "run": 1000}


@dataclass
class Item:
    key: str
    title: str
    status: str
    summary: str
    evidence: list[str] = field(default_factory=list)
    order: int = 500        # place in the checklist (lower first); see ORDER and the family modules
    precedence: int = 0     # of two items with one key (two families judging one question), the higher speaks


def placed(item: Item, order: int, precedence: int = 0) -> Item:
    """The item, placed in the checklist (``order``) and ranked against another family's item of the
    same key (``precedence``)."""
    item.order, item.precedence = order, precedence
    return item


def worst(statuses) -> str:
    statuses = list(statuses)
    return max(statuses, key=lambda s: _RANK[s]) if statuses else NOT_MEASURED


# ----------------------------------------------------------------------------------------------
# compute capability / build architectures


# The binary judges whether its CUDA build runs on each GPU (harness/node/arch_rule.hpp, the one
# rule) and records the verdict in the file; the checklist shows it and does not judge again.
BUILD_SUPPORT_FIELD = "environment.gpus[].build_support"
_SUPPORT_STATUS = {"sass": PASS, "ptx": WARN, "none": FAIL, "unknown": WARN}


def check_compute_capability(data: ReportData) -> Item:
    title = "GPUs seen, compute capability supported by the build"
    env = data.environment
    gpus = data.gpus
    archs_text = data.latest.cuda_architectures
    if not gpus:
        err = env.get("cuda_error")
        if err:
            return Item("compute_capability", title, FAIL, f"no GPU usable: {err}")
        return Item("compute_capability", title, NOT_MEASURED, "the run saw no GPU")
    verdicts = [g.get("build_support") for g in gpus]
    if not all(isinstance(v, dict) and v.get("status") in _SUPPORT_STATUS for v in verdicts):
        ev = [f"GPU {g['index']}: {g['name']}, compute capability {g['compute_capability']}" for g in gpus]
        built = f"build targets {archs_text!r}" if archs_text is not None else "build targets not recorded"
        return Item("compute_capability", title, NOT_MEASURED,
                    f"{len(gpus)} GPU(s) seen, {built}; whether the build runs on them is not recorded in the file "
                    f"({BUILD_SUPPORT_FIELD}; older nodebench versions do not write it)", ev)
    statuses, ev = [], []
    for g, v in zip(gpus, verdicts):
        st = _SUPPORT_STATUS[v["status"]]
        statuses.append(st)
        ev.append(f"GPU {g['index']}: {g['name']}, compute capability {g['compute_capability']}: {st} - {v.get('reason', '')}")
    status = worst(statuses)
    counts = Counter(statuses)
    summary = (f"{len(gpus)} GPU(s) seen, build targets {archs_text!r}: "
               + ", ".join(f"{counts[s]} {s}" for s in (PASS, WARN, FAIL) if counts[s]))
    if env.get("cuda_visible_devices") is not None:
        ev.append(f"CUDA_VISIBLE_DEVICES={env['cuda_visible_devices']}")
    return Item("compute_capability", title, status, summary, ev)


# ----------------------------------------------------------------------------------------------
# PCIe link


def check_pcie(data: ReportData) -> Item:
    title = "PCIe link at full width and generation"
    statuses, ev = [], []
    for g in data.gpus:
        pcie = g.get("pcie") or {}
        gc, gm, wc, wm = (pcie.get(k) for k in ("gen_current", "gen_max", "width_current", "width_max"))
        if not all(is_number(v) for v in (gc, gm, wc, wm)):
            ev.append(f"GPU {g['index']}: link state unknown (no NVML data)")
            continue
        theo = pcie.get("theoretical_gbps")
        desc = f"GPU {g['index']} ({g.get('pci_bus_id') or '?'}): Gen{gc} x{wc} of Gen{gm} x{wm}"
        if is_number(theo):
            desc += f", {theo:.1f} GB/s per direction"
        if wc < wm:
            statuses.append(FAIL)
            ev.append(f"{desc}: width reduced (reseat the card/riser, check the slot)")
        elif gc < gm:
            statuses.append(WARN)
            ev.append(f"{desc}: generation below maximum; idle GPUs lower it to save power, so check it "
                      f"under load (nvidia-smi -q -d PCIE) before suspecting the slot")
        else:
            statuses.append(PASS)
            ev.append(f"{desc}: full")
    if not statuses:
        return Item("pcie", title, NOT_MEASURED, "no PCIe link state in the environment", ev)
    status = worst(statuses)
    counts = Counter(statuses)
    summary = {PASS: f"all {len(statuses)} link(s) at full width and generation",
               WARN: f"{counts[WARN]} link(s) below maximum generation, all at full width",
               FAIL: f"{counts[FAIL]} link(s) at reduced width"}[status]
    return Item("pcie", title, status, summary, ev)


# ----------------------------------------------------------------------------------------------
# mixed precision


def check_mixed_precision(data: ReportData) -> Item:
    title = "Mixed precision pays"
    rows, verdicts, source = derive.fp16_speedups(data)
    if not rows and not verdicts:   # the verdict is the file's: never judged a second time here
        return Item("mixed_precision", title, NOT_MEASURED, derive.missing_analysis(data, "fp16_vs_fp32") or
                    "no FP16/FP32 pair measured (gemm fp16 and fp32, or conv)")
    ev = [f"{r.who}: {r.source}: FP32 {fmt_num(r.fp32)}, FP16 {fmt_num(r.fp16)}, speedup {fmt_num(r.speedup_x)}x"
          for r in rows]
    ev += [f"{v.who}: verdict {v.verdict.replace('_', ' ')}" + (f" - {v.reason}" if v.reason else "")
           + (f"; recommendation: {v.recommendation}" if v.recommendation else "") for v in verdicts]
    ev.append(f"source: {source}")
    judged = [v for v in verdicts if v.verdict != "not_measured"]
    if not judged:
        return Item("mixed_precision", title, NOT_MEASURED, "no FP16/FP32 verdict could be reached", ev)
    bad = [v for v in judged if v.verdict != "pays"]
    status = PASS if not bad else WARN
    speedups = [r.speedup_x for r in rows if r.speedup_x is not None]
    span = f" ({min(speedups):.2f}x to {max(speedups):.2f}x)" if speedups else ""
    summary = (f"FP16 pays on every GPU measured{span}" if not bad else
               f"FP16 does not pay on {len(bad)} of {len(judged)} GPU(s){span}" +
               (f": {bad[0].recommendation}" if bad[0].recommendation else
                ": expected on tensor-core GPUs - check clocks, libraries and shapes"))
    return Item("mixed_precision", title, status, summary, ev)


# ----------------------------------------------------------------------------------------------
# clocks and throttling

_SEVERE = ("thermal", "hw_slowdown", "hw slowdown", "hardware", "power_brake", "power brake")
_POWER = ("power_cap", "power cap")
_BENIGN = ("idle", "application", "none", "display", "sync_boost", "sync boost", "user_defined")


def classify_reason(reason: str) -> str:
    """NVML clock-event reason -> severe (thermal/hardware slowdown, power brake), power (software power
    cap: normal under full load), benign (idle, application clocks, sync boost, display) or other."""
    r = reason.lower()
    if any(s in r for s in _SEVERE):
        return "severe"
    if any(s in r for s in _POWER):
        return "power"
    if any(s in r for s in _BENIGN):
        return "benign"
    return "other"


def _clock_evidence(data: ReportData, recs: list, ev: list) -> tuple[list, bool]:
    """Each GPU's median SM clock during its cases against its maximum, the hottest reading and the noisy
    cases, as evidence; returns the clock ratios and whether one is low."""
    ratios = []
    by_gpu: dict[int, list[float]] = {}
    temps = []
    for r in recs:
        clocks = r.get("clocks") or {}
        during = clocks.get("sm_mhz_during")
        if is_number(during) and len(r["gpus"]) == 1:
            by_gpu.setdefault(derive.where(r), []).append(during)
        t = (clocks.get("after") or {}).get("temperature_c")
        if is_number(t):
            temps.append(t)
    low_clock = False
    for w, values in sorted(by_gpu.items()):
        g = data.gpu(w.first_gpu) or {}
        med = statistics.median(values)
        mx = g.get("clock_sm_max_mhz")
        label = derive.gpu_label(w)
        if is_number(mx) and mx > 0:
            ratio = med / mx
            ratios.append(ratio)
            low_clock |= ratio < CLOCK_RATIO_WARN
            ev.append(f"{label}: median SM clock during cases {med:.0f} MHz = {ratio * 100:.0f}% of max {mx:.0f} MHz")
        else:
            ev.append(f"{label}: median SM clock during cases {med:.0f} MHz (max unknown)")
    if temps:
        ev.append(f"highest temperature after a case: {max(temps):.0f} C")
    noisy = sum(1 for r in recs if "noisy" in r["flags"])
    if noisy:
        ev.append(f"{noisy} case(s) flagged noisy")
    return ratios, low_clock


def check_clocks(data: ReportData) -> Item:
    title = "Clocks and throttling during the run"
    env = data.environment
    recs = [r for r in data.records if r["status"] in ("ok", "wrong")]
    has_clocks = any((r.get("clocks") or {}).get("sm_mhz_during") is not None
                     or ((r.get("clocks") or {}).get("after") or {}).get("sm_mhz") is not None for r in recs)
    if not env["nvml"]["available"] and not has_clocks:
        return Item("clocks", title, NOT_MEASURED,
                    f"NVML not available: {env['nvml'].get('error') or 'no reason given'}")
    if not recs:
        return Item("clocks", title, NOT_MEASURED, "no measured records")
    reasons: Counter = Counter()
    throttled = [r for r in recs if "throttled" in r["flags"]]
    capped = [r for r in recs if "power_capped" in r["flags"]]
    for r in recs:
        clocks = r.get("clocks") or {}
        for snap in (clocks.get("before") or {}, clocks.get("after") or {}):
            for reason in snap.get("throttle_reasons") or []:
                reasons[str(reason)] += 1
    at_start = sorted({str(reason) for g in data.gpus for reason in g.get("throttle_reasons") or []})
    classes = {reason: classify_reason(reason) for reason in list(reasons) + at_start}
    severe = sorted(r for r, c in classes.items() if c == "severe")
    other = sorted(r for r, c in classes.items() if c == "other")

    def examples(rs):
        return f" (e.g. {', '.join(r['id'] for r in rs[:3])})" if rs else ""

    ev = [f"{len(throttled)} of {len(recs)} measured case(s) flagged throttled (thermal/hardware slowdown, "
          f"power brake){examples(throttled)}",
          f"{len(capped)} case(s) ran at the software power limit (power_capped: normal under full load; their "
          f"figures are power-limited){examples(capped)}"]
    if reasons:
        ev.append("clock-event reasons around cases: " + ", ".join(f"{r} ({classes[r]}, {reasons[r]} reading(s))"
                                                                  for r in sorted(reasons)))
    if at_start:
        ev.append("clock-event reasons at the start of the run: " + ", ".join(f"{r} ({classes[r]})" for r in at_start))
    ratios, low_clock = _clock_evidence(data, recs, ev)
    if throttled or severe:
        what = []
        if throttled:
            what.append(f"{len(throttled)} case(s) throttled")
        if severe:
            what.append("slowdown reasons seen: " + ", ".join(severe))
        return Item("clocks", title, FAIL, "; ".join(what) + ": check cooling, power delivery and NVML logs", ev)
    if low_clock or other:
        what = []
        if low_clock:
            what.append(f"median SM clock below {CLOCK_RATIO_WARN * 100:.0f}% of maximum on some GPU")
        if other:
            what.append("unrecognised clock-event reasons: " + ", ".join(other))
        return Item("clocks", title, WARN, "; ".join(what), ev)
    if not has_clocks:
        return Item("clocks", title, NOT_MEASURED, "no clock readings in the records", ev)
    summary = "no throttling" + ("; clocks near maximum" if ratios else "")
    if capped:
        summary += f"; {len(capped)} case(s) at the power limit (normal under full load)"
    return Item("clocks", title, PASS, summary, ev)


# ----------------------------------------------------------------------------------------------
# run health


def check_run(data: ReportData) -> Item:
    title = "All cases ran and verified"
    counts = Counter(r["status"] for r in data.records)
    ev = [f"{run.path}: run {run.run_id}, {run.run_status}, started {run.started_at}" for run in data.runs]
    for run in data.runs:
        if run.doc.get("run_error"):
            ev.append(f"{run.path}: run_error: {run.doc['run_error']}")
    bad = [r for r in data.records if r["status"] in ("failed", "wrong")]
    for r in bad[:10]:
        ev.append(f"{r['id']} [{derive.gpu_label(derive.where(r))}]: {r['status']}: {r.get('reason')}")
    if len(bad) > 10:
        ev.append(f"... and {len(bad) - 10} more")
    summary = ", ".join(f"{counts[s]} {s}" for s in ("ok", "skipped", "failed", "wrong") if counts[s]) or "no records"
    statuses = {run.run_status for run in data.runs}
    if counts["wrong"] or counts["failed"] or statuses & {"aborted", "interrupted"}:
        status = FAIL
        if statuses & {"aborted", "interrupted"}:
            summary += "; run " + "/".join(sorted(statuses & {"aborted", "interrupted"}))
    elif "running" in statuses:
        status, summary = WARN, summary + "; a run was still going when the file was read"
    elif not data.records:
        status = NOT_MEASURED
    else:
        status = PASS
    return Item("run", title, status, summary, ev)
