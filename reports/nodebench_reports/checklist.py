"""The node checklist: one item per question, each with a status and its evidence.

Statuses: ``pass``, ``warn``, ``fail``, ``not measured`` (the results hold nothing to judge by;
never an error).
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from dataclasses import dataclass, field

from . import derive, derive_train
from .load import ReportData, is_number
from .util import fmt_bytes, fmt_num, fmt_pct

PASS, WARN, FAIL, NOT_MEASURED = "pass", "warn", "fail", "not measured"
STATUSES = (PASS, WARN, FAIL, NOT_MEASURED)
_RANK = {NOT_MEASURED: 0, PASS: 1, WARN: 2, FAIL: 3}

# thresholds (documented in README.md)
H2D_PASS_PCT, H2D_WARN_PCT = 75.0, 50.0
PAGEABLE_RATIO_PASS = 0.5
HEADROOM_PASS = 2.0
SCALING_PASS, SCALING_WARN = 0.9, 0.7
CLOCK_RATIO_WARN = 0.85
MEMORY_PASS, MEMORY_WARN = 0.90, 0.95


@dataclass
class Item:
    key: str
    title: str
    status: str
    summary: str
    evidence: list[str] = field(default_factory=list)


def worst(statuses) -> str:
    statuses = list(statuses)
    return max(statuses, key=lambda s: _RANK[s]) if statuses else NOT_MEASURED


# ----------------------------------------------------------------------------------------------
# compute capability / build architectures


@dataclass
class Arch:
    number: int        # 90 for sm_90, 100 for sm_100
    suffix: str        # "", "a" (arch-specific), "f" (family)
    sass: bool
    ptx: bool


def parse_architectures(text: str | None) -> tuple[list[Arch], list[str]]:
    """Parse CMake's CUDA_ARCHITECTURES ("75-real;80-real;90"); returns (archs, special words)."""
    archs, special = [], []
    for token in re.split(r"[;,\s]+", text or ""):
        token = token.strip().lower()
        if not token:
            continue
        if token in ("native", "all", "all-major"):
            special.append(token)
            continue
        m = re.fullmatch(r"(?:sm_|compute_)?(\d+)([af]?)(?:-(real|virtual))?", token)
        if not m:
            special.append(token)
            continue
        kind = m.group(3)
        archs.append(Arch(int(m.group(1)), m.group(2), sass=kind != "virtual", ptx=kind != "real"))
    return archs, special


def arch_support(cc: str, archs: list[Arch]) -> tuple[str, str]:
    """How a GPU of compute capability ``cc`` ("9.0") runs this build: (status, explanation)."""
    major, minor = (int(x) for x in cc.split("."))
    value = major * 10 + minor
    for a in archs:
        if a.sass and a.number == value:
            return PASS, f"native code (sm_{a.number}{a.suffix})"
    for a in archs:
        # A cubin for X.y runs on X.z with z >= y (not for arch-specific "a" targets).
        if a.sass and a.suffix != "a" and a.number // 10 == major and a.number < value:
            return PASS, f"binary-compatible code (sm_{a.number}{a.suffix} runs on {cc})"
    ptx = [a for a in archs if a.ptx and a.suffix == "" and a.number <= value]
    if ptx:
        best = max(a.number for a in ptx)
        return WARN, f"only PTX (compute_{best}), JIT-compiled at start-up: slower start, may miss {cc} features"
    return FAIL, "no code for this GPU in the build"


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
    if archs_text is None:
        ev = [f"GPU {g['index']}: {g['name']}, compute capability {g['compute_capability']}" for g in gpus]
        return Item("compute_capability", title, NOT_MEASURED,
                    f"{len(gpus)} GPU(s) seen; the file does not say which architectures were compiled "
                    f"(nodebench.cuda_architectures)", ev)
    archs, special = parse_architectures(archs_text)
    statuses, ev = [], []
    for g in gpus:
        cc = g["compute_capability"]
        if special and not archs:
            st, why = WARN, f"built for {'/'.join(special)}: cannot tell from the file"
        else:
            st, why = arch_support(cc, archs)
        statuses.append(st)
        ev.append(f"GPU {g['index']}: {g['name']}, compute capability {cc}: {st} - {why}")
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
# host link


