// Summary statistics of per-sample times.
#pragma once
#include <cstddef>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace nb {

struct Stats {
  size_t count = 0;
  double median = 0, min = 0, max = 0, mean = 0, stddev = 0, p10 = 0, p90 = 0;
  double cv = 0;  // stddev / mean (sample standard deviation, n-1)
  // Distribution-free confidence interval of the median from order statistics; `ci_level` is
  // the coverage actually achieved (at least the requested level when there are enough samples;
  // with very few samples the interval is [min, max] and the level is below the request).
  double ci_low = 0, ci_high = 0, ci_level = 0;
};

// Quantile by linear interpolation between closest ranks (R type 7). `sorted` must be sorted
// and non-empty; q in [0, 1].
double quantile_sorted(const std::vector<double>& sorted, double q);

// P(X <= k) for X ~ Binomial(n, 1/2).
double binomial_half_cdf(size_t n, long long k);

// 1-based ranks (lo, hi) of the order statistics bounding the median's confidence interval at
// `level`, and the coverage achieved.
struct MedianCiRanks {
  size_t lo = 1, hi = 1;
  double coverage = 0;
};
MedianCiRanks median_ci_ranks(size_t n, double level);

// Throws nb::Error on an empty input.
Stats compute_stats(std::vector<double> samples, double ci_level = 0.95);

nlohmann::json stats_to_json(const Stats& s);

}  // namespace nb
