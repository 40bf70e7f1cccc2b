#include <gtest/gtest.h>

#include <cmath>

#include "base/error.hpp"
#include "base/stats.hpp"

using namespace nb;

TEST(Stats, QuantilesInterpolateBetweenRanks) {
  const std::vector<double> v = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_DOUBLE_EQ(quantile_sorted(v, 0.5), 5.5);
  EXPECT_DOUBLE_EQ(quantile_sorted(v, 0.1), 1.9);   // 1 + 0.9 * (2 - 1)
  EXPECT_DOUBLE_EQ(quantile_sorted(v, 0.9), 9.1);
  EXPECT_DOUBLE_EQ(quantile_sorted(v, 0.0), 1);
  EXPECT_DOUBLE_EQ(quantile_sorted(v, 1.0), 10);
}

TEST(Stats, SummaryOfKnownSample) {
  // Unsorted on purpose; mean 5, sample stddev sqrt(32/7).
  const Stats s = compute_stats({9, 2, 5, 4, 4, 7, 5, 4});
  EXPECT_EQ(s.count, 8u);
  EXPECT_DOUBLE_EQ(s.min, 2);
  EXPECT_DOUBLE_EQ(s.max, 9);
  EXPECT_DOUBLE_EQ(s.mean, 5);
  EXPECT_DOUBLE_EQ(s.median, 4.5);
  EXPECT_NEAR(s.stddev, std::sqrt(32.0 / 7.0), 1e-12);
  EXPECT_NEAR(s.cv, std::sqrt(32.0 / 7.0) / 5.0, 1e-12);
}

TEST(Stats, EmptySampleThrows) { EXPECT_THROW(compute_stats({}), Error); }

TEST(Stats, BinomialCdfMatchesDirectSum) {
  // n = 10: P(X <= 1) = (1 + 10) / 1024; P(X <= 2) = (1 + 10 + 45) / 1024.
  EXPECT_NEAR(binomial_half_cdf(10, 1), 11.0 / 1024, 1e-12);
  EXPECT_NEAR(binomial_half_cdf(10, 2), 56.0 / 1024, 1e-12);
  EXPECT_DOUBLE_EQ(binomial_half_cdf(10, -1), 0.0);
  EXPECT_DOUBLE_EQ(binomial_half_cdf(10, 10), 1.0);
}

TEST(Stats, MedianConfidenceIntervalRanks) {
  // Published order-statistic ranks for a 95% interval of the median:
  // n = 10 -> (2, 9), coverage 1 - 2*11/1024 = 0.97852; n = 20 -> (6, 15), coverage 0.95861.
  auto r10 = median_ci_ranks(10, 0.95);
  EXPECT_EQ(r10.lo, 2u);
  EXPECT_EQ(r10.hi, 9u);
  EXPECT_NEAR(r10.coverage, 1 - 2 * 11.0 / 1024, 1e-9);
  auto r20 = median_ci_ranks(20, 0.95);
  EXPECT_EQ(r20.lo, 6u);
  EXPECT_EQ(r20.hi, 15u);
  EXPECT_NEAR(r20.coverage, 0.958610535, 1e-6);
  // n = 5 cannot reach 95%: the whole range, with its lower coverage said honestly.
  auto r5 = median_ci_ranks(5, 0.95);
  EXPECT_EQ(r5.lo, 1u);
  EXPECT_EQ(r5.hi, 5u);
  EXPECT_NEAR(r5.coverage, 1 - 2.0 / 32, 1e-12);
}

TEST(Stats, IntervalBracketsTheMedian) {
  std::vector<double> v;
  for (int i = 0; i < 101; ++i) v.push_back(1.0 + 0.001 * ((i * 37) % 101));
  const Stats s = compute_stats(v);
  EXPECT_LE(s.ci_low, s.median);
  EXPECT_GE(s.ci_high, s.median);
  EXPECT_GE(s.ci_level, 0.95);
  EXPECT_LE(s.p10, s.median);
  EXPECT_GE(s.p90, s.median);
}
