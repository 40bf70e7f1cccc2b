// The data-parallel step's plan (benchmarks/train_dp_plan.hpp): buckets, their gradient ranges,
// the accumulation schedule, the scaling arithmetic, the cases and their record ids.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "train_dp/train_dp_plan.hpp"
#include "base/error.hpp"
#include "bench/settings.hpp"
#include "settings_test_util.hpp"

namespace nb::train_dp {
namespace {

// Checks the bucket rules independently of assign_buckets: in backward order (descending
// indices, contiguous), every parameter once, at most `cap` bytes unless a single parameter.
void check_buckets(const std::vector<size_t>& bytes, size_t cap, const std::vector<Bucket>& b) {
  std::vector<int> seen(bytes.size(), 0);
  size_t expect_end = bytes.size();
  for (const Bucket& k : b) {
    ASSERT_LT(k.first, k.end);
    EXPECT_EQ(k.end, expect_end) << "buckets follow backward order without gaps";
    expect_end = k.first;
    size_t sum = 0;
    for (size_t i = k.first; i < k.end; ++i) sum += bytes[i], ++seen[i];
    EXPECT_EQ(sum, k.bytes);
    if (k.end - k.first > 1) EXPECT_LE(sum, cap);
  }
  EXPECT_EQ(expect_end, 0u);
  for (size_t i = 0; i < bytes.size(); ++i) EXPECT_EQ(seen[i], 1) << "parameter " << i;
}

TEST(TrainDpBuckets, FillsInBackwardOrderUpToTheCap) {
  const std::vector<size_t> bytes = {10, 20, 30, 40, 50};
  const auto b = assign_buckets(bytes, 60);
  // From the last: 50 (+40 > 60: closed), 40 (+30 > 60), 30+20 = 50 (+10 = 60 <= 60, full), ...
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].first, 4u);
  EXPECT_EQ(b[0].end, 5u);
  EXPECT_EQ(b[1].first, 3u);
  EXPECT_EQ(b[2].first, 0u);
  EXPECT_EQ(b[2].end, 3u);
  EXPECT_EQ(b[2].bytes, 60u);
  check_buckets(bytes, 60, b);
}

TEST(TrainDpBuckets, ALargeParameterIsAlone) {
  const std::vector<size_t> bytes = {5, 5, 500, 5, 5};
  const auto b = assign_buckets(bytes, 12);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].first, 3u);  // 5 + 5
  EXPECT_EQ(b[1].first, 2u);  // 500 alone
  EXPECT_EQ(b[1].end, 3u);
  EXPECT_EQ(b[1].bytes, 500u);
  EXPECT_EQ(b[2].first, 0u);
  check_buckets(bytes, 12, b);
}

TEST(TrainDpBuckets, PropertiesOverManyLayouts) {
  uint64_t x = 12345;
  auto rnd = [&] { return x = x * 6364136223846793005ull + 1442695040888963407ull, size_t(x >> 40); };
  for (int t = 0; t < 200; ++t) {
    std::vector<size_t> bytes(1 + rnd() % 200);
    for (auto& v : bytes) v = 1 + rnd() % 5000;
    const size_t cap = 1 + rnd() % 8000;
    const auto b = assign_buckets(bytes, cap);
    check_buckets(bytes, cap, b);
    // Greedy: a bucket followed by another could not have taken that one's first parameter.
    for (size_t i = 0; i + 1 < b.size(); ++i) EXPECT_GT(b[i].bytes + bytes[b[i + 1].end - 1], cap);
  }
  EXPECT_TRUE(assign_buckets({}, 10).empty());
  EXPECT_EQ(assign_buckets({3, 3}, 0).size(), 2u);  // cap 0: one per bucket
  EXPECT_EQ(assign_buckets({3, 3, 3}, 1u << 30).size(), 1u);
}

TEST(TrainDpBuckets, RangesCoverEachSegment) {
  // The step's layout: per convolution its weight (compute segment) and two batch-norm tensors
  // (FP32 segment), each tensor at a 64-element boundary; then the FC weight and bias.
  std::vector<ParamSpan> p;
  size_t a = 0, bseg = 0;
  for (size_t w : {100, 300, 200}) {
    p.push_back({false, a, w});
    a += (w + 63) / 64 * 64;
    p.push_back({true, bseg, 8});
    p.push_back({true, bseg + 8, 8});
    bseg += 64;
  }
  p.push_back({false, a, 1000});
  p.push_back({true, bseg, 10});
  const std::vector<Bucket> buckets = {{7, 11, 0}, {3, 7, 0}, {0, 3, 0}};
  const auto r = bucket_ranges(p, buckets);
  ASSERT_EQ(r.size(), 3u);
  // Bucket 0: conv 2's batch norm and the FC: in the compute segment only the FC weight.
  EXPECT_EQ(p[9].offset, 704u);  // 128 + 320 + 256
  EXPECT_EQ(r[0].a_off, 704u);
  EXPECT_EQ(r[0].a_n, 1000u);
  EXPECT_EQ(r[0].b_off, 128u);
  EXPECT_EQ(r[0].b_n, 192u + 10u - 128u);
  // Bucket 1: conv 1 (weight, batch norm) and conv 2's weight: weights 128..648 with padding.
  EXPECT_EQ(r[1].a_off, 128u);
  EXPECT_EQ(r[1].a_n, 448u + 200u - 128u);
  EXPECT_EQ(r[1].b_off, 64u);
  EXPECT_EQ(r[1].b_n, 16u);
  EXPECT_EQ(r[2].a_off, 0u);
  EXPECT_EQ(r[2].a_n, 100u);
  EXPECT_EQ(r[2].b_off, 0u);
  EXPECT_EQ(r[2].b_n, 16u);
  // No element of a segment is in two buckets.
  for (size_t i = 0; i + 1 < r.size(); ++i) {
    EXPECT_LE(r[i + 1].a_off + r[i + 1].a_n, r[i].a_off);
    EXPECT_LE(r[i + 1].b_off + r[i + 1].b_n, r[i].b_off);
  }
}

