"""The statistical test behind `compare`: correct, catches planted slowdowns, does not flag noise."""

from __future__ import annotations

import math

import numpy as np
import pytest

from nodebench_reports.compare import REGRESSION, compare_case
from nodebench_reports.stats import assess_change, mannwhitney_u


def rec(samples, status="ok"):
    samples = [float(x) for x in samples]
    return {"id": "gemm/x", "gpus": [0], "family": "gemm", "status": status,
            "reason": None if status == "ok" else "why", "samples_s": samples,
            "stats": {"median": float(np.median(samples))} if samples else None}


def draw(rng, n=20, cv=0.03, scale=1.0, outliers=0.0):
    x = scale * rng.lognormal(0.0, cv, n)
    if outliers:
        x[rng.random(n) < outliers] *= 1.5
    return x


def flagged(rng, pairs, *, slow=1.0, test="mannwhitney", threshold=0.05, alpha=0.01, noise_floor=0.02, **kw):
    count = 0
    for _ in range(pairs):
        base = draw(rng, **kw)
        new = draw(rng, scale=slow, **kw)
        count += compare_case(rec(base), rec(new), threshold, alpha, test, noise_floor=noise_floor).regression
    return count


# ----------------------------------------------------------------------------------------------
# the within-run test (scipy.stats.mannwhitneyu)


def test_identical_samples_give_p_one():
    x = np.full(10, 2.5e-3)
    assert mannwhitney_u(x, x.copy(), "greater") == 1.0
    case = compare_case(rec(x), rec(x))
    assert case.verdict == "unchanged" and not case.regression


# ----------------------------------------------------------------------------------------------
# planted regressions are caught


@pytest.mark.parametrize("test", ["mannwhitney", "bootstrap"])
def test_planted_10pct_slowdown_is_caught(test):
    rng = np.random.default_rng(42)
    pairs = 200 if test == "mannwhitney" else 60
    caught = flagged(rng, pairs, slow=1.10, test=test, n=20, cv=0.03)
    assert caught >= 0.99 * pairs, f"{test}: caught {caught} of {pairs} planted 10% slowdowns"


def test_planted_slowdown_with_few_noisy_samples_is_mostly_caught():
    # judged on the samples alone (no between-run noise assumed)
    rng = np.random.default_rng(43)
    caught = flagged(rng, 200, slow=1.10, n=10, cv=0.05, noise_floor=None)
    assert caught >= 0.85 * 200, caught


def test_noise_floor_costs_sensitivity_as_computed():
    """With the 2% floor a change must exceed z(0.99) * 2% * sqrt(2) = 6.6% in the log ratio to be
    significant: a planted 10% (log 0.0953) with within-run scatter of the log ratio of about
    sqrt(2) * 1.2533 * 5% / sqrt(10) = 2.8% passes in Phi((0.0953 - 0.0658) / 0.028) ~ 85% of pairs
    (before the samples' own test also has to pass); a planted 5% in almost none."""
    from scipy.stats import norm
    cut = norm.isf(0.01) * 0.02 * math.sqrt(2)
    spread = math.sqrt(2) * 1.2533 * 0.05 / math.sqrt(10)
    expect10 = norm.sf((cut - math.log(1.10)) / spread)
    expect5 = norm.sf((cut - math.log(1.05)) / spread)
    rng = np.random.default_rng(44)
    pairs = 300
    got10 = flagged(rng, pairs, slow=1.10, n=10, cv=0.05) / pairs
    got5 = flagged(rng, pairs, slow=1.05, n=10, cv=0.05) / pairs
    assert got10 <= expect10 + 0.06 and got10 >= expect10 - 0.12, (got10, expect10)
    assert got5 <= expect5 + 0.06, (got5, expect5)


def test_slowdown_details():
    rng = np.random.default_rng(1)
    base, new = draw(rng), draw(rng, scale=1.2)
    case = compare_case(rec(base), rec(new))
    assert case.verdict == REGRESSION and case.regression
    assert case.ratio == pytest.approx(np.median(new) / np.median(base))
    assert case.change_pct == pytest.approx((case.ratio - 1) * 100)
    assert case.p_value < 1e-6


def test_improvement_is_not_a_regression():
    rng = np.random.default_rng(2)
    case = compare_case(rec(draw(rng)), rec(draw(rng, scale=0.85)))
    assert case.verdict == "improvement" and not case.regression


# ----------------------------------------------------------------------------------------------
# noise is not flagged


