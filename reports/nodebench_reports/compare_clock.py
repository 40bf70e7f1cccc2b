"""Machines and clocks in ``compare``: whether BASE and NEW ran on the same GPUs and hosts, and
whether a slowdown is the clock's.

Two runs on two machines of one model (or on one machine whose GPU ran at a lower clock) differ
by clock as much as by anything else: an H200 that holds a lower SM clock under its power cap is
slower at every clock-bound case. A record's clock-normalised rate (``<metric>_per_ghz``,
docs/SCHEMA.md "Clock-normalised rates": the rate over the SM clock measured during the case)
separates the two. A case that is a regression by its figure of merit is reported as
``slower: clock`` when its per-GHz figure is *not* a regression by the same rule -- its slowdown
factor, with the case's own noise (``noise_used``, times sqrt(1 + 1/k) for k base runs), is not
significantly above 1 at ``alpha`` or cannot reach ``1 + threshold``. Such cases are counted apart
from slowdowns at the same clock; ``--fail-on`` says which of the two fail the comparison.
"""

from __future__ import annotations

import math

from scipy import stats as _st

SLOWER_CLOCK = "slower: clock"
FAIL_ON = ("regression", "clock")   # what may fail a comparison; missing cases always do


def parse_fail_on(text: str) -> tuple[str, ...]:
    """'regression,clock' -> ('regression', 'clock'); ValueError naming a bad or empty item."""
    items = tuple(x.strip() for x in text.split(","))
    for x in items:
        if x not in FAIL_ON:
            raise ValueError(f"'{x}' is not one of {', '.join(FAIL_ON)}")
    return items


def _hosts(run) -> set[str]:
    hosts = {run.hostname}
    for node in run.environment.get("nodes") or []:
        if isinstance(node, dict) and isinstance(node.get("hostname"), str):
            hosts.add(node["hostname"])
    return hosts


def _uuids(run) -> set[str]:
    gpus = list(run.gpus)
    for node in run.environment.get("nodes") or []:
        env = node.get("environment") if isinstance(node, dict) else None
        if isinstance(env, dict):
            gpus += env.get("gpus") or []
    return {g["uuid"] for g in gpus if isinstance(g, dict) and isinstance(g.get("uuid"), str) and g["uuid"]}


def machine_differences(bases: list, new) -> list[str]:
    """One line per base that ran on other hosts or other GPUs (by UUID) than NEW; empty when
    every base ran where NEW did (UUIDs unknown on either side are not called different)."""
    lines = []
    nh, nu = _hosts(new), _uuids(new)
    for b in bases:
        bh, bu = _hosts(b), _uuids(b)
        parts = []
        if bh != nh:
            parts.append(f"hosts {', '.join(sorted(bh))} -> {', '.join(sorted(nh))}")
        if bu and nu and bu != nu:
            parts.append(f"GPUs (UUID) {', '.join(sorted(bu))} -> {', '.join(sorted(nu))}")
        if parts:
            lines.append(f"different machines: {b.path} and {new.path} ran on different " + "; ".join(parts) +
                         ": clocks, cooling and power limits differ between machines (see 'slower: clock')")
    return lines


def machines_json(bases: list, new) -> dict:
    return {"same_hosts": all(_hosts(b) == _hosts(new) for b in bases),
            "same_gpus": all(not (_uuids(b) and _uuids(new)) or _uuids(b) == _uuids(new) for b in bases),
            "base": [{"path": b.path, "hosts": sorted(_hosts(b)), "gpu_uuids": sorted(_uuids(b))} for b in bases],
            "new": {"path": new.path, "hosts": sorted(_hosts(new)), "gpu_uuids": sorted(_uuids(new))}}


def clock_explains(case, alpha: float, threshold: float) -> bool:
    """True when the case's slowdown is not seen at the same clock: its metric's per-GHz figure
    (case.clock_normalised) is no regression by the comparison's rule, with the case's noise."""
    name = f"{case.metric}_per_ghz"
    change = case.clock_normalised.get(name)
    if change is None or case.better != "higher" or case.noise_used is None:
        return False
    ratio = 1.0 / (1.0 + change / 100.0)  # slowdown factor of a rate: base / new
    if not ratio > 0 or not math.isfinite(ratio):
        return False
    sigma = case.noise_used * math.sqrt(1.0 + 1.0 / max(1, case.base_runs))
    lr = math.log(ratio)
    z = float(_st.norm.isf(alpha))
    same_clock_regression = lr > z * sigma and math.exp(lr + z * sigma) >= 1.0 + threshold
    return not same_clock_regression
