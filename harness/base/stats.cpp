#include "base/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <nlohmann/json.hpp>

#include "base/error.hpp"

namespace nb {

double quantile_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) throw Error("quantile of an empty sample");
  if (q <= 0) return sorted.front();
  if (q >= 1) return sorted.back();
  const double h = q * double(sorted.size() - 1);
  const size_t i = size_t(std::floor(h));
  const double frac = h - double(i);
  if (i + 1 >= sorted.size()) return sorted.back();
  return sorted[i] + frac * (sorted[i + 1] - sorted[i]);
}

double binomial_half_cdf(size_t n, long long k) {
  if (k < 0) return 0.0;
  if (k >= static_cast<long long>(n)) return 1.0;
  // Sum of C(n, i) / 2^n in log space, for numerical safety at large n.
  const double log_half_n = double(n) * std::log(0.5);
  double total = 0.0;
  for (long long i = 0; i <= k; ++i) {
    const double log_c = std::lgamma(double(n) + 1) - std::lgamma(double(i) + 1) -
                         std::lgamma(double(n - size_t(i)) + 1);
    total += std::exp(log_c + log_half_n);
  }
  return std::min(total, 1.0);
}

MedianCiRanks median_ci_ranks(size_t n, double level) {
  MedianCiRanks r{1, n, 0.0};
  if (n == 0) return r;
  const double alpha_half = (1.0 - level) / 2.0;
  // Largest l (1-based) with P(X <= l-1) <= alpha/2: then [x_(l), x_(n-l+1)] covers the median
  // with probability 1 - 2 P(X <= l-1).
  size_t best = 0;
  for (size_t l = 1; l <= (n + 1) / 2; ++l) {
    if (binomial_half_cdf(n, static_cast<long long>(l) - 1) <= alpha_half) best = l;
    else break;
  }
  if (best == 0) {
    r.lo = 1;
    r.hi = n;
    r.coverage = 1.0 - 2.0 * binomial_half_cdf(n, 0);
  } else {
    r.lo = best;
    r.hi = n - best + 1;
    r.coverage = 1.0 - 2.0 * binomial_half_cdf(n, static_cast<long long>(best) - 1);
  }
  return r;
}

Stats compute_stats(std::vector<double> samples, double ci_level) {
  if (samples.empty()) throw Error("statistics of an empty sample");
  std::sort(samples.begin(), samples.end());
  Stats s;
  s.count = samples.size();
  s.min = samples.front();
  s.max = samples.back();
  s.median = quantile_sorted(samples, 0.5);
  s.p10 = quantile_sorted(samples, 0.10);
  s.p90 = quantile_sorted(samples, 0.90);
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / double(s.count);
  if (s.count > 1) {
    double ss = 0;
    for (double x : samples) ss += (x - s.mean) * (x - s.mean);
    s.stddev = std::sqrt(ss / double(s.count - 1));
  }
  s.cv = s.mean > 0 ? s.stddev / s.mean : 0.0;
  const MedianCiRanks ranks = median_ci_ranks(s.count, ci_level);
  s.ci_low = samples[ranks.lo - 1];
  s.ci_high = samples[ranks.hi - 1];
  s.ci_level = ranks.coverage;
  return s;
}

nlohmann::json stats_to_json(const Stats& s) {
  return {{"unit", "s"},
          {"count", s.count},
          {"median", s.median},
          {"min", s.min},
          {"max", s.max},
          {"mean", s.mean},
          {"stddev", s.stddev},
          {"p10", s.p10},
          {"p90", s.p90},
          {"cv", s.cv},
          {"ci_median", {{"level", s.ci_level}, {"low", s.ci_low}, {"high", s.ci_high}}}};
}

}  // namespace nb
