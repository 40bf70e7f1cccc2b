// GPU test of the fused training step against the unfused one (label gpu, in gpu_train_gradients'
// program; alone: --gtest_filter='TrainFusionGpu.*'): on the same batch and weights, the step with
// its batch norms fused (cuDNN's fused calls where they run, the step's own kernels elsewhere, or
// the own kernels everywhere) and the unfused step (cuDNN's batch norm, separate ReLU / add
// kernels, cuDNN's max pool) give the same loss, stem statistics and gradients, in every
// precision and layout, at batch 4 and at batch 32.
//
// Judged by the network's own sensitivity, not by a fixed tolerance: the two paths round
// differently (summation order of the statistics; FP16 stores the unfused batch-norm output once
// more before the add; TF32 then rounds a convolution's input the other way where it differs in
// its last FP32 bits), and how far such differences carry through 53 batch norms at a small batch
// is a property of the network, not of the kernels. So two more unfused steps run on the same
// batch: one whose images moved by one unit in the last place of their storage type (random
// sign: the size of one rounding at every element, as the two paths differ at every batch
// norm's output), one whose parameters moved by 2^-20 relative (random sign: about what the
// statistics' rounding does to a channel's scale and shift). For each tensor, with sens the larger
// of the two perturbed steps' relative differences from the unfused one:
//   |fused - unfused| / |unfused|  <=  k sens + floor,   k = 12, floor: 2^-20 (FP32 storage), 2^-10 (FP16).
// k: the paths differ by a rounding at each of the 53 batch norms forward and again backward; if
// those differences are independent and none is amplified more than one at the network's input,
// they add up to at most sqrt(2 x 53) = 10.3 times one of them; 12 rounds that up. The floor: a
// relative difference of about one storage rounding needs no sensitivity to explain it. A fault in
// a fused layer (a wrong mask, statistics, coefficient) changes that layer's results by O(1), far
// above both; tests/test_train_bn_layer_gpu.cpp finds such a fault layer by layer whatever the
// network's conditioning. The loss is judged the same way; the stem's batch-norm statistics
// (the same convolution output on both paths, only the order of the sums differs) within 1e-4.
// NchwStepWithNhwcConvolutionsMatchesTheNchwStep judges an NCHW step whose convolutions run in NHWC
// (NODEBENCH_TRAIN_CONV_LAYOUT=auto on tensor cores) against the same step in NCHW the same way.
// Each comparison prints, per tensor, the fused step's difference, both sensitivities, the bound
// and their ratio; TwoUnfusedStepsAgree prints the unfused step's own spread (the same step twice).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "shared/resnet50/resnet50_net.hpp"
#include "shared/resnet50/train_step.hpp"
#include "gpu_test_util.hpp"