def check_h2d(data: ReportData) -> Item:
    title = "Host-to-device bandwidth against the link"
    if not data.has_family("hostlink"):
        return Item("h2d", title, NOT_MEASURED, "no hostlink records in these results")
    gpus = sorted({derive.where(r) for r in data.family("hostlink")})
    statuses, ev = [], []
    for gk in gpus:
        hit = derive.hostlink_at_largest(data, gk, "h2d", "pinned")
        if hit is None:
            continue
        size, gbps, rec = hit
        link = derive.link_gbps(data, gk)
        pct = rec["metrics"].get("link_pct")
        if not is_number(pct):
            pct = gbps / link * 100 if link else None
        if pct is None:
            ev.append(f"{derive.gpu_label(gk)}: {gbps:.1f} GB/s pinned H2D at {fmt_bytes(size)}; link speed unknown")
            continue
        st = PASS if pct >= H2D_PASS_PCT else WARN if pct >= H2D_WARN_PCT else FAIL
        statuses.append(st)
        ev.append(f"{derive.gpu_label(gk)}: {gbps:.1f} GB/s pinned H2D at {fmt_bytes(size)} = {pct:.0f}% of the "
                  f"link's {fmt_num(link)} GB/s ({st})")
    if not statuses:
        return Item("h2d", title, NOT_MEASURED, "no successful pinned host-to-device record with a known link", ev)
    status = worst(statuses)
    summary = (f"pinned H2D reaches >= {H2D_PASS_PCT:.0f}% of the link on every GPU" if status == PASS else
               f"pinned H2D below {H2D_PASS_PCT:.0f}% of the link on some GPU (warn < {H2D_PASS_PCT:.0f}%, "
               f"fail < {H2D_WARN_PCT:.0f}%): check NUMA placement, IOMMU, link state")
    return Item("h2d", title, status, summary, ev)


def check_pinned_pageable(data: ReportData) -> Item:
    title = "Pinned versus pageable host memory (data-pipeline headroom)"
    if not data.has_family("hostlink"):
        return Item("pinned_pageable", title, NOT_MEASURED, "no hostlink records in these results")
    gpus = sorted({derive.where(r) for r in data.family("hostlink")})
    statuses, ev = [], []
    for gk in gpus:
        pinned = derive.hostlink_at_largest(data, gk, "h2d", "pinned")
        pageable = derive.hostlink_at_largest(data, gk, "h2d", "pageable")
        if pinned is None or pageable is None:
            continue
        pin, pag = pinned[1], pageable[1]
        ratio = pag / pin if pin else 0.0
        line = (f"{derive.gpu_label(gk)}: H2D pinned {pin:.1f} GB/s, pageable {pag:.1f} GB/s "
                f"(pageable = {ratio * 100:.0f}% of pinned)")
        need = derive.best_train_ips(data, gk.first_gpu) if gk.first_gpu is not None else None
        if need:
            ips, what = need
            need_gbps = ips * derive.IMAGE_BYTES / 1e9
            h_pin, h_pag = pin / need_gbps, pag / need_gbps
            line += (f"; ResNet-50 training ({what}, {ips:,.0f} images/s of 224x224 FP32 input) needs "
                     f"{need_gbps:.2f} GB/s: headroom {h_pin:.1f}x pinned, {h_pag:.1f}x pageable")
            if h_pag >= HEADROOM_PASS:
                st = PASS
            elif h_pin >= HEADROOM_PASS:
                st = WARN
                line += " - use pinned buffers in the data loader (pin_memory)"
            elif h_pin >= 1.0:
                st = WARN
                line += " - little headroom even pinned: send uint8 images and normalise on the GPU"
            else:
                st = FAIL
                line += " - the host link cannot feed the GPU"
        else:
            st = PASS if ratio >= PAGEABLE_RATIO_PASS else WARN
            if st == WARN:
                line += " - pageable copies lose much bandwidth: use pinned buffers for input pipelines"
        statuses.append(st)
        ev.append(line + f" ({st})")
    if not statuses:
        return Item("pinned_pageable", title, NOT_MEASURED,
                    "pinned and pageable host-to-device results are not both present", ev)
    status = worst(statuses)
    summary = {PASS: "enough headroom for the input pipeline, even from pageable memory",
               WARN: "input pipelines should use pinned memory",
               FAIL: "the host link is slower than the GPU consumes input"}[status]
    return Item("pinned_pageable", title, status, summary, ev)


