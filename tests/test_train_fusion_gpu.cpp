// GPU test of the fused training step (label gpu, in gpu_train_gradients' program): on the same
// batch and weights, the step with its batch norms fused (cuDNN's fused calls where they run,
// the step's own kernels elsewhere, or the own kernels everywhere) gives the loss, the batch-norm
// statistics and the gradients of the unfused step (cuDNN's batch norm, separate ReLU / add
// kernels, cuDNN's max pool; the fused step pools with its own max pool, which sends a tie's
// gradient to the first maximum: ties at zero, the usual ones after the stem's ReLU, get no
// gradient through that ReLU anyway), in every precision and layout at batch 4. Tolerances, relative:
//   loss: FP32/TF32 1e-5, FP16 5e-3; gradients (the norm of the difference over the norm, per
//   sampled tensor): FP32 1e-3, TF32 5e-3, FP16 3e-2; the stem's batch-norm statistics 1e-4.
// Why: in FP32 the two differ only in the order of the batch-norm sums and in the convolutions'
// backward algorithms, which may sum in any order (the two-pass test in test_train_gpu.cpp allows
// 1e-3 for two runs of the same step); TF32 rounds the convolutions' inputs to 10 bits, so an input
// that differs in its last FP32 bits can round the other way; FP16 stores each activation to 11
// bits at different points (fused: once after batch norm + add + ReLU; unfused: after batch norm
// and again after the add), and that difference of half an FP16 unit travels through 53 layers.
// The stem's statistics are of the same convolution output on both paths, so only the order of
// the sums differs there. Each comparison prints what it measured.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "shared/resnet50/train_step.hpp"
#include "gpu_test_util.hpp"