namespace nb {
namespace {

using test::have_gpu;

constexpr double kSensitivityFactor = 12;
constexpr float kWeightMove = 1.f / 1048576.f;  // 2^-20

double rel_norm_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0, n = 0;
  for (size_t i = 0; i < a.size(); ++i) d += (double(a[i]) - b[i]) * (double(a[i]) - b[i]), n += double(b[i]) * b[i];
  return n > 0 ? std::sqrt(d / n) : std::sqrt(d);
}

const train::ParamRef& param(const train::TrainStep& st, const std::string& name) {
  for (const auto& p : st.params())
    if (p.name == name) return p;
  throw Error("no parameter " + name);
}

// A sign from the index (a fixed pseudo-random pattern).
bool up(size_t i) { return ((i * 0x9E3779B97F4A7C15ull) >> 61) & 1; }

// v moved by one unit in the last place of its storage type, up or down.
double one_unit(double v, bool half, bool u) {
  if (!half) return std::nextafter(float(v), u ? INFINITY : -INFINITY);
  int e = 0;
  std::frexp(std::fabs(v), &e);
  const double spacing = v == 0 ? std::ldexp(1.0, -24) : std::ldexp(1.0, std::max(e, -13) - 11);
  return v + (u ? spacing : -spacing);
}

// The paths taken: none unfused on the fused step, all unfused on the other; a fallback from
// cuDNN's fused calls only for CUDNN_STATUS_NOT_SUPPORTED (another status would be the step's error).
void expect_paths(const train::TrainStep& fu, const train::TrainStep& un, train::Fusion mode) {
  const auto fd = fu.fusion_details(), ud = un.fusion_details();
  const auto& cfg = fu.config();
  std::printf("%s %s b%lld fusion %s: %s\n", cfg.prec->name, cfg.nhwc ? "nhwc" : "nchw", (long long)cfg.batch,
              train::fusion_setting_name(mode), fd.dump().c_str());
  const bool fused = mode != train::Fusion::off;
  EXPECT_EQ(ud["fused_layers"], 0);
  EXPECT_EQ(ud["max_pool"], "cudnn");
  if (!fused) return;
  EXPECT_EQ(fd["fused_layers"], 49) << "every batch norm followed by a ReLU or the add";
  EXPECT_EQ(fd["max_pool"], "kernels");  // the step's own max pool on the fused paths, cuDNN's unfused
  for (const auto& r : fd["reasons"]) {
    const std::string why = r.get<std::string>();
    if (why.find("cuDNN answered") != std::string::npos)
      EXPECT_NE(why.find("CUDNN_STATUS_NOT_SUPPORTED"), std::string::npos) << why;
  }
  for (const char* k : {"bn_relu", "bn_add_relu", "bn"}) {
    EXPECT_EQ(fd["layers"][k]["unfused"], 0) << k;
    if (mode == train::Fusion::kernels || cfg.prec->data != CUDNN_DATA_HALF || !cfg.nhwc)
      EXPECT_EQ(fd["layers"][k]["cudnn"], 0) << k;
  }
}

// One quantity judged against the sensitivity: prints a row, returns the ratio to the bound.
double judge(const std::string& name, double fused, double sens_in, double sens_w, double floor) {
  const double allowed = kSensitivityFactor * std::max(sens_in, sens_w) + floor;
  std::printf("  %-30s fused %.2e | images +-1 unit %.2e, weights +-2^-20 %.2e | bound %.2e  ratio %.2f\n",
              name.c_str(), fused, sens_in, sens_w, allowed, fused / allowed);
  EXPECT_LE(fused, allowed) << name;
  EXPECT_GT(std::max(sens_in, sens_w), 0) << name << ": the perturbed steps moved nothing";
  return fused / allowed;
}

const char* const kTensors[] = {"fc.bias", "fc.weight", "layer4.2.conv3.bn.weight", "layer4.2.conv3.bn.bias",
                                "layer4.2.conv3.weight", "layer4.0.conv1.bn.weight", "layer3.0.downsample.bn.weight",
                                "layer3.0.downsample.weight", "layer2.1.conv2.bn.bias", "layer2.1.conv2.weight",
                                "layer1.0.conv3.bn.weight", "layer1.0.conv1.weight", "conv1.bn.weight", "conv1.bn.bias",
                                "conv1.weight"};

void compare(const cudaDeviceProp& prop, const char* prec, bool nhwc, int64_t batch, train::Fusion mode) {
  SCOPED_TRACE(std::string(prec) + (nhwc ? "/nhwc" : "/nchw") + " b" + std::to_string(batch) + " fusion " +
               train::fusion_setting_name(mode));
  Stream s;
  train::StepConfig cfg;
  cfg.prec = &cudnn::prec_by_name(prec);
  cfg.nhwc = nhwc;
  cfg.batch = batch;
  cfg.loss_scale = train::default_loss_scale(*cfg.prec);
  cfg.fusion = train::Fusion::off;
  const bool half = cfg.prec->data == CUDNN_DATA_HALF;
  test::Lent lent;  // one session's handles and algorithm choices for every step
  train::TrainStep un(cfg, lent.libs(0), 0, prop.name, s.get()), pi(cfg, lent.libs(0), 0, prop.name, s.get()),
      pw(cfg, lent.libs(0), 0, prop.name, s.get());
  cfg.fusion = mode;
  train::TrainStep fu(cfg, lent.libs(0), 0, prop.name, s.get());
  for (train::TrainStep* st : {&un, &fu, &pi, &pw}) st->setup();
  pi.map_images([&](double v, size_t i) { return one_unit(v, half, up(i)); });
  pw.map_weights([](float w, size_t i) { return w * (1.f + (up(i) ? kWeightMove : -kWeightMove)); });
  expect_paths(fu, un, mode);
  for (train::TrainStep* st : {&un, &fu, &pi, &pw}) {
    st->forward(s.get());
    st->backward(s.get());
  }
  const double floor = half ? std::ldexp(1.0, -10) : std::ldexp(1.0, -20);
  const double lu = un.read_loss();
  ASSERT_TRUE(std::isfinite(lu) && std::isfinite(fu.read_loss()));
  auto rel = [&](double v) { return std::fabs(v - lu) / std::fabs(lu); };
  std::printf("  loss unfused %.7f fused %.7f\n", lu, double(fu.read_loss()));
  double worst = judge("loss", rel(fu.read_loss()), rel(pi.read_loss()), rel(pw.read_loss()), floor);
  // The stem's statistics (the same convolution output on both): running mean and variance,
  // saved mean and inverse standard deviation.
  const double stats = rel_norm_diff(fu.bn_statistics(0), un.bn_statistics(0));
  std::printf("  stem batch-norm statistics: rel %.2e (within 1e-4)\n", stats);
  EXPECT_LE(stats, 1e-4);
  for (const std::string name : kTensors) {
    const auto gu = un.gradients(param(un, name));
    double norm = 0;
    for (float v : gu) norm += double(v) * v;
    EXPECT_GT(norm, 0) << name << ": a zero gradient compares as nothing";
    worst = std::max(worst, judge(name, rel_norm_diff(fu.gradients(param(fu, name)), gu),
                                  rel_norm_diff(pi.gradients(param(pi, name)), gu),
                                  rel_norm_diff(pw.gradients(param(pw, name)), gu), floor));
  }
  std::printf("  worst ratio to the bound %.2f (<= 1: as close as rounding-sized changes move the unfused step)\n", worst);
}

// Two unfused steps on the same batch and weights: how far the reference path is from itself
// (cuDNN's backward algorithms may sum in a different order from run to run), judged the same way.
TEST(TrainFusionGpu, TwoUnfusedStepsAgree) {
  cudaDeviceProp prop{};
  if (!have_gpu(prop)) GTEST_SKIP() << "no GPU";
  const int cc = prop.major * 10 + prop.minor;
  for (bool nhwc : {false, true})
    for (const char* prec : {"fp32", "tf32", "fp16"})
      if (std::string(prec) != "tf32" || cc >= 80) compare(prop, prec, nhwc, 4, train::Fusion::off);
}

TEST(TrainFusionGpu, FusedStepMatchesTheUnfusedStep) {
  cudaDeviceProp prop{};
  if (!have_gpu(prop)) GTEST_SKIP() << "no GPU";
  const int cc = prop.major * 10 + prop.minor;
  // Batch 4 as the other GPU tests; batch 32, where each batch norm averages 8x more values and
  // the network carries rounding less far.
  for (int64_t batch : {4, 32}) {
    for (bool nhwc : {false, true})
      for (const char* prec : {"fp32", "tf32", "fp16"})
        if (std::string(prec) != "tf32" || cc >= 80) compare(prop, prec, nhwc, batch, train::Fusion::on);
    // FP16 NHWC is the one where `on` takes cuDNN's fused calls: the step's kernels there too.
    compare(prop, "fp16", true, batch, train::Fusion::kernels);
  }
}

// ---- the convolution layout: an NCHW step run in NHWC against the same step run in NCHW --------
// Local index of a convolution weight in NHWC order (k, r, s, c) -> its index in NCHW order (k, c, r, s).
size_t krsc_to_kcrs(size_t l, const resnet50::ConvSpec& c) {
  const size_t C = size_t(c.c), R = size_t(c.r);
  const size_t ci = l % C;
  l /= C;
  const size_t sx = l % R;
  l /= R;
  const size_t r = l % R, k = l / R;
  return ((k * C + ci) * R + r) * R + sx;
}

const resnet50::ConvSpec* conv_of(const std::string& param_name) {
  for (const auto& c : resnet50::net().convs)
    if (c.name + ".weight" == param_name) return &c;
  return nullptr;
}

// For each index of an NHWC step's compute segment (map_weights' i below n_a), the index of the
// same weight in an NCHW step's (the two segments have the same offsets; only the convolutions'
// weights are ordered differently).
std::vector<size_t> nchw_index(const train::TrainStep& st) {
  std::vector<size_t> perm(st.grad_buffers().n_a);
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = i;
  for (const auto& p : st.params())
    if (const resnet50::ConvSpec* c = p.fp32_segment ? nullptr : conv_of(p.name))
      for (size_t l = 0; l < p.count; ++l) perm[p.offset + l] = p.offset + krsc_to_kcrs(l, *c);
  return perm;
}

// A gradient of the NHWC step in NCHW order.
std::vector<float> in_nchw_order(const std::string& name, const std::vector<float>& g) {
  const resnet50::ConvSpec* c = conv_of(name);
  if (!c) return g;
  std::vector<float> out(g.size());
  for (size_t l = 0; l < g.size(); ++l) out[krsc_to_kcrs(l, *c)] = g[l];
  return out;
}

// The same NCHW images and weights (the reference's, each convolution's reordered for NHWC): the
// step with its convolutions in NHWC (the images converted at its start) against the one in
// NCHW, judged as the fused step against the unfused one: the two differ by the convolutions'
// and batch norms' summation order (and TF32's rounding of other sums), rounding-sized changes.
void compare_layouts(const cudaDeviceProp& prop, const char* prec, int64_t batch) {
  SCOPED_TRACE(std::string(prec) + "/nchw b" + std::to_string(batch) + ": convolutions nhwc against nchw");
  Stream s;
  train::StepConfig cfg;
  cfg.prec = &cudnn::prec_by_name(prec);
  cfg.batch = batch;
  cfg.loss_scale = train::default_loss_scale(*cfg.prec);
  cfg.fusion = train::Fusion::on;
  train::set_layouts(cfg, false, false);
  const bool half = cfg.prec->data == CUDNN_DATA_HALF;
  test::Lent lent;
  train::TrainStep ref(cfg, lent.libs(0), 0, prop.name, s.get()), pi(cfg, lent.libs(0), 0, prop.name, s.get()),
      pw(cfg, lent.libs(0), 0, prop.name, s.get());
  train::set_layouts(cfg, false, true);
  train::TrainStep nh(cfg, lent.libs(0), 0, prop.name, s.get());
  ASSERT_TRUE(nh.config().nhwc && nh.config().images_nchw);
  for (train::TrainStep* st : {&ref, &nh, &pi, &pw}) st->setup();
  std::vector<float> w;
  ref.map_weights([&](float v, size_t) {
    w.push_back(v);
    return v;
  });
  const std::vector<size_t> perm = nchw_index(nh);
  size_t moved = 0;
  nh.map_weights([&](float, size_t i) {
    const size_t j = i < perm.size() ? perm[i] : i;
    moved += j != i;
    return w.at(j);
  });
  EXPECT_GT(moved, size_t(1000000)) << "the convolutions' weights were reordered";
  pi.map_images([&](double v, size_t i) { return one_unit(v, half, up(i)); });
  pw.map_weights([](float v, size_t i) { return v * (1.f + (up(i) ? kWeightMove : -kWeightMove)); });
  EXPECT_EQ(nh.fusion_details()["fused_layers"], 49);
  for (train::TrainStep* st : {&ref, &nh, &pi, &pw}) {
    st->forward(s.get());
    st->backward(s.get());
  }
  const double floor = half ? std::ldexp(1.0, -10) : std::ldexp(1.0, -20);
  const double lr = ref.read_loss();
  ASSERT_TRUE(std::isfinite(lr) && std::isfinite(nh.read_loss()));
  auto rel = [&](double v) { return std::fabs(v - lr) / std::fabs(lr); };
  std::printf("  loss nchw %.7f nhwc %.7f\n", lr, double(nh.read_loss()));
  double worst = judge("loss", rel(nh.read_loss()), rel(pi.read_loss()), rel(pw.read_loss()), floor);
  for (const std::string name : kTensors) {
    const auto gr = ref.gradients(param(ref, name));
    worst = std::max(worst, judge(name, rel_norm_diff(in_nchw_order(name, nh.gradients(param(nh, name))), gr),
                                  rel_norm_diff(pi.gradients(param(pi, name)), gr),
                                  rel_norm_diff(pw.gradients(param(pw, name)), gr), floor));
  }
  std::printf("  worst ratio to the bound %.2f\n", worst);
}

TEST(TrainFusionGpu, NchwStepWithNhwcConvolutionsMatchesTheNchwStep) {
  cudaDeviceProp prop{};
  if (!have_gpu(prop)) GTEST_SKIP() << "no GPU";
  const int cc = prop.major * 10 + prop.minor;
  // What NODEBENCH_TRAIN_CONV_LAYOUT=auto runs in NHWC (tf32, fp16), and exact FP32 forced to it.
  for (const char* prec : {"fp32", "tf32", "fp16"})
    if (std::string(prec) != "tf32" || cc >= 80) compare_layouts(prop, prec, 4);
}

}  // namespace
}  // namespace nb
