// The seeded algorithm search's choice of candidates (shared/cudnn/cudnn_conv.hpp): the nearest
// batch's timed candidates within a band of its fastest. No GPU: the seeds are given.
#include <gtest/gtest.h>

#include "shared/cudnn/cudnn_conv.hpp"

using namespace nb;
using namespace nb::cudnn;

namespace {
TimedAlgo t(int algo, double median_s) { return {algo, CUDNN_DEFAULT_MATH, median_s}; }
std::vector<int> algos(const std::vector<TimedAlgo>& v) {
  std::vector<int> out;
  for (const auto& a : v) out.push_back(a.algo);
  return out;
}
}  // namespace

TEST(CudnnSeed, TheNearestBatchSeedsWithinTheBand) {
  const std::map<int64_t, std::vector<TimedAlgo>> seeds = {
      {32, {t(0, 1.0), t(1, 1.5), t(2, 2.5)}},  // 2.5 is over 2x the fastest: left out
      {256, {t(5, 1.0)}}};
  int64_t from = 0;
  EXPECT_EQ(algos(seed_candidates(seeds, 64, 2.0, from)), (std::vector<int>{0, 1}));
  EXPECT_EQ(from, 32);
  EXPECT_EQ(algos(seed_candidates(seeds, 128, 2.0, from)), (std::vector<int>{5}));  // 256 is one doubling away, 32 two
  EXPECT_EQ(from, 256);
  EXPECT_EQ(algos(seed_candidates(seeds, 1024, 3.0, from)), (std::vector<int>{5}));
}

TEST(CudnnSeed, ATieGoesToTheSmallerBatchAndTheSameBatchIsNoSeed) {
  const std::map<int64_t, std::vector<TimedAlgo>> seeds = {{32, {t(1, 1.0)}}, {128, {t(7, 1.0)}}};
  int64_t from = 0;
  EXPECT_EQ(algos(seed_candidates(seeds, 64, 2.0, from)), (std::vector<int>{1}));
  EXPECT_EQ(from, 32);
  EXPECT_TRUE(seed_candidates({{64, {t(1, 1.0)}}}, 64, 2.0, from).empty());
  EXPECT_EQ(from, 0);
  EXPECT_TRUE(seed_candidates({}, 64, 2.0, from).empty());
}

TEST(CudnnSeed, AReusedChoiceWithoutTimingIsItsOwnSeed) {
  // A choice from the cache file carries no median: it still seeds.
  int64_t from = 0;
  EXPECT_EQ(algos(seed_candidates({{16, {t(3, 0.0)}}}, 32, 2.0, from)), (std::vector<int>{3}));
}

TEST(CudnnSeed, TheBatchlessKeyDropsOnlyTheBatch) {
  EXPECT_EQ(batchless_key("n32_c64_56x56_k64_3x3_s1_p1_g1_fp16_nhwc"), "c64_56x56_k64_3x3_s1_p1_g1_fp16_nhwc");
  EXPECT_EQ(batchless_key("n1024_c3_224x224_k64_7x7_s2_p3_g1_fp32_nchw"), "c3_224x224_k64_7x7_s2_p3_g1_fp32_nchw");
  EXPECT_EQ(batchless_key("c64_odd"), "c64_odd");
}

TEST(CudnnAlgorithms, TransformsAreTheFftAndWinogradOnesOfEachPass) {
  // By cuDNN's enums: the implicit GEMM and direct algorithms do the direct convolution's work.
  EXPECT_TRUE(transforms_arithmetic(Pass::fwd, CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING));
  EXPECT_TRUE(transforms_arithmetic(Pass::fwd, CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED));
  EXPECT_FALSE(transforms_arithmetic(Pass::fwd, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM));
  EXPECT_FALSE(transforms_arithmetic(Pass::fwd, CUDNN_CONVOLUTION_FWD_ALGO_DIRECT));
  // The same number means another algorithm in another pass: 3 is FFT tiling for backward-data,
  // a plain algorithm for backward-filter, the direct one forward.
  EXPECT_TRUE(transforms_arithmetic(Pass::bwd_data, 3));
  EXPECT_FALSE(transforms_arithmetic(Pass::bwd_filter, 3));
  EXPECT_FALSE(transforms_arithmetic(Pass::fwd, 3));
  EXPECT_TRUE(transforms_arithmetic(Pass::bwd_filter, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING));
  EXPECT_FALSE(transforms_arithmetic(Pass::bwd_data, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1));
}

TEST(CudnnSeed, AHeuristicCandidateFarSlowerThanTheSeedIsNotTimedFurther) {
  // The seed's fastest took 0.2 ms at batch 256; at batch 512 a candidate may take 4 x 0.4 ms.
  EXPECT_DOUBLE_EQ(seeded_first_run_bound(0.2e-3, 512, 256), 1.6e-3);
  EXPECT_TRUE(first_run_too_slow(50e-3, seeded_first_run_bound(0.2e-3, 512, 256)));
  EXPECT_FALSE(first_run_too_slow(1.5e-3, seeded_first_run_bound(0.2e-3, 512, 256)));
  // Tiny passes: at least 1 ms, above the host's cost of timing one run.
  EXPECT_DOUBLE_EQ(seeded_first_run_bound(10e-6, 64, 32), 1e-3);
  // No seed time (a choice from the cache file without one): no bound.
  EXPECT_DOUBLE_EQ(seeded_first_run_bound(0, 64, 32), 0);
  EXPECT_FALSE(first_run_too_slow(10.0, 0));
}