# ----------------------------------------------------------------------------------------------
# distribution strategy


def _best_at_top(series, which: str):
    """(series, point) with the largest GPU count above one and, there, the best efficiency."""
    best = None
    for s in series:
        for q in getattr(s, which):
            if q.gpus < 2 or q.efficiency is None:
                continue
            if best is None or (q.gpus, q.efficiency) > (best[1].gpus, best[1].efficiency):
                best = (s, q)
    return best


def _fabric_evidence(data: ReportData, sc) -> list:
    """The all-reduce bus bandwidth of the most GPUs against the fastest PCIe link (the maximum
    link: idle GPUs train down), as evidence of the interconnect class."""
    if sc is None or not sc.rows:
        return []
    pcie = [p for p in (derive.max_link_gbps(g) for g in data.gpus) if is_number(p)]
    if not pcie:
        return []
    top_bw = max(sc.rows, key=lambda r: r.ngpus).busbw_gbps
    fabric = "NVLink/NVSwitch-class" if top_bw > 1.2 * max(pcie) else "PCIe/host-class"
    return [f"bus bandwidth {top_bw:.0f} GB/s vs PCIe {max(pcie):.0f} GB/s: {fabric} interconnect"]


def check_distribution(data: ReportData) -> Item:
    """Judged from training efficiency (N-GPU throughput over N x 1-GPU throughput): measured (train_dp
    records), else predicted by `nodebench advise`, else estimated from the one-GPU step and the all-reduce
    curve (no overlap). Bus bandwidth alone never judges a strategy: it is evidence only."""
    title = "Distribution strategy from training efficiency"
    series = derive.dp_series(data)
    sc = derive.scaling(data)
    ev = []
    measured = _best_at_top(series, "measured")
    predicted = _best_at_top(series, "predicted")
    if measured:
        s, q = measured
        eff, n, basis = q.efficiency, q.gpus, "measured data-parallel training efficiency"
        ev.append(f"{s.label}: {q.images_per_s:.0f} images/s on {n} GPUs, efficiency {eff * 100:.1f}% "
                  f"(train_dp, N-GPU over N x 1-GPU throughput)")
        for ps, pq in [(ps, pq) for ps in series if ps.key == s.key for pq in ps.predicted if pq.gpus == n]:
            ev.append(f"predicted for the same configuration: {pq.images_per_s:.0f} images/s "
                      f"({(pq.images_per_s - q.images_per_s) / q.images_per_s * 100:+.1f}%)")
    elif predicted:
        s, q = predicted
        eff, n = q.efficiency, q.gpus
        basis = f"predicted data-parallel training efficiency ({s.predicted_label}, nodebench advise)"
        ev.append(f"{s.label}: {q.images_per_s:.0f} images/s predicted on {n} GPUs, efficiency {eff * 100:.1f}%")
    elif sc is not None and sc.step_s is not None and any(r.ngpus >= 2 for r in sc.rows):
        top = max(sc.rows, key=lambda r: r.ngpus)
        eff, n = top.train_efficiency, top.ngpus
        basis = "predicted data-parallel training efficiency (one-GPU step + all-reduce, no overlap)"
        ev.append(f"step time used: {sc.step_s * 1e3:.1f} ms ({sc.step_label}, per GPU)")
    else:
        if len(data.gpus) == 1 and sc is None:
            return Item("distribution", title, NOT_MEASURED, "single GPU: no multi-GPU strategy to choose")
        why = ("no all-reduce (nccl) records in these results" if sc is None else
               "no training step time (train, train_dp or conv records, or an advise document): "
               "bus bandwidth alone does not judge a strategy")
        for r in (sc.rows if sc else []):
            ev.append(f"{r.ngpus} GPU(s): all-reduce bus bandwidth {r.busbw_gbps:.1f} GB/s at "
                      f"{fmt_bytes(sc.common_bytes)}")
        ev += _fabric_evidence(data, sc)
        return Item("distribution", title, NOT_MEASURED, why, ev)
    if sc is not None:
        for r in sc.rows:
            line = (f"{r.ngpus} GPU(s): all-reduce bus bandwidth {r.busbw_gbps:.1f} GB/s at "
                    f"{fmt_bytes(sc.common_bytes)}; ResNet-50 FP32 gradient all-reduce "
                    f"({fmt_bytes(derive.RESNET50_GRAD_BYTES)}) ~ {r.allreduce_s * 1e3:.2f} ms")
            if r.train_efficiency is not None:
                line += f", no-overlap training efficiency ~ {r.train_efficiency * 100:.1f}%"
            ev.append(line)
        ev += _fabric_evidence(data, sc)
    if data.advice:   # the advisor's strategy table, each statement with its figures
        ev += [f"advise ({st.get('topic', '')}): {st.get('text', '')}" for st in data.advice.get("recommendation", [])
               if isinstance(st, dict)]
    if eff >= SCALING_PASS:
        status = PASS
        strategy = f"data parallel (DDP: one process per GPU, NCCL all-reduce) across {n} GPUs"
    elif eff >= SCALING_WARN:
        status = WARN
        strategy = (f"data parallel across {n} GPUs with gradient-bucket overlap and a larger per-GPU batch "
                    f"or gradient accumulation to amortise the all-reduce")
    else:
        status = FAIL
        strategy = (f"all-reduce-bound at {n} GPUs: accumulate gradients / communicate less often, keep "
                    f"sharded strategies inside fast-link groups, and check the interconnect")
    return Item("distribution", title, status, f"{basis} {eff * 100:.1f}% at {n} GPUs: {strategy}", ev)