TEST(TrainDpSchedule, AllReduceEveryKMicroSteps) {
  std::vector<int64_t> on;
  for (int64_t m = 1; m <= 12; ++m)
    if (allreduce_on(m, 4)) on.push_back(m);
  EXPECT_EQ(on, (std::vector<int64_t>{4, 8, 12}));
  for (int64_t m = 1; m <= 5; ++m) EXPECT_TRUE(allreduce_on(m, 1));
  EXPECT_FALSE(allreduce_on(0, 1));
  EXPECT_FALSE(allreduce_on(3, 0));
}

TEST(TrainDpScaling, EfficiencyAndImagesPerSecond) {
  // 2 GPUs, 256 each, one micro-step, 0.5 s: 1024 images/s; one GPU 0.4 s: 640 images/s.
  EXPECT_DOUBLE_EQ(images_per_s(2, 256, 1, 0.5), 1024.0);
  EXPECT_DOUBLE_EQ(images_per_s(1, 256, 1, 0.4), 640.0);
  EXPECT_DOUBLE_EQ(images_per_s(4, 64, 3, 1.0), 768.0);
  EXPECT_DOUBLE_EQ(scaling_efficiency(1024.0, 2, 640.0), 0.8);
  EXPECT_DOUBLE_EQ(scaling_efficiency(640.0, 1, 640.0), 1.0);
  EXPECT_TRUE(std::isnan(scaling_efficiency(0.0, 2, 640.0)));
  EXPECT_TRUE(std::isnan(scaling_efficiency(100.0, 2, 0.0)));
  EXPECT_TRUE(std::isnan(images_per_s(2, 64, 1, 0.0)));
}

TEST(TrainDpCases, IdsFollowTheContract) {
  const auto quick = points(false);
  ASSERT_EQ(quick.size(), 1u);
  EXPECT_EQ(record_id(quick[0], 2), "train_dp/resnet50/fp16/nhwc/b32/g2");
  const auto full = points(true);
  EXPECT_EQ(full.size(), 16u);
  for (int64_t b : {64, 128, 256})
    EXPECT_NE(std::find_if(full.begin(), full.end(), [&](const Point& p) { return p.precision == "fp16" && p.layout == "nhwc" && p.batch == b; }),
              full.end()) << b;
  EXPECT_EQ(part_name(8), "g8");
#ifdef NB_HAVE_CUDNN
  const auto ids = case_ids(true);
  ASSERT_EQ(ids.size(), full.size());
  EXPECT_EQ(ids[0] + "/" + part_name(4), record_id(full[0], 4));
  // Not in the quick suite until it has run on a multi-GPU machine.
  EXPECT_TRUE(case_ids(false).empty());
#endif
}

TEST(TrainDpSettings, BucketAndAccumulation) {
  const Settings d = Settings::from_map({});
  EXPECT_DOUBLE_EQ(d.number("NODEBENCH_DP_BUCKET_MIB"), 25.0);
  EXPECT_EQ(d.integer("NODEBENCH_DP_ACCUMULATION"), 1);
  const Settings s = Settings::from_map({{"NODEBENCH_DP_BUCKET_MIB", "2.5"}, {"NODEBENCH_DP_ACCUMULATION", "4"}});
  EXPECT_DOUBLE_EQ(s.number("NODEBENCH_DP_BUCKET_MIB"), 2.5);
  EXPECT_EQ(s.integer("NODEBENCH_DP_ACCUMULATION"), 4);
  EXPECT_EQ(s.to_json()["dp_accumulation"], 4);
  const auto message = &test::settings_error;
  EXPECT_NE(message({{"NODEBENCH_DP_ACCUMULATION", "0"}}).find("NODEBENCH_DP_ACCUMULATION='0'"), std::string::npos);
  EXPECT_NE(message({{"NODEBENCH_DP_ACCUMULATION", "1.5"}}).find("whole number"), std::string::npos);
  EXPECT_NE(message({{"NODEBENCH_DP_BUCKET_MIB", "-1"}}).find("NODEBENCH_DP_BUCKET_MIB='-1'"), std::string::npos);
  std::vector<std::string> unknown;
  (void)Settings::from_map({{"NODEBENCH_DP_BUCKET_MIB", "1"}}, &unknown);
  EXPECT_TRUE(unknown.empty());
}

}  // namespace
}  // namespace nb::train_dp
