"""The burn family in the report (benchmarks/burn/README.md): one figure per GPU from the burn's
per-second timeline (``details.timeline``): the GEMM rate, the SM and memory clocks, the temperature
(with the GPU's own slowdown temperature) and the power (with its limit) against time, the seconds in
thermal or hardware slowdown shaded; and a checklist item per file: faulty elements, memory errors and
the burn's own summary (``details.summary``) as the harness wrote them, never judged again here."""

from __future__ import annotations

from .. import plots
from ..checklist import FAIL, NOT_MEASURED, PASS, WARN, Item, placed, worst
from ..conventions import is_number
from ..load import ReportData
from ..records import gpu_label, where
from ..metrics import LOWER, declare, metric

FAMILY = "burn"
PRIMARY = ("sustained_gemm_tflops",)
METRICS = declare(metric("tflops", "TFLOPS"), "first_minute_gemm_tflops", "sustained_gemm_tflops", "memory_test_gbps", "max_temperature_c",
                  "mean_power_w", metric("faulty_elements_count", better=LOWER),
                  metric("memory_errors_count", better=LOWER))
# After the input family's figure (90), before the example's (95); the item after train's (82).
PLOT_ORDER, CHECK_ORDER = 92, 85
PLOT_KEY = "burn"
# NVML clocks-event reasons that slow the GPU down (thermal, HW slowdown, power brake): as the harness's
# burn::is_slowdown.
SLOWDOWN_BITS = 0x8 | 0x20 | 0x40 | 0x80


def group_key(rec: dict) -> tuple:
    """(Where,): one GPU's burn."""
    return (where(rec),)


def _series(timeline: list, key: str) -> tuple[list, list]:
    xs, ys = [], []
    for s in timeline:
        if is_number(s.get("t_s")) and is_number(s.get(key)):
            xs.append(float(s["t_s"]))
            ys.append(float(s[key]))
    return xs, ys


def slowdown_intervals(timeline: list) -> list[tuple[float, float]]:
    """The [start, end) seconds in thermal or hardware slowdown, from the one-second samples (a sample
    covers the second before its t_s), consecutive ones merged."""
    out: list[list[float]] = []
    prev_t = 0.0
    for s in timeline:
        t = s.get("t_s")
        if not is_number(t):
            continue
        mask = s.get("throttle_mask")
        if isinstance(mask, int) and mask & SLOWDOWN_BITS:
            if out and abs(out[-1][1] - prev_t) < 1e-9:
                out[-1][1] = float(t)
            else:
                out.append([prev_t, float(t)])
        prev_t = float(t)
    return [(a, b) for a, b in out]


def burns(data: ReportData) -> list[dict]:
    """The burn records with a timeline (ok or wrong: a wrong burn's timeline is the evidence)."""
    return [r for r in data.family(FAMILY, status=None)
            if r["status"] in ("ok", "wrong") and isinstance((r.get("details") or {}).get("timeline"), list)]


def plot_burn(data: ReportData, rec: dict) -> plots.Plot:
    det = rec.get("details") or {}
    tl = det.get("timeline") or []
    label = gpu_label(where(rec))
    plot = plots.Plot(f"{PLOT_KEY}_{'_'.join(str(g) for g in rec['gpus'])}", f"Burn: {label} under sustained load",
                      f"{label}, {det.get('precision', '?')} GEMM and the memory test for "
                      f"{(det.get('summary') or {}).get('duration_s', 0):.0f} s: rate, clocks, temperature and power "
                      "each second (NVML); red: seconds in thermal or hardware slowdown.", order=PLOT_ORDER)
    if not tl:
        plot.missing = "not measured: the burn has no timeline"
        return plot
    facts = det.get("gpu_facts") or {}
    shaded = slowdown_intervals(tl)
    with plots.plt.rc_context(plots._STYLE):
        fig, axes = plots.plt.subplots(4, 1, figsize=(8.0, 9.0), sharex=True, layout="constrained")
        rate, clock, temp, power = axes
        rate.plot(*_series(tl, "gemm_tflops"), color=plots._color(0), label="GEMM TFLOPS")
        rate.set_ylabel("TFLOPS")
        rate.set_ylim(bottom=0)
        rate.set_title(f"{label}: GEMM rate")
        clock.plot(*_series(tl, "sm_clock_mhz"), color=plots._color(1), label="SM clock")
        clock.plot(*_series(tl, "mem_clock_mhz"), color=plots._color(2), label="memory clock")
        clock.set_ylabel("MHz")
        clock.set_title("Clocks")
        temp.plot(*_series(tl, "temperature_c"), color=plots._color(3), label="temperature")
        if is_number(facts.get("slowdown_temperature_c")):
            temp.axhline(float(facts["slowdown_temperature_c"]), color="black", ls="--", lw=1, label="slowdown (NVML)")
        temp.set_ylabel("°C")
        temp.set_title("Temperature")
        power.plot(*_series(tl, "power_w"), color=plots._color(4), label="power")
        lx, ly = _series(tl, "power_limit_w")
        if lx:
            power.plot(lx, ly, color="black", ls="--", lw=1, label="power limit")
        power.set_ylabel("W")
        power.set_ylim(bottom=0)
        power.set_title("Power")
        power.set_xlabel("seconds since the burn began")
        for ax in axes:
            for a, b in shaded:
                ax.axvspan(a, b, color="red", alpha=0.2, lw=0)
            plots._legend(ax)
        plot.png = plots._png(fig)
    return plot


def check_burn(data: ReportData) -> Item:
    title = "Burn: every GPU correct, cool and steady under sustained load"
    recs = data.family(FAMILY, status=None)
    if not recs:
        return Item("burn", title, NOT_MEASURED, "no burn in these results")
    statuses, ev = [], []
    for r in recs:
        det, sm = r.get("details") or {}, (r.get("details") or {}).get("summary") or {}
        label = gpu_label(where(r))
        if r["status"] == "wrong":
            statuses.append(FAIL)
            ev.append(f"{label}: {r.get('reason')}")
            continue
        if r["status"] != "ok":
            statuses.append(WARN)
            ev.append(f"{label}: {r['status']}: {r.get('reason')}")
            continue
        slow = sm.get("slowdown_pct") if is_number(sm.get("slowdown_pct")) else 0
        statuses.append(WARN if slow > 0 or det.get("cut_short") else PASS)
        ev.append(f"{label}: sustained {sm.get('sustained_tflops', 0):.1f} TFLOPS {det.get('precision', '')} "
                  f"(first minute {sm.get('first_minute_tflops', 0):.1f}), mean {sm.get('mean_power_w', 0):.0f} W, "
                  f"{det.get('faulty_elements', 0)} faulty elements, "
                  f"{(det.get('memory_test') or {}).get('errors', 0)} memory errors; {sm.get('slowdown_evidence', '')}"
                  + ("; cut short" if det.get("cut_short") else ""))
    status = worst(statuses)
    summary = {FAIL: "wrong results or memory errors under load", WARN: "slowdown under load or a burn cut short",
               PASS: "no faulty element, no memory error, no slowdown"}.get(status, "")
    return Item("burn", title, status, summary, ev + ["verdicts: nodebench validate --level 4 (docs/VALIDATE.md)"])


def figures(data: ReportData) -> list:
    return [plot_burn(data, r) for r in burns(data)]


def checklist_items(data: ReportData) -> list:
    return [placed(check_burn(data), CHECK_ORDER)] if data.has_family(FAMILY) else []
