// The train family without a GPU: ResNet-50's layer list (shapes, parameter count), the memory
// plan, the case list, the batch recommendation and the dynamic loss-scaling rule.
#ifdef NB_HAVE_CUDNN
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "shared/common/oom_series.hpp"
#include "shared/resnet50/resnet50_net.hpp"
#include "shared/resnet50/train_fusion.hpp"
#include "train/train_analysis.hpp"
#include "kernels/train/train_kernels.cuh"
#include "bench/analysis.hpp"
#include "bench/precision.hpp"
#include "bench/settings.hpp"

namespace nb {
namespace {

using nlohmann::json;
using resnet50::net;

TEST(TrainNet, ShapesPropagate224To7) {
  const auto& n = net();
  EXPECT_EQ(n.convs[0].out_hw(), 112);
  EXPECT_EQ(n.stage_out_hw(0), 56);
  const int hw[5] = {56, 56, 28, 14, 7}, ch[5] = {64, 256, 512, 1024, 2048};
  for (int s = 0; s <= 4; ++s) {
    EXPECT_EQ(n.stage_out_hw(s), hw[s]) << "stage " << s;
    EXPECT_EQ(n.stage_out_c(s), ch[s]) << "stage " << s;
  }
  // Every convolution's input is the output of the layer before it (through the max pool and the blocks).
  int in_c = 64, in_hw = 56;
  for (const auto& b : n.blocks) {
    const auto &c1 = n.convs[size_t(b.conv1)], &c2 = n.convs[size_t(b.conv2)], &c3 = n.convs[size_t(b.conv3)];
    EXPECT_EQ(c1.c, in_c);
    EXPECT_EQ(c1.hw, in_hw);
    EXPECT_EQ(c1.stride, 1) << c1.name << ": v1.5 has no stride on the first 1x1";
    EXPECT_EQ(c2.c, c1.k);
    EXPECT_EQ(c2.hw, c1.out_hw());
    EXPECT_EQ(c2.r, 3);
    EXPECT_EQ(c3.c, c2.k);
    EXPECT_EQ(c3.hw, c2.out_hw());
    EXPECT_EQ(c3.k, 4 * c1.k);
    if (b.down >= 0) {
      const auto& d = n.convs[size_t(b.down)];
      EXPECT_EQ(d.c, in_c);
      EXPECT_EQ(d.out_hw(), c3.out_hw());
      EXPECT_EQ(d.k, c3.k);
    } else {
      EXPECT_EQ(in_c, c3.k);  // identity shortcut: same shape
      EXPECT_EQ(in_hw, c3.out_hw());
    }
    in_c = c3.k;
    in_hw = c3.out_hw();
  }
  EXPECT_EQ(in_c, n.fc_in);
  EXPECT_EQ(n.convs.size(), 53u);
  EXPECT_EQ(n.blocks.size(), 16u);
  EXPECT_EQ(std::count_if(n.blocks.begin(), n.blocks.end(), [](const auto& b) { return b.down >= 0; }), 4);
  // Stride 2 on the 3x3 of the first block of stages 2..4 (v1.5).
  EXPECT_EQ(n.convs[size_t(n.blocks[3].conv2)].stride, 2);
  EXPECT_EQ(n.convs[size_t(n.blocks[0].conv2)].stride, 1);
}

TEST(TrainNet, ParameterCountIsTorchvisionResnet50) {
  // torchvision.models.resnet50(): 25,557,032 parameters (weights, BN gamma/beta, FC weight and bias).
  EXPECT_EQ(net().parameter_count(), 25557032);
  EXPECT_EQ(net().fc_parameter_count(), 2048 * 1000 + 1000);
  // BN: 2 per output channel of every convolution; stem 64, the blocks' widths.
  int64_t bn = 2 * 64;
  const int mids[4] = {64, 128, 256, 512}, counts[4] = {3, 4, 6, 3};
  for (int s = 0; s < 4; ++s) bn += counts[s] * 2 * (mids[s] + mids[s] + 4 * mids[s]) + 2 * 4 * mids[s];
  EXPECT_EQ(net().bn_parameter_count(), bn);
}

TEST(TrainNet, ActivationAccountingMatchesHandCount) {
  // Per image, counted stage by stage from the architecture.
  int64_t e = 3 * 224 * 224 + 2 * 64 * 112 * 112 + 64 * 56 * 56;
  const int mids[4] = {64, 128, 256, 512}, counts[4] = {3, 4, 6, 3}, in_hw[4] = {56, 56, 28, 14};
  for (int s = 0; s < 4; ++s) {
    const int64_t m = mids[s], o = 4 * m, hi = in_hw[s], ho = s == 0 ? 56 : hi / 2;
    e += 2 * m * hi * hi + 2 * m * ho * ho + o * ho * ho + o * ho * ho + o * ho * ho;  // first block, projection
    e += (counts[s] - 1) * (4 * m * ho * ho + 2 * o * ho * ho);
  }
  e += 2048;
  EXPECT_EQ(resnet50::kept_activation_elems_per_image(net()), e);
  EXPECT_EQ(resnet50::max_activation_elems_per_image(net()), 64 * 112 * 112);
  const auto p1 = resnet50::memory_plan(net(), 1, 2), p64 = resnet50::memory_plan(net(), 64, 2);
  // The region (step_memory.hpp, tested in test_step_memory.cpp) grows with the batch; at batch 64
  // every activation is a whole number of 256-byte units, so it is 64 times batch 1's at most.
  EXPECT_GT(p64.region, 32 * p1.region);
  EXPECT_LE(p64.region, 64 * p1.region);
  EXPECT_EQ(p64.parameters, p1.parameters);  // independent of the batch
  // FP32 master + momentum + FP32 gradients of BN/bias, FP16 weights gradient and copy.
  const int64_t all = net().parameter_count(), fp32 = net().bn_parameter_count() + 1000, half = all - fp32;
  EXPECT_EQ(p1.parameters, 8 * all + 4 * fp32 + 2 * half + 2 * half);
  EXPECT_EQ(resnet50::memory_plan(net(), 1, 4).parameters, 12 * all);
  // The images are outside the region (they live from step to step).
  EXPECT_EQ(resnet50::memory_plan(net(), 8, 2).other - resnet50::memory_plan(net(), 4, 2).other,
            4 * (3 * 224 * 224 * 2 + 4 + 1000 * 6));
  // The step's own max pool keeps one byte per output of it (64 x 56 x 56 an image) in the region,
  // and the stem's batch-norm + ReLU output (64 x 112 x 112) is then not kept for backward.
  EXPECT_EQ(resnet50::memory_plan(net(), 8, 2, true).region - resnet50::memory_plan(net(), 8, 2).region,
            8 * 64 * 56 * 56 - 8 * 64 * 112 * 112 * 2);
  // At batch 256 mixed precision the activations are several GiB, as frameworks measure.
  const double gib = double(resnet50::memory_plan(net(), 256, 2).total()) / (1 << 30);
  EXPECT_GT(gib, 10);
  EXPECT_LT(gib, 30);
}

TEST(TrainLoss, HostReferenceMatchesHandValues) {
  std::vector<double> d;
  // Equal logits: loss ln(C), gradient (1/C - onehot) / n.
  const double l = resnet50::softmax_xent_reference(std::vector<float>(8, 0.f), std::vector<float>(4, 0.f), {1, 3}, 4,
                                                     1.0, d);
  EXPECT_NEAR(l, std::log(4.0), 1e-12);
  EXPECT_NEAR(d[0], 0.25 / 2, 1e-12);
  EXPECT_NEAR(d[1], (0.25 - 1) / 2, 1e-12);
  EXPECT_NEAR(d[7], (0.25 - 1) / 2, 1e-12);
  // One row, logits (1, 2) + bias (1, 0) = (2, 2): p = 1/2; label 0; scale 1024.
  const double l2 = resnet50::softmax_xent_reference({1.f, 2.f}, {1.f, 0.f}, {0}, 2, 1024.0, d);
  EXPECT_NEAR(l2, std::log(2.0), 1e-12);
  EXPECT_NEAR(d[0], -512.0, 1e-9);
  EXPECT_NEAR(d[1], 512.0, 1e-9);
  // Large logits do not overflow (the maximum is subtracted).
  const double l3 = resnet50::softmax_xent_reference({1000.f, 0.f}, {0.f, 0.f}, {1}, 2, 1.0, d);
  EXPECT_NEAR(l3, 1000.0, 1e-9);
  double sum = 0;
  for (double v : d) sum += v;
  EXPECT_NEAR(sum, 0.0, 1e-12);  // the gradient of each row sums to zero
}

// The learning rate against the linear scaling rule worked by hand: 0.1 x batch / 256, at most 0.02.
TEST(TrainLearningRate, LinearScalingCappedAt002) {
  EXPECT_FLOAT_EQ(kernels::sgd_lr_for_batch(1), 0.1f / 256.f);
  EXPECT_FLOAT_EQ(kernels::sgd_lr_for_batch(32), 0.0125f);
  EXPECT_FLOAT_EQ(kernels::sgd_lr_for_batch(51), float(0.1 * 51 / 256));
  EXPECT_FLOAT_EQ(kernels::sgd_lr_for_batch(52), 0.02f);  // 0.0203 capped
  EXPECT_FLOAT_EQ(kernels::sgd_lr_for_batch(4096), 0.02f);
  EXPECT_FLOAT_EQ(kernels::sgd_lr_for_batch(0), 0.1f / 256.f);  // never zero or negative
}

// The dynamic loss-scaling rule against a hand-worked sequence: overflows halve (floor 1) and
// count, good steps double the scale at the interval (cap 2^24) and an overflow restarts the count.
TEST(TrainLossScale, HalvesOnOverflowDoublesAfterGoodSteps) {
  float scale = 1024.f;
  int good = 0, skipped = 0;
  kernels::next_loss_scale(scale, true, good, skipped, 3);
  EXPECT_EQ(scale, 512.f);
  EXPECT_EQ(skipped, 1);
  kernels::next_loss_scale(scale, false, good, skipped, 3);
  kernels::next_loss_scale(scale, false, good, skipped, 3);
  EXPECT_EQ(scale, 512.f);
  EXPECT_EQ(good, 2);
  kernels::next_loss_scale(scale, true, good, skipped, 3);  // restarts the count
  EXPECT_EQ(scale, 256.f);
  EXPECT_EQ(good, 0);
  for (int i = 0; i < 3; ++i) kernels::next_loss_scale(scale, false, good, skipped, 3);
  EXPECT_EQ(scale, 512.f);
  EXPECT_EQ(good, 0);
  EXPECT_EQ(skipped, 2);
  float low = 1.5f;
  kernels::next_loss_scale(low, true, good, skipped, 3);
  EXPECT_EQ(low, 1.f);
  kernels::next_loss_scale(low, true, good, skipped, 3);
  EXPECT_EQ(low, 1.f);
  float high = 16777216.f;
  for (int i = 0; i < 3; ++i) kernels::next_loss_scale(high, false, good, skipped, 3);
  EXPECT_EQ(high, 16777216.f);
}

TEST(TrainCases, FullSweepAndQuick) {
  const auto full = train::train_case_ids(true);
  EXPECT_EQ(full.size(), 3u * 2u * 13u);
  for (const char* id : {"train/resnet50/fp16/nhwc/b256", "train/resnet50/tf32/nchw/b64", "train/resnet50/fp32/nchw/b1",
                         "train/resnet50/fp16/nchw/b4096"})
    EXPECT_NE(std::find(full.begin(), full.end(), id), full.end()) << id;
  const auto quick = train::train_case_ids(false);
  ASSERT_EQ(quick.size(), 2u);
  EXPECT_EQ(quick[0], "train/resnet50/fp16/nhwc/b32");
  EXPECT_EQ(quick[1], "train/resnet50/fp32/nchw/b32");
}

json rec(int64_t batch, const std::string& status, double ips, double frac, const std::string& kind = "") {
  json r = {{"family", "train"}, {"gpus", {0}}, {"status", status},
            {"params", {{"precision", "fp16"}, {"layout", "nhwc"}, {"batch", batch}}}};
  if (status == "ok") r["metrics"] = {{"images_per_s", ips}, {"memory_fraction_x", frac}, {"peak_memory_bytes", frac * 1e11}};
  if (!kind.empty()) r["reason_kind"] = kind;
  return r;
}

TEST(TrainRecommendation, PlateauMemoryAndAccumulation) {
  json records = json::array({rec(8, "ok", 600, 0.10), rec(16, "ok", 900, 0.2), rec(32, "ok", 950, 0.4),
                              rec(64, "ok", 980, 0.8), rec(128, "ok", 990, 0.95), rec(256, "skipped", 0, 0, "oom"),
                              rec(512, "skipped", 0, 0, "smaller_oom")});
  const json a = train::train_recommendation(records, 0.9, 1024, {{0, 90}});
  ASSERT_EQ(a.size(), 1u);
  const json& e = a[0];
  EXPECT_EQ(e["plateau_batch"], 128);
  EXPECT_EQ(e["throughput_batch"], 32);  // 950 >= 0.95 * 990 = 940.5; 900 is not
  EXPECT_EQ(e["memory_batch"], 64);      // 0.8 <= 0.9 < 0.95
  EXPECT_EQ(e["batch"], 32);
  EXPECT_EQ(e["smallest_batch_out_of_memory"], 256);
  EXPECT_EQ(e["accumulation_steps"], 16);  // 1024 / 64
  EXPECT_EQ(e["micro_batch"], 64);
  EXPECT_FALSE(e.contains("note"));
  EXPECT_NE(e["memory_reason"].get<std::string>().find("256 did not fit"), std::string::npos);
  const auto lines = train::train_recommendation_lines(a);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("recommended batch 32"), std::string::npos);
}

TEST(TrainRecommendation, PlateauBeyondMemoryPicksLargestThatFitsAndRoundsAccumulation) {
  json records = json::array({rec(16, "ok", 500, 0.3), rec(32, "ok", 800, 0.6), rec(64, "ok", 1000, 0.92)});
  const json e = train::train_recommendation(records, 0.9, 100, {{0, 61}})[0];
  EXPECT_EQ(e["throughput_batch"], 64);
  EXPECT_EQ(e["memory_batch"], 32);
  EXPECT_EQ(e["batch"], 32);
  EXPECT_EQ(e["accumulation_steps"], 4);  // ceil(100 / 32)
  EXPECT_EQ(e["micro_batch"], 25);        // ceil(100 / 4) <= 32
  EXPECT_TRUE(e.contains("note"));        // cc 6.1: FP16 storage, FP32 arithmetic
}

TEST(TrainRecommendation, OneBatchAndNothingFits) {
  json one = json::array({rec(32, "ok", 700, 0.2)});
  const json e = train::train_recommendation(one, 0.9, 256, {})[0];
  EXPECT_TRUE(e["batch"].is_null());
  EXPECT_NE(e["reason"].get<std::string>().find("one batch measured"), std::string::npos);
  json none = json::array({rec(1, "skipped", 0, 0, "oom")});
  const json n = train::train_recommendation(none, 0.9, 256, {})[0];
  EXPECT_TRUE(n["batch"].is_null());
  EXPECT_EQ(n["smallest_batch_out_of_memory"], 1);
  // Other families' records are not read.
  json other = json::array({rec(32, "ok", 700, 0.2)});
  other[0]["family"] = "conv";
  EXPECT_TRUE(train::train_recommendation(other, 0.9, 256, {}).empty());
}

TEST(TrainFp16Verdict, TrainingStepRowAndP40Note) {
  auto r = [](const char* prec, int64_t b, double ips) {
    return json{{"family", "train"}, {"gpus", {0}}, {"status", "ok"},
                {"params", {{"precision", prec}, {"layout", "nchw"}, {"batch", b}}}, {"metrics", {{"images_per_s", ips}}}};
  };
  const json records = json::array({r("fp32", 32, 200), r("fp32", 64, 210), r("fp16", 32, 220), r("fp16", 64, 231)});
  const json p40 = fp16_vs_fp32(records, {{0, "Tesla P40", 6, 1}})[0];
  ASSERT_EQ(p40["rows"].size(), 1u);
  EXPECT_EQ(p40["rows"][0]["kind"], "train");
  EXPECT_NEAR(p40["rows"][0]["speedup_x"].get<double>(), 231.0 / 210.0, 1e-9);  // best batch of each
  EXPECT_EQ(p40["verdict"], "does_not_pay");
  EXPECT_NE(p40["reason"].get<std::string>().find("FP16 storage with FP32 arithmetic"), std::string::npos);
  const json fast = json::array({r("fp32", 64, 1000), r("fp16", 64, 2600)});
  const json h200 = fp16_vs_fp32(fast, {{0, "NVIDIA H200", 9, 0}})[0];
  EXPECT_EQ(h200["verdict"], "pays");
  EXPECT_NE(h200["reason"].get<std::string>().find("train (ResNet-50 step"), std::string::npos);
}

// The layout the step runs in, for every GPU generation, precision, images' layout and setting.
TEST(TrainConvLayout, TensorOpPrecisionsOnTensorCoresRunNhwc) {
  const auto A = train::ConvLayoutSetting::automatic, I = train::ConvLayoutSetting::input;
  struct Row {
    int cc;
    const char* prec;
    bool input_nhwc;
    train::ConvLayoutSetting set;
    bool nhwc;
  };
  const Row rows[] = {
      // A P40 (cc 6.1): no tensor cores, every precision in the images' layout.
      {61, "fp32", false, A, false}, {61, "tf32", false, A, false}, {61, "fp16", false, A, false},
      {61, "fp16", true, A, true}, {61, "fp32", true, I, true},
      // Tensor cores: tf32 and fp16 NCHW run NHWC under auto; exact FP32 stays NCHW.
      {70, "fp16", false, A, true}, {70, "fp32", false, A, false}, {80, "tf32", false, A, true},
      {90, "tf32", false, A, true}, {90, "fp16", false, A, true}, {90, "fp32", false, A, false},
      {100, "tf32", false, A, true},
      // input: the images' layout whatever the GPU.
      {90, "tf32", false, I, false}, {90, "fp16", false, I, false}, {90, "tf32", true, I, true},
      // NHWC images: NHWC, every precision.
      {90, "fp32", true, A, true}, {90, "tf32", true, A, true}, {75, "fp16", true, A, true},
  };
  for (const Row& r : rows)
    EXPECT_EQ(train::step_runs_nhwc(r.cc, r.prec, r.input_nhwc, r.set), r.nhwc)
        << "cc " << r.cc << " " << r.prec << " input " << (r.input_nhwc ? "nhwc" : "nchw") << " "
        << train::conv_layout_setting_name(r.set);
}

TEST(TrainConvLayout, SettingParsesAutoAndInputAndRejectsTheRest) {
  EXPECT_EQ(train::conv_layout_setting(Settings::from_map({})), train::ConvLayoutSetting::automatic);
  EXPECT_EQ(train::conv_layout_setting(Settings::from_map({{"NODEBENCH_TRAIN_CONV_LAYOUT", "auto"}})),
            train::ConvLayoutSetting::automatic);
  EXPECT_EQ(train::conv_layout_setting(Settings::from_map({{"NODEBENCH_TRAIN_CONV_LAYOUT", "input"}})), train::ConvLayoutSetting::input);
  EXPECT_STREQ(train::conv_layout_setting_name(train::ConvLayoutSetting::input), "input");
  EXPECT_STREQ(train::conv_layout_setting_name(train::ConvLayoutSetting::automatic), "auto");
  EXPECT_EQ(Settings::from_map({}).to_json()["train_conv_layout"], "auto");  // recorded in the result's settings
  try {
    (void)Settings::from_map({{"NODEBENCH_TRAIN_CONV_LAYOUT", "nhwc"}});
    ADD_FAILURE() << "accepted nhwc";
  } catch (const std::exception& e) {
    EXPECT_TRUE(std::string(e.what()).find("NODEBENCH_TRAIN_CONV_LAYOUT") != std::string::npos) << e.what();
  }
}

TEST(TrainBnGridSetting, DefaultsAreTheKernelsConstantsAndBadValuesNameTheVariable) {
  const kernels::BnGridTuning d = train::bn_grid_setting(Settings::from_map({}));
  EXPECT_EQ(d.blocks_per_sm, kernels::kBnBlocksPerSm);
  EXPECT_EQ(d.row_bytes, kernels::kBnRowBytes);
  const kernels::BnGridTuning t = train::bn_grid_setting(
      Settings::from_map({{"NODEBENCH_TRAIN_BN_BLOCKS_PER_SM", "8"}, {"NODEBENCH_TRAIN_BN_ROW_BYTES", "256"}}));
  // Values other than the defaults, so that a parser ignoring either setting fails.
  ASSERT_NE(kernels::kBnBlocksPerSm, 8);
  ASSERT_NE(kernels::kBnRowBytes, 256);
  EXPECT_EQ(t.blocks_per_sm, 8);
  EXPECT_EQ(t.row_bytes, 256);
  const json rec = Settings::from_map({{"NODEBENCH_TRAIN_BN_ROW_BYTES", "256"}}).to_json();
  EXPECT_EQ(rec["train_bn_row_bytes"], "256");
  EXPECT_EQ(rec["train_bn_blocks_per_sm"], kernels::kBnBlocksPerSm);
  // 100 bytes is no row; 0, 33 and a fraction are no block count.
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"NODEBENCH_TRAIN_BN_ROW_BYTES", "100"},
           {"NODEBENCH_TRAIN_BN_BLOCKS_PER_SM", "0"},
           {"NODEBENCH_TRAIN_BN_BLOCKS_PER_SM", "33"},
           {"NODEBENCH_TRAIN_BN_BLOCKS_PER_SM", "2.5"}}) {
    try {
      (void)Settings::from_map({{name, value}});
      ADD_FAILURE() << "accepted " << name << "=" << value;
    } catch (const std::exception& e) {
      EXPECT_TRUE(std::string(e.what()).find(name) != std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace nb
#endif

// ---- the out-of-memory series of a batch sweep (conv and train families) ----------------------

TEST(OomSeries, KeepsTheSmallestFailedBatchPerSeries) {
  nb::OomSeries o;
  EXPECT_FALSE(o.smallest_failed("0/fp16/nhwc").has_value());
  EXPECT_FALSE(o.larger_than_failed("0/fp16/nhwc", 4096));
  o.failed("0/fp16/nhwc", 1024);
  o.failed("0/fp16/nhwc", 2048);  // a larger failure does not raise the bound
  EXPECT_EQ(o.smallest_failed("0/fp16/nhwc"), 1024);
  o.failed("0/fp16/nhwc", 512);   // a smaller one lowers it
  EXPECT_EQ(o.smallest_failed("0/fp16/nhwc"), 512);
  EXPECT_TRUE(o.larger_than_failed("0/fp16/nhwc", 1024));
  EXPECT_FALSE(o.larger_than_failed("0/fp16/nhwc", 512));  // the failed batch itself is tried again
  EXPECT_FALSE(o.larger_than_failed("0/fp16/nhwc", 256));
  // Series of another GPU or precision are apart.
  EXPECT_FALSE(o.smallest_failed("1/fp16/nhwc").has_value());
  EXPECT_FALSE(o.larger_than_failed("0/fp32/nhwc", 4096));
}