namespace nb {
namespace {

using test::have_gpu;

struct Tol {
  double loss, grad;
};

double rel_norm_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0, n = 0;
  for (size_t i = 0; i < a.size(); ++i) d += (double(a[i]) - b[i]) * (double(a[i]) - b[i]), n += double(b[i]) * b[i];
  return n > 0 ? std::sqrt(d / n) : std::sqrt(d);
}

train::StepConfig cfg_unfused(train::StepConfig c) {
  c.fusion = train::Fusion::off;
  return c;
}

const train::ParamRef& param(const train::TrainStep& st, const std::string& name) {
  for (const auto& p : st.params())
    if (p.name == name) return p;
  throw Error("no parameter " + name);
}

void compare(const cudaDeviceProp& prop, const char* prec, bool nhwc, train::Fusion mode, const Tol& tol) {
  SCOPED_TRACE(std::string(prec) + (nhwc ? "/nhwc" : "/nchw") + " fusion " + train::fusion_setting_name(mode));
  Stream s;
  train::StepConfig cfg;
  cfg.prec = &cudnn::prec_by_name(prec);
  cfg.nhwc = nhwc;
  cfg.batch = 4;
  cfg.loss_scale = train::default_loss_scale(*cfg.prec);
  cfg.fusion = train::Fusion::off;
  test::Lent lent;  // one session's handles and algorithm choices for both steps
  train::TrainStep un(cfg, lent.libs(0), 0, prop.name, s.get());
  cfg.fusion = mode;
  train::TrainStep fu(cfg, lent.libs(0), 0, prop.name, s.get());
  // The unfused step again with its weights moved by about one part in a million (the first 64
  // elements of every parameter), to see how far rounding-sized changes carry in this network at
  // batch 4: identical arithmetic agrees exactly, so that is no measure of what rounding does.
  train::TrainStep pe(cfg_unfused(cfg), lent.libs(0), 0, prop.name, s.get());
  un.setup();
  fu.setup();
  pe.setup();
  for (const auto& q : pe.params())
    for (size_t i = 0; i < std::min<size_t>(64, q.count); ++i) pe.set_param(q, i, pe.param(q, i) * (1.f + 1.f / 1048576.f));
  // The paths taken: none unfused on the fused step, all unfused on the other.
  const auto fd = fu.fusion_details(), ud = un.fusion_details();
  std::printf("%s %s fusion %s: %s\n", prec, nhwc ? "nhwc" : "nchw", train::fusion_setting_name(mode), fd.dump().c_str());
  const bool fused = mode != train::Fusion::off;  // off: two unfused steps, the reference's own spread
  if (fused) EXPECT_EQ(fd["fused_layers"], 49) << "every batch norm followed by a ReLU or the add";
  EXPECT_EQ(ud["fused_layers"], 0);
  if (fused) EXPECT_EQ(fd["max_pool"], "kernels");  // the step's own max pool on the fused paths, cuDNN's unfused
  EXPECT_EQ(ud["max_pool"], "cudnn");
  // A layer may fall back from cuDNN's fused calls only because cuDNN does not run them there;
  // another status (a bad parameter) would be the step's error.
  for (const auto& r : fd["reasons"]) {
    const std::string why = r.get<std::string>();
    if (why.find("cuDNN answered") != std::string::npos)
      EXPECT_NE(why.find("CUDNN_STATUS_NOT_SUPPORTED"), std::string::npos) << why;
  }
  for (const char* k : {"bn_relu", "bn_add_relu", "bn"}) {
    if (!fused) break;
    EXPECT_EQ(fd["layers"][k]["unfused"], 0) << k;
    if (mode == train::Fusion::kernels || cfg.prec->data != CUDNN_DATA_HALF || !nhwc) EXPECT_EQ(fd["layers"][k]["cudnn"], 0) << k;
  }
  for (train::TrainStep* st : {&un, &fu, &pe}) {
    st->forward(s.get());
    st->backward(s.get());
  }
  const double lu = un.read_loss(), lf = fu.read_loss();
  std::printf("  loss unfused %.7f fused %.7f (rel %.2e)\n", lu, lf, std::fabs(lf - lu) / std::fabs(lu));
  ASSERT_TRUE(std::isfinite(lu) && std::isfinite(lf));
  EXPECT_LE(std::fabs(lf - lu), tol.loss * std::fabs(lu));
  // The stem's statistics (the same convolution output on both): running mean and variance,
  // saved mean and inverse standard deviation.
  const auto su = un.bn_statistics(0), sf = fu.bn_statistics(0);
  const double stats = rel_norm_diff(sf, su);
  std::printf("  stem batch-norm statistics: rel %.2e\n", stats);
  EXPECT_LE(stats, 1e-4);
  for (const std::string name :
       {"fc.bias", "fc.weight", "layer4.2.conv3.bn.weight", "layer4.2.conv3.bn.bias", "layer4.2.conv3.weight",
        "layer3.0.downsample.bn.weight", "layer3.0.downsample.weight", "layer2.1.conv2.bn.bias", "layer2.1.conv2.weight",
        "layer1.0.conv3.bn.weight", "layer1.0.conv1.weight", "conv1.bn.weight", "conv1.bn.bias", "conv1.weight"}) {
    const auto gu = un.gradients(param(un, name)), gf = fu.gradients(param(fu, name));
    const double r = rel_norm_diff(gf, gu);
    const double sens = rel_norm_diff(pe.gradients(param(pe, name)), gu);
    std::printf("  %-30s rel %.2e  (unfused, weights moved 1e-6: rel %.2e)\n", name.c_str(), r, sens);
    EXPECT_LE(r, tol.grad) << name;
    double norm = 0;
    for (float v : gu) norm += double(v) * v;
    EXPECT_GT(norm, 0) << name << ": a zero gradient compares as nothing";
  }
}

// Two unfused steps on the same batch and weights: how far the reference path is from itself
// (cuDNN's backward algorithms may sum in a different order from run to run).
TEST(TrainFusionGpu, TwoUnfusedStepsAgree) {
  cudaDeviceProp prop{};
  if (!have_gpu(prop)) GTEST_SKIP() << "no GPU";
  const int cc = prop.major * 10 + prop.minor;
  for (bool nhwc : {false, true}) {
    compare(prop, "fp32", nhwc, train::Fusion::off, {1e-5, 1e-3});
    if (cc >= 80) compare(prop, "tf32", nhwc, train::Fusion::off, {1e-5, 5e-3});
    compare(prop, "fp16", nhwc, train::Fusion::off, {5e-3, 3e-2});
  }
}

TEST(TrainFusionGpu, FusedStepMatchesTheUnfusedStep) {
  cudaDeviceProp prop{};
  if (!have_gpu(prop)) GTEST_SKIP() << "no GPU";
  const int cc = prop.major * 10 + prop.minor;
  for (bool nhwc : {false, true}) {
    compare(prop, "fp32", nhwc, train::Fusion::on, {1e-5, 1e-3});
    if (cc >= 80) compare(prop, "tf32", nhwc, train::Fusion::on, {1e-5, 5e-3});
    compare(prop, "fp16", nhwc, train::Fusion::on, {5e-3, 3e-2});
  }
  // FP16 NHWC is the one where `on` takes cuDNN's fused calls: the step's kernels there too.
  compare(prop, "fp16", true, train::Fusion::kernels, {5e-3, 3e-2});
}

}  // namespace
}  // namespace nb
