#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "base/error.hpp"
#include "base/verify.hpp"

using namespace nb;

TEST(Decode, Half) {
  EXPECT_DOUBLE_EQ(half_to_double(0x3C00), 1.0);
  EXPECT_DOUBLE_EQ(half_to_double(0xC000), -2.0);
  EXPECT_DOUBLE_EQ(half_to_double(0x7BFF), 65504.0);
  EXPECT_DOUBLE_EQ(half_to_double(0x0001), std::ldexp(1.0, -24));
  EXPECT_DOUBLE_EQ(half_to_double(0x3555), 0.333251953125);
  EXPECT_TRUE(std::isnan(half_to_double(0x7E00)));
  EXPECT_TRUE(std::isinf(half_to_double(0x7C00)));
}

TEST(Decode, Bf16) {
  EXPECT_DOUBLE_EQ(bf16_to_double(0x3F80), 1.0);
  EXPECT_DOUBLE_EQ(bf16_to_double(0xC040), -3.0);
  EXPECT_DOUBLE_EQ(bf16_to_double(0x3EAB), 0.333984375);
}

TEST(Decode, Fp8E4M3) {
  EXPECT_DOUBLE_EQ(fp8_e4m3_to_double(0x38), 1.0);
  EXPECT_DOUBLE_EQ(fp8_e4m3_to_double(0x7E), 448.0);   // largest finite
  EXPECT_DOUBLE_EQ(fp8_e4m3_to_double(0xBC), -1.5);
  EXPECT_DOUBLE_EQ(fp8_e4m3_to_double(0x01), std::ldexp(1.0, -9));  // smallest subnormal
  EXPECT_TRUE(std::isnan(fp8_e4m3_to_double(0x7F)));
}

TEST(Tolerance, KnownPrecisionsAndUnknownThrows) {
  EXPECT_TRUE(gemm_tolerance("int8").exact);
  EXPECT_GT(gemm_tolerance("tf32").u_in, 0);
  EXPECT_EQ(gemm_tolerance("fp32").u_in, 0);
  EXPECT_GT(gemm_tolerance("fp16acc16").u_acc, gemm_tolerance("fp16").u_acc);
  EXPECT_THROW(gemm_tolerance("fp4"), Error);
}

TEST(CheckDot, IntegerIsExact) {
  const std::vector<double> a = {1, -2, 3}, b = {4, 5, -6};  // -24
  EXPECT_TRUE(check_dot(a, b, -24, gemm_tolerance("int8")).ok);
  EXPECT_FALSE(check_dot(a, b, -23, gemm_tolerance("int8")).ok);
}

TEST(CheckDot, Fp32RoundingPassesAndRealErrorsFail) {
  std::vector<double> a(4096), b(4096);
  double ref = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = std::sin(0.37 * double(i));
    b[i] = std::cos(0.11 * double(i) + 0.5);
    ref += a[i] * b[i];
  }
  // The same sum accumulated in float: the kind of error a correct FP32 GEMM makes.
  float acc = 0;
  for (size_t i = 0; i < a.size(); ++i) acc += float(a[i]) * float(b[i]);
  const GemmTolerance t = gemm_tolerance("fp32");
  EXPECT_TRUE(check_dot(a, b, double(acc), t).ok);
  EXPECT_FALSE(check_dot(a, b, ref + 0.01 * std::fabs(ref) + 0.05, t).ok);  // a 1% error is wrong
  EXPECT_FALSE(check_dot(a, b, std::numeric_limits<double>::quiet_NaN(), t).ok);
  EXPECT_FALSE(check_dot(a, b, 0.0, t).ok);  // an unwritten (zero) output is wrong
}

TEST(CheckDot, HalfOutputRoundingIsAllowed) {
  const std::vector<double> a = {0.5, 0.25, 0.125}, b = {1, 1, 1};  // 0.875
  const double rounded = 0.875 * (1 + std::ldexp(1.0, -11));
  EXPECT_TRUE(check_dot(a, b, rounded, gemm_tolerance("fp16")).ok);
  EXPECT_FALSE(check_dot(a, b, 0.9, gemm_tolerance("fp16")).ok);
}

TEST(SamplePositions, CornersDistinctAndInRange) {
  const auto p = sample_positions(100, 7, 30, 42);
  EXPECT_EQ(p.size(), 30u);
  std::set<std::pair<int64_t, int64_t>> s(p.begin(), p.end());
  EXPECT_EQ(s.size(), p.size());
  EXPECT_TRUE(s.count({0, 0}) && s.count({99, 6}) && s.count({0, 6}) && s.count({99, 0}));
  for (auto [i, j] : p) {
    EXPECT_GE(i, 0);
    EXPECT_LT(i, 100);
    EXPECT_GE(j, 0);
    EXPECT_LT(j, 7);
  }
  EXPECT_EQ(sample_positions(1, 2, 30, 1).size(), 2u);  // never more than the matrix holds
}

TEST(Verify, SampledWordsCompareEachPositionOnce) {
  const int64_t words = 1 << 20;
  auto same = [](int64_t i) { return uint32_t(i * 2654435761u); };
  EXPECT_EQ(compare_sampled_words(words, 0x1234ull, same, same, "wrong"), "");
  // Word 0 (a corner, always sampled) differs: one bad word, named with both values.
  auto one_off = [&](int64_t i) { return i == 0 ? 7u : same(i); };
  EXPECT_EQ(compare_sampled_words(words, 0x1234ull, same, one_off, "wrong"),
            "1 of 64 sampled words wrong; first: word 0 = 7, expected 0");
  // Every word differs: each of the 64 distinct positions counted once.
  std::set<int64_t> seen;
  auto all_off = [&](int64_t i) {
    seen.insert(i);
    return same(i) + 1;
  };
  const std::string all = compare_sampled_words(words, 0x5eedull, same, all_off, "differ from the source");
  EXPECT_EQ(all.rfind("64 of 64 sampled words differ from the source; first: word ", 0), 0u) << all;
  EXPECT_EQ(seen.size(), 64u);
}
