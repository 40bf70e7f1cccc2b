"""Statistical tests on per-sample times of one case in two runs.

Two tests are offered:

* ``mannwhitney`` (default): one-sided Mann-Whitney U on the raw sample times, in the direction
  of the observed change of the medians. Distribution-free, robust to outliers. Implemented here
  (exact null distribution for small samples without ties, normal approximation with tie and
  continuity correction otherwise); the tests check it against scipy.
* ``bootstrap``: percentile bootstrap of the ratio of medians (new/base); the one-sided p-value
  is the share of bootstrap ratios on the other side of 1, and the interval is the
  ``alpha`` .. ``1 - alpha`` percentile interval of the ratio.

A change is judged on two things at once: its size (the ratio of the medians against a
threshold) and its significance (p against alpha). Either alone is not enough: with many
samples tiny changes are significant, with few samples large changes can be noise.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass

import numpy as np

TESTS = ("mannwhitney", "bootstrap")


@dataclass
class ChangeTest:
    ratio: float               # new median / base median (time: > 1 is slower)
    p_value: float | None      # one-sided, in the direction of the change; None: not testable
    ci_low: float | None       # bootstrap interval of the ratio (bootstrap test only)
    ci_high: float | None
    min_p: float | None        # smallest p the test can reach with these sample counts
    note: str = ""


def ratio_of(base_median: float, new_median: float) -> float:
    if base_median > 0:
        return new_median / base_median
    return 1.0 if new_median == 0 else math.inf


def _mannwhitney_min_p(n: int, m: int) -> float:
    # The most extreme one-sided outcome (complete separation) has probability 1 / C(n+m, n).
    # In log space: with thousands of samples C(n+m, n) is beyond a float (it then rounds to 0).
    log_c = math.lgamma(n + m + 1) - math.lgamma(n + 1) - math.lgamma(m + 1)
    return math.exp(-log_c) if log_c < 700 else 0.0


EXACT_MAX_PAIRS = 400  # exact null distribution when n*m is at most this and there are no ties


def _rank(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Average ranks (1-based) and the sizes of the groups of tied values."""
    order = np.argsort(values, kind="mergesort")
    ordered = values[order]
    starts = np.r_[True, ordered[1:] != ordered[:-1]]
    group = np.cumsum(starts) - 1
    bounds = np.r_[np.flatnonzero(starts), len(values)]
    avg = 0.5 * (bounds[:-1] + 1 + bounds[1:])  # mean of ranks bounds[g]+1 .. bounds[g+1]
    ranks = np.empty(len(values))
    ranks[order] = avg[group]
    return ranks, np.diff(bounds)


def _u_counts(n: int, m: int) -> list[int]:
    """Number of arrangements giving U = 0..n*m: coefficients of the Gaussian binomial [n+m, n]_q."""
    coeffs = [1]
    for i in range(1, n + 1):
        grown = coeffs + [0] * (m + i)
        for k, c in enumerate(coeffs):           # times (1 - q^(m+i))
            grown[k + m + i] -= c
        for k in range(i, len(grown)):           # divided by (1 - q^i)
            grown[k] += grown[k - i]
        coeffs = grown[: i * m + 1]
    return coeffs


def mannwhitney_u(base: np.ndarray, new: np.ndarray, alternative: str) -> float:
    """One-sided Mann-Whitney U test; alternative "greater": new tends to be larger than base.

    Exact null distribution for small samples without ties, otherwise the normal approximation
    with tie correction and continuity correction.
    """
    n, m = len(new), len(base)
    ranks, ties = _rank(np.concatenate([new, base]))
    u_new = float(ranks[:n].sum() - n * (n + 1) / 2.0)
    has_ties = bool(np.any(ties > 1))
    if not has_ties and n * m <= EXACT_MAX_PAIRS:
        counts = _u_counts(n, m)
        total = math.comb(n + m, n)
        u = int(round(u_new))
        tail = sum(counts[u:]) if alternative == "greater" else sum(counts[: u + 1])
        return min(1.0, tail / total)
    total_n = n + m
    tie_term = float(np.sum(ties.astype(float) ** 3 - ties)) / (total_n * (total_n - 1))
    var = n * m / 12.0 * ((total_n + 1) - tie_term)
    if var <= 0:
        return 1.0
    mean = n * m / 2.0
    if alternative == "greater":
        z = (u_new - mean - 0.5) / math.sqrt(var)
    else:
        z = (mean - u_new - 0.5) / math.sqrt(var)
    return min(1.0, 0.5 * math.erfc(z / math.sqrt(2.0)))


def mannwhitney(base: np.ndarray, new: np.ndarray, slower: bool) -> float:
    return mannwhitney_u(base, new, "greater" if slower else "less")


def bootstrap(base: np.ndarray, new: np.ndarray, alpha: float, seed: int, n_boot: int = 4000):
    """Return (ratios of bootstrap medians, p_slower, p_faster, low, high)."""
    rng = np.random.default_rng(seed)
    ratios = np.empty(n_boot)
    chunk = max(1, min(n_boot, 2_000_000 // max(len(base), len(new))))
    for start in range(0, n_boot, chunk):
        size = min(chunk, n_boot - start)
        mb = np.median(base[rng.integers(0, len(base), size=(size, len(base)))], axis=1)
        mn = np.median(new[rng.integers(0, len(new), size=(size, len(new)))], axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(mb > 0, mn / np.where(mb > 0, mb, 1.0), np.where(mn > 0, np.inf, 1.0))
        ratios[start:start + size] = r
    p_slower = (np.count_nonzero(ratios <= 1.0) + 1) / (n_boot + 1)
    p_faster = (np.count_nonzero(ratios >= 1.0) + 1) / (n_boot + 1)
    low, high = np.quantile(ratios, [alpha, 1.0 - alpha])
    return float(p_slower), float(p_faster), float(low), float(high)


def seed_for(label: str) -> int:
    """A deterministic seed per case, so that reruns of compare give identical answers."""
    return zlib.crc32(label.encode("utf-8"))


def assess_change(base_samples, new_samples, base_median: float, new_median: float, *, test: str = "mannwhitney",
                alpha: float = 0.01, label: str = "") -> ChangeTest:
    """Compare two sets of per-sample times. The ratio uses the recorded medians."""
    if test not in TESTS:
        raise ValueError(f"unknown test {test!r}")
    ratio = ratio_of(base_median, new_median)
    base = np.asarray(base_samples, dtype=float)
    new = np.asarray(new_samples, dtype=float)
    if len(base) < 2 or len(new) < 2:
        return ChangeTest(ratio, None, None, None, None,
                          note=f"too few samples to test ({len(base)} base, {len(new)} new)")
    slower = ratio >= 1.0
    if test == "mannwhitney":
        p = mannwhitney(base, new, slower)
        min_p = _mannwhitney_min_p(len(base), len(new))
        note = ""
        if min_p >= alpha:
            note = f"with {len(base)}+{len(new)} samples p cannot go below {min_p:.3g}"
        return ChangeTest(ratio, p, None, None, min_p, note)
    p_slower, p_faster, low, high = bootstrap(base, new, alpha, seed_for(label))
    return ChangeTest(ratio, p_slower if slower else p_faster, low, high, None, "")
