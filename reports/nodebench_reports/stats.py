"""Statistical tests behind ``compare``: one case, two runs.

A change is judged against two kinds of noise, and must stand out from the larger of them:

* **within-run** noise: how much the samples of one run scatter. Tested on the per-sample times
  with ``scipy.stats.mannwhitneyu`` (one-sided, in the direction of the change) or
  ``scipy.stats.bootstrap`` of the ratio of medians (``--test bootstrap``).
* **between-run** noise: how much a case's median moves from one run to the next on an unchanged
  machine (fresh process, other algorithm choices, clocks, placement). The samples of one run say
  nothing about it: with 2000 samples per run, a 7% offset between two runs of the same machine
  is "significant" at p=1e-34. It comes from several baseline runs, the record's ``run_to_run``,
  the history database, or a documented floor (see :mod:`.compare`). Tested as a normal test
  on the log ratio of the medians: ``t = ln(ratio) / (sigma * sqrt(1 + 1/k))``, with ``sigma``
  the relative between-run spread of one run's median and ``k`` the number of baseline runs
  whose medians were averaged; Student's t with ``runs - 1`` degrees of freedom when sigma was
  estimated from that many runs (a spread seen in 3 runs is itself uncertain), normal for the
  assumed floor.

The p-value of the case is the larger of the two one-sided p-values (both tests must reject),
and the interval of the ratio uses the larger of the two noises.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass

import numpy as np
from scipy import stats as _st

TESTS = ("mannwhitney", "bootstrap")
N_BOOT = 4000


@dataclass
class ChangeTest:
    ratio: float               # slowdown factor: new/base time (> 1 is slower, i.e. worse)
    p_value: float | None      # one-sided, in the direction of the change; None: not testable
    ci_low: float | None       # one-sided 1-alpha bounds of the ratio, from the larger noise
    ci_high: float | None
    min_p: float | None        # smallest p the within-run test can reach with these sample counts
    note: str = ""
    p_within: float | None = None
    p_between: float | None = None
    noise_within: float | None = None    # relative standard error of one run's median
    noise_between: float | None = None   # relative between-run spread of one run's median


def ratio_of(base_median: float, new_median: float) -> float:
    if base_median > 0:
        return new_median / base_median
    return 1.0 if new_median == 0 else math.inf


def _mannwhitney_min_p(n: int, m: int) -> float:
    # The most extreme one-sided outcome (complete separation) has probability 1 / C(n+m, n).
    # In log space: with thousands of samples C(n+m, n) is beyond a float (it then rounds to 0).
    log_c = math.lgamma(n + m + 1) - math.lgamma(n + 1) - math.lgamma(m + 1)
    return math.exp(-log_c) if log_c < 700 else 0.0


def mannwhitney_u(base: np.ndarray, new: np.ndarray, alternative: str) -> float:
    """One-sided Mann-Whitney U; alternative "greater": new tends to be larger than base."""
    base, new = np.asarray(base, dtype=float), np.asarray(new, dtype=float)
    if np.all(base == base[0]) and np.all(new == base[0]):
        return 1.0  # all values equal: no evidence either way (scipy returns nan here)
    p = float(_st.mannwhitneyu(new, base, alternative=alternative, method="auto").pvalue)
    return 1.0 if math.isnan(p) else min(1.0, p)


def mannwhitney(base: np.ndarray, new: np.ndarray, slower: bool) -> float:
    return mannwhitney_u(base, new, "greater" if slower else "less")


def _median_ratio(b, n, axis=-1):
    mb = np.median(b, axis=axis)
    mn = np.median(n, axis=axis)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(mb > 0, mn / np.where(mb > 0, mb, 1.0), np.where(mn > 0, np.inf, 1.0))


def bootstrap(base: np.ndarray, new: np.ndarray, alpha: float, seed: int, n_boot: int = N_BOOT):
    """scipy.stats.bootstrap of the ratio of medians (new/base), percentile method.

    Returns (p_slower, p_faster, low, high): the one-sided p-values are the shares of bootstrap
    ratios on the other side of 1 (add-one smoothed), the interval is alpha .. 1-alpha."""
    res = _st.bootstrap((np.asarray(base, float), np.asarray(new, float)), _median_ratio, n_resamples=n_boot,
                        vectorized=True, paired=False, confidence_level=1.0 - 2.0 * alpha, method="percentile",
                        random_state=np.random.default_rng(seed))
    ratios = np.asarray(res.bootstrap_distribution)
    p_slower = (np.count_nonzero(ratios <= 1.0) + 1) / (n_boot + 1)
    p_faster = (np.count_nonzero(ratios >= 1.0) + 1) / (n_boot + 1)
    return float(p_slower), float(p_faster), float(res.confidence_interval.low), float(res.confidence_interval.high)


def seed_for(label: str) -> int:
    """A deterministic seed per case, so that reruns of compare give identical answers."""
    return zlib.crc32(label.encode("utf-8"))


def between_run_spread(medians) -> float:
    """The between-run noise of a case, as nodebench defines it everywhere (compare, the history's
    case_noise, ``run --runs N``'s ``run_to_run.cv``, the noise prior): the sample standard deviation of
    the natural log of its runs' medians (two or more, all > 0). A ratio of two runs' figures is a
    difference of logs, so this is the scale a slowdown factor is judged on; for small spreads it is
    the medians' stddev/mean."""
    return float(np.std(np.log(np.asarray(medians, dtype=float)), ddof=1))


def robust_rel_spread(values) -> float:
    """The spread of values robust to outliers, relative to their median: MAD scaled to a normal
    standard deviation (scipy's ``median_abs_deviation(scale="normal")``) over the median; 0 without one."""
    x = np.asarray(values, dtype=float)
    med = float(np.median(x))
    return float(_st.median_abs_deviation(x, scale="normal")) / med if med else 0.0


def geometric_mean(values) -> float:
    """scipy's ``gmean``; one value is itself (exactly: exp(log(x)) may differ from x in its last bit,
    and a comparison of a file with itself must find the ratio 1)."""
    values = list(values)
    return float(values[0]) if len(values) == 1 else float(_st.gmean(np.asarray(values, dtype=float)))


def median_rel_se(samples) -> float:
    """Relative standard error of the median of one run's samples (robust scale: MAD)."""
    x = np.asarray(samples, dtype=float)
    med = float(np.median(x))
    if len(x) < 2 or med <= 0:
        return 0.0
    sd = float(_st.median_abs_deviation(x, scale="normal"))
    # 1.2533 = sqrt(pi/2): the median's standard error relative to the mean's for normal data
    return 1.2533 * sd / math.sqrt(len(x)) / med


def _quantile(alpha: float, df: int | None) -> float:
    return float(_st.t.isf(alpha, df)) if df else float(_st.norm.isf(alpha))


def between_run_p(ratio: float, sigma: float, base_runs: int = 1, df: int | None = None) -> float:
    """One-sided p that the medians differ by `ratio` from between-run noise `sigma` alone
    (`df`: degrees of freedom of the estimate of sigma; None: sigma known)."""
    if not ratio > 0 or not math.isfinite(ratio):
        return 0.0
    d = abs(math.log(ratio))
    scale = sigma * math.sqrt(1.0 + 1.0 / max(1, base_runs))
    if scale <= 0:
        return 0.0 if d > 0 else 1.0
    return float(_st.t.sf(d / scale, df)) if df else float(_st.norm.sf(d / scale))


def assess_change(base_samples, new_samples, base_median: float, new_median: float, *, test: str = "mannwhitney",
                  alpha: float = 0.01, label: str = "", ratio: float | None = None,
                  between: float | None = None, base_runs: int = 1, between_df: int | None = None) -> ChangeTest:
    """Compare two sets of per-sample times.

    `ratio` is the slowdown factor (> 1 worse); by default the ratio of the medians (new/base).
    `between` is the between-run noise (relative spread of one run's median), None when unknown:
    then only the within-run test is made."""
    if test not in TESTS:
        raise ValueError(f"unknown test {test!r}")
    if ratio is None:
        ratio = ratio_of(base_median, new_median)
    base = np.asarray(base_samples, dtype=float)
    new = np.asarray(new_samples, dtype=float)
    if len(base) < 2 or len(new) < 2:
        return ChangeTest(ratio, None, None, None, None,
                          note=f"too few samples to test ({len(base)} base, {len(new)} new)",
                          noise_between=between)
    slower = ratio >= 1.0
    # The samples are times: slower means the new times tend to be larger. When the direction
    # comes from a metric (ratio given), the samples are tested in that direction.
    note = ""
    min_p = None
    if test == "mannwhitney":
        p_within = mannwhitney(base, new, slower)
        min_p = _mannwhitney_min_p(len(base), len(new))
        if min_p >= alpha:
            note = f"with {len(base)}+{len(new)} samples p cannot go below {min_p:.3g}"
    else:
        p_slower, p_faster, _low, _high = bootstrap(base, new, alpha, seed_for(label))
        p_within = p_slower if slower else p_faster
    within = math.sqrt(median_rel_se(base) ** 2 / max(1, base_runs) + median_rel_se(new) ** 2)
    within_one = median_rel_se(new)
    p = p_within
    p_between = None
    sigma_d = within
    if between is not None:
        p_between = between_run_p(ratio, between, base_runs, between_df)
        p = max(p_within, p_between)
        sigma_d = max(within, between * math.sqrt(1.0 + 1.0 / max(1, base_runs)))
    z = _quantile(alpha, between_df if between is not None and sigma_d > within else None)
    lr = math.log(ratio) if ratio > 0 and math.isfinite(ratio) else 0.0
    low, high = math.exp(lr - z * sigma_d), math.exp(lr + z * sigma_d)
    return ChangeTest(ratio, p, low, high, min_p, note, p_within, p_between, within_one, between)