@pytest.mark.parametrize("label, kw", [
    ("lognormal 3%, 20 samples", dict(n=20, cv=0.03)),
    ("lognormal 5%, 10 samples", dict(n=10, cv=0.05)),
    ("2% noise with 5% outliers, 30 samples", dict(n=30, cv=0.02, outliers=0.05)),
])
def test_identical_distributions_flag_at_most_1pct(label, kw):
    rng = np.random.default_rng(sum(map(ord, label)))
    pairs = 500
    count = flagged(rng, pairs, **kw)
    assert count <= pairs // 100, f"{label}: {count} of {pairs} noise pairs flagged"


def test_identical_distributions_bootstrap_flag_at_most_1pct():
    rng = np.random.default_rng(99)
    pairs = 150
    count = flagged(rng, pairs, test="bootstrap", n=20, cv=0.03)
    assert count <= max(1, pairs // 100), count


def test_run_to_run_offset_below_threshold_is_not_flagged():
    """Whole-run shifts of ~2% (clocks, temperature) are significant but below the 5% threshold."""
    rng = np.random.default_rng(5)
    count = 0
    for _ in range(500):
        base = draw(rng, n=30, cv=0.01)
        new = draw(rng, n=30, cv=0.01, scale=float(rng.normal(1.0, 0.01)))
        count += compare_case(rec(base), rec(new)).regression
    assert count <= 5, count


def test_test_is_calibrated_without_threshold():
    """With the size threshold at 0 the false-positive rate is about alpha (one-sided)."""
    rng = np.random.default_rng(8)
    pairs = 500
    count = flagged(rng, pairs, threshold=0.0, n=20, cv=0.03)
    assert count <= 0.025 * pairs, count


# ----------------------------------------------------------------------------------------------
# settings and edge cases


def test_threshold_and_alpha_are_used():
    # judged on the samples alone (noise_floor=None): 3% with 0.5% scatter is certain, so the
    # threshold decides
    rng = np.random.default_rng(3)
    base, new = draw(rng, n=30, cv=0.005), draw(rng, n=30, cv=0.005, scale=1.03)
    assert compare_case(rec(base), rec(new), threshold=0.05, noise_floor=None).verdict == "unchanged"
    assert compare_case(rec(base), rec(new), threshold=0.02, noise_floor=None).regression
    # significance is required too: no p can be below 1e-30 with 30+30 samples
    assert not compare_case(rec(base), rec(new), threshold=0.02, alpha=1e-30, noise_floor=None).regression
    # with the default 2% between-run floor, one run's 3% is within run-to-run noise
    case = compare_case(rec(base), rec(new), threshold=0.02)
    assert not case.regression and case.noise_source == "floor" and case.p_between > 0.1


def test_too_few_samples_is_not_a_regression_but_noted():
    base, new = [1.0, 1.01, 0.99], [1.5, 1.52, 1.49]
    case = compare_case(rec(base), rec(new))
    assert not case.regression and case.verdict == "slower, not significant"
    assert "cannot go below" in case.note
    case = compare_case(rec([1.0]), rec([2.0]))
    assert not case.regression and case.verdict == "not testable" and case.p_value is None


def test_bootstrap_reports_interval():
    rng = np.random.default_rng(4)
    base, new = draw(rng), draw(rng, scale=1.2)
    t = assess_change(base, new, float(np.median(base)), float(np.median(new)), test="bootstrap", label="x")
    assert t.ci_low < t.ratio < t.ci_high and t.ci_low > 1.1
    again = assess_change(base, new, float(np.median(base)), float(np.median(new)), test="bootstrap", label="x")
    assert (again.p_value, again.ci_low) == (t.p_value, t.ci_low)  # deterministic per case


@pytest.mark.parametrize("base_status, new_status, verdict, regression", [
    ("ok", "failed", "status regression", True),
    ("ok", "wrong", "status regression", True),
    ("ok", "skipped", "status regression", True),
    ("skipped", "failed", "status regression", True),
    ("failed", "ok", "status fixed", False),
    ("failed", "failed", "not ok on both", False),
    ("failed", "wrong", "status change", False),
])
def test_status_changes(base_status, new_status, verdict, regression):
    b = rec([1.0, 1.1] if base_status == "ok" else [], base_status)
    n = rec([1.0, 1.1] if new_status == "ok" else [], new_status)
    case = compare_case(b, n)
    assert (case.verdict, case.regression) == (verdict, regression)


def test_skipped_on_both_is_ignored():
    assert compare_case(rec([], "skipped"), rec([], "skipped")) is None


def test_min_p_with_thousands_of_samples_does_not_overflow():
    # Real result files keep up to 2000 samples per case: C(4000, 2000) is far beyond a float.
    from nodebench_reports.stats import _mannwhitney_min_p
    assert _mannwhitney_min_p(2000, 2000) == 0.0
    assert abs(_mannwhitney_min_p(3, 3) - 1 / 20) < 1e-12
    assert abs(_mannwhitney_min_p(10, 12) - 1 / 646646) < 1e-15