# ----------------------------------------------------------------------------------------------
# mixed precision


def check_mixed_precision(data: ReportData) -> Item:
    title = "Mixed precision pays"
    rows, verdicts, source = derive.fp16_speedups(data)
    if not rows and not verdicts:
        return Item("mixed_precision", title, NOT_MEASURED,
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
# memory at the recommended batch


def check_train_memory(data: ReportData, title: str) -> Item | None:
    """The guide's "raise the batch until about 90% of memory is used", judged from the measured
    training step: the largest batch within the limit, and the memory at the recommended batch."""
    recs = derive_train.train_recommendations(data)
    if not recs:
        return None
    statuses, ev, top = [], [], []
    for r in recs:
        if r.memory_batch is None or r.memory_batch_fraction is None:
            statuses.append(WARN if r.batch is None else PASS)
            ev.append(f"{r.label}: {r.reason}")
            continue
        frac = r.memory_fraction if r.memory_fraction is not None else r.memory_batch_fraction
        st = PASS if frac <= r.limit else WARN if frac <= r.limit + (MEMORY_WARN - MEMORY_PASS) else FAIL
        statuses.append(st)
        top.append(r.memory_batch_fraction)
        ev.append(f"{r.label}: batch {r.memory_batch} is the largest within {fmt_pct(r.limit, 0)} of GPU memory "
                  f"({fmt_pct(r.memory_batch_fraction, 0)} measured); recommended batch {r.batch} "
                  f"({fmt_pct(frac, 0)}; {st}): {r.reason}" + (f"; {r.accumulation}" if r.accumulation else "")
                  + (f"; {r.note}" if r.note else ""))
    for p in derive_train.train_points(data):
        if p.oom:
            ev.append(f"{derive.gpu_label(p.where)} {p.precision} {p.layout}: batch {p.batch} out of memory")
    ev.append("source: analysis.train_recommendation (measured ResNet-50 training step)")
    status = worst(statuses)
    if not top:
        return Item("memory", title, status, "no training batch within the memory limit measured", ev)
    limit = max(r.limit for r in recs)
    reached = any(p.oom for p in derive_train.train_points(data)) or 2 * max(top) > limit
    if reached:
        summary = (f"the largest training batch within the limit uses {fmt_pct(max(top), 0)} of GPU memory "
                   f"(the guide's \"about 90%\": the next doubling does not stay within it)")
    else:
        summary = (f"the largest training batch measured uses {fmt_pct(max(top), 0)} of GPU memory and the sweep "
                   f"stopped there: a doubled batch would still fit within {fmt_pct(limit, 0)}; run the full "
                   f"train sweep (up to out of memory) for the guide's \"about 90%\"")
        status = worst([status, WARN])
    return Item("memory", title, status, summary, ev)


def check_fusion(data: ReportData) -> Item:
    """The guide's "enable XLA compilation" (and torch.compile). On a fused step (its batch norms
    with their ReLU and add fused: details.fusion), what a compiler could still save: the
    memory-bound kinds' time above their byte floor at the measured memory bandwidth. On an
    unfused step, the measured memory-bound share (batch norm, ReLU, add, pooling) is what fusing
    can save at most."""
    title = "XLA / torch.compile: what kernel fusion can save at most"
    h = derive_train.fusion_headroom(data)
    if h is not None:
        return fusion_headroom_item(title, h)
    b = derive_train.elementwise_bound(data)
    if b is None:
        return Item("fusion", title, NOT_MEASURED, "no train record: run the train family")
    share, p = b
    ev = [f"{derive.gpu_label(q.where)} {q.precision} {q.layout} batch {q.batch}: memory-bound share "
          f"{fmt_pct(q.elementwise_share, 0)}" for q in derive_train.train_points(data)
          if q.status == "ok" and q.elementwise_share is not None][-8:]
    summary = (f"at most {fmt_pct(share, 0)} of the step ({derive.gpu_label(p.where)} {p.precision} {p.layout} "
               f"batch {p.batch}: batch norm, ReLU, add and pooling); the convolutions are not fused away")
    return Item("fusion", title, PASS, summary, ev)


def fusion_headroom_item(title: str, h) -> Item:
    names = {"bn": "bn_act", "elementwise": "elementwise", "pool": "pool", "update": "update"}
    where = f"{derive.gpu_label(h.where)} {h.precision} {h.layout} batch {h.batch}"
    ev = [f"{names[k]}: {h.kinds_ms[k]:.2f} ms a step, floor {fmt_bytes(h.floor_bytes[k])}"
          + (f" = {h.floor_ms[k]:.2f} ms at {h.bandwidth_gbps:.0f} GB/s" if h.bandwidth_gbps else "")
          for k in derive_train.MEMORY_BOUND_KINDS]
    if h.bandwidth_gbps:
        ev.append(f"memory bandwidth: {h.bandwidth_gbps:.0f} GB/s, the memory family's best on that GPU ({h.bandwidth_id})")
        how = (f"the memory-bound kinds' time above the time their bytes take at {h.bandwidth_gbps:.0f} GB/s "
               f"(each tensor moved once)")
    else:
        ev.append("no memory-family record for that GPU: the floor's time is unknown, so the bound is the kinds' "
                  "whole time; run the memory family for a tighter one")
        how = "the memory-bound kinds' whole time (no memory-family record for the byte floor's time)"
    ev.append(f"source: the train record's time_<kind>_ms and <kind>_floor_bytes; {h.fused_layers} of its 53 batch "
              f"norms ran with their ReLU / add fused")
    mb = sum(h.kinds_ms.values())
    summary = (f"on the fused step ({where}), a compiler could still save at most {fmt_pct(h.share, 0)} of it "
               f"({h.savings_ms:.2f} of {h.step_ms:.2f} ms): {how}; the memory-bound kinds take {mb:.2f} ms, "
               f"the convolutions are not fused away")
    return Item("fusion", title, PASS, summary, ev)


def check_host_bound(data: ReportData) -> Item:
    """Whether a loop that issues the step call by call (frameworks' eager mode) keeps up with the
    GPU: from the train records' graph and call-by-call figures. Warns when the recommended batch
    is host-bound (CUDA graphs, or XLA, would then pay)."""
    title = "Host-bound small batches: CUDA graphs"
    rows = derive_train.host_bound(data)
    if not rows:
        return Item("host", title, NOT_MEASURED, "no train record with the call-by-call step (eager_images_per_s): "
                    "run the train family")
    statuses, ev, parts = [], [], []
    for h in rows:
        name = f"{derive.gpu_label(h.where)} {h.precision} {h.layout}"
        ev.append(f"{name}: call by call / graph images/s " +
                  ", ".join(f"b{b} {fmt_pct(r, 0)}" for b, r in sorted(h.ratios.items())))
        if h.largest is None:
            statuses.append(PASS)
            parts.append(f"{name}: the host keeps up at every measured batch")
            continue
        rec_bound = h.recommended is not None and h.recommended <= h.largest
        statuses.append(WARN if rec_bound else PASS)
        parts.append(f"{name}: host-bound up to batch {h.largest} (call by call {fmt_pct(h.ratios[h.largest], 0)} "
                     f"of the graph step's images/s there)" +
                     (f"; the recommended batch {h.recommended} is among them: use CUDA graphs "
                      f"(torch.cuda.graphs, XLA) or a larger batch" if rec_bound else ""))
    ev.append(f"source: train records, eager_images_per_s / images_per_s; host-bound below {fmt_pct(derive_train.HOST_BOUND, 0)}")
    return Item("host", title, worst(statuses), "; ".join(parts), ev)


def check_memory(data: ReportData) -> Item:
    title = "Memory use at the recommended batch size"
    trained = check_train_memory(data, title)
    if trained is not None:
        return trained
    recs = derive.batch_recommendations(data)
    if not recs:
        return Item("memory", title, NOT_MEASURED, "no batch recommendation (no network conv results)")
    statuses, ev, fractions = [], [], []
    for r in recs:
        if r.batch is None:
            statuses.append(WARN)
            ev.append(f"{r.label}: no batch recommended" + (f" - {r.reason}" if r.reason else "") + " (warn)")
            continue
        ips = f", {r.train_images_per_s:,.0f} images/s" if r.train_images_per_s else ""
        if r.one_batch:
            mem = f", {fmt_pct(r.memory_fraction, 0)} of GPU memory" if r.memory_fraction is not None else ""
            ev.append(f"{r.label}: one batch measured (batch {r.batch}{ips}{mem}): run the conv sweep for a "
                      f"recommendation")
            if r.memory_fraction is not None:
                fractions.append(r.memory_fraction)
                limit = r.limit if r.limit else MEMORY_PASS
                statuses.append(PASS if r.memory_fraction <= limit else WARN)
            continue
        if r.memory_fraction is None:
            ev.append(f"{r.label}: batch {r.batch}{ips}; memory use unknown")
            continue
        limit = r.limit if r.limit else MEMORY_PASS
        st = PASS if r.memory_fraction <= limit else WARN if r.memory_fraction <= limit + (MEMORY_WARN - MEMORY_PASS) \
            else FAIL
        statuses.append(st)
        fractions.append(r.memory_fraction)
        ev.append(f"{r.label}: batch {r.batch}{ips}, {fmt_pct(r.memory_fraction, 0)} of GPU memory "
                  f"(limit {fmt_pct(limit, 0)}; {st})")
    for p in derive.conv_network(data):
        if p.oom:
            ev.append(f"{derive.gpu_label(p.where)} {p.precision}{' ' + p.layout if p.layout else ''}: "
                      f"batch {p.batch} out of memory")
    ev.append(f"source: {recs[0].source}")
    single = [r for r in recs if r.one_batch]
    if not statuses:
        if single and len(single) == len(recs):
            return Item("memory", title, NOT_MEASURED, "one batch measured: run the conv sweep for a recommendation",
                        ev)
        return Item("memory", title, NOT_MEASURED, "recommended batch known but not its memory use", ev)
    status = worst(statuses)
    top = max(fractions) if fractions else None
    unrecommended = sum(1 for r in recs if r.batch is None)
    if status == PASS and len(single) == len(recs):
        summary = (f"one batch measured (at most {fmt_pct(top, 0)} of GPU memory): run the conv sweep for a "
                   f"recommendation")
    elif status == PASS:
        summary = f"at most {fmt_pct(top, 0)} of GPU memory at the recommended batch"
    elif status == FAIL:
        summary = f"up to {fmt_pct(top, 0)} of GPU memory: expect out-of-memory errors in practice"
    elif top is not None and top > min(r.limit or MEMORY_PASS for r in recs):
        summary = f"up to {fmt_pct(top, 0)} of GPU memory: little room for fragmentation or larger inputs"
    else:
        summary = f"no batch recommended for {unrecommended} precision/layout series (see the evidence)"
    return Item("memory", title, status, summary, ev)


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


def build_checklist(data: ReportData) -> list[Item]:
    return [
        check_compute_capability(data),
        check_pcie(data),
        check_h2d(data),
        check_pinned_pageable(data),
        check_distribution(data),
        check_mixed_precision(data),
        check_clocks(data),
        check_memory(data),
        check_fusion(data),
        check_host_bound(data),
        check_run(data),
    ]
