// ResNet-50 v1.5's layer list and its memory plan (see resnet50_net.hpp).
#include "resnet50_net.hpp"

#include "step_memory.hpp"

#include <algorithm>
#include <cmath>

namespace nb::resnet50 {
namespace {

Net build() {
  Net n;
  n.convs.push_back({"conv1", n.image_c, 64, n.image_hw, 7, 2, 3});
  const int widths[4] = {64, 128, 256, 512};
  const int counts[4] = {3, 4, 6, 3};
  int in_c = 64, hw = n.pool_out_hw;
  for (int s = 0; s < 4; ++s) {
    const int mid = widths[s], out = 4 * mid;
    for (int b = 0; b < counts[s]; ++b) {
      const int stride = (b == 0 && s > 0) ? 2 : 1;
      const std::string p = "layer" + std::to_string(s + 1) + "." + std::to_string(b) + ".";
      Bottleneck blk;
      blk.stage = s + 1;
      blk.conv1 = int(n.convs.size());
      n.convs.push_back({p + "conv1", in_c, mid, hw, 1, 1, 0});
      blk.conv2 = int(n.convs.size());
      n.convs.push_back({p + "conv2", mid, mid, hw, 3, stride, 1});  // v1.5: stride on the 3x3
      const int ohw = n.convs.back().out_hw();
      blk.conv3 = int(n.convs.size());
      n.convs.push_back({p + "conv3", mid, out, ohw, 1, 1, 0});
      if (b == 0) {
        blk.down = int(n.convs.size());
        n.convs.push_back({p + "downsample", in_c, out, hw, 1, stride, 0});
      }
      n.blocks.push_back(blk);
      in_c = out;
      hw = ohw;
    }
  }
  return n;
}

}  // namespace

const Net& net() {
  static const Net n = build();
  return n;
}

int64_t Net::conv_weight_count() const {
  int64_t s = 0;
  for (const auto& c : convs) s += c.weights();
  return s;
}

int64_t Net::bn_parameter_count() const {
  int64_t s = 0;
  for (const auto& c : convs) s += 2 * int64_t(c.k);
  return s;
}

double Net::forward_flops_per_image() const {
  double f = 0;
  for (const auto& c : convs) f += 2.0 * double(c.out_elems()) * c.c * c.r * c.r;
  return f + 2.0 * fc_in * classes;
}

int Net::stage_out_hw(int stage) const {
  if (stage <= 0) return pool_out_hw;
  int hw = 0;
  for (const auto& b : blocks)
    if (b.stage == stage) hw = convs[size_t(b.conv3)].out_hw();
  return hw;
}

int Net::stage_out_c(int stage) const {
  if (stage <= 0) return convs[0].k;
  int c = 0;
  for (const auto& b : blocks)
    if (b.stage == stage) c = convs[size_t(b.conv3)].k;
  return c;
}

int64_t kept_activation_elems_per_image(const Net& n) {
  const ConvSpec& stem = n.convs[0];
  // The image, the stem's convolution output and its batch norm + ReLU output, the max pool's output.
  int64_t e = stem.in_elems() + 2 * stem.out_elems() + int64_t(stem.k) * n.pool_out_hw * n.pool_out_hw;
  for (const auto& b : n.blocks) {
    const ConvSpec &c1 = n.convs[size_t(b.conv1)], &c2 = n.convs[size_t(b.conv2)], &c3 = n.convs[size_t(b.conv3)];
    e += 2 * c1.out_elems() + 2 * c2.out_elems();  // conv output (batch norm's input) and BN+ReLU output
    e += c3.out_elems();                           // conv3 output (bn3's input)
    if (b.down >= 0) e += n.convs[size_t(b.down)].out_elems();
    e += c3.out_elems();                           // the block's output (after add + ReLU)
  }
  return e + n.fc_in;  // pooled features (the FC's input)
}

int64_t max_activation_elems_per_image(const Net& n) {
  int64_t m = 0;
  for (const auto& c : n.convs) m = std::max({m, c.in_elems(), c.out_elems()});
  return m;
}

MemoryPlan memory_plan(const Net& n, int64_t batch, int elem, bool own_max_pool, bool convert_images) {
  MemoryPlan p;
  StepPlanInput in;
  in.batch = batch, in.elem = elem, in.own_max_pool = own_max_pool, in.convert_images = convert_images;
  // With its own max pool the step recomputes the stem's ReLU mask from its input (train_fusion.hpp).
  in.layers.resize(n.convs.size());
  in.layers[0].mask_from_x = own_max_pool;
  p.region = int64_t(plan_step(n, in).total);
  const int64_t compute = n.conv_weight_count() + int64_t(n.fc_in) * n.classes;  // weights in storage type
  const int64_t fp32 = n.bn_parameter_count() + n.classes;                       // BN and FC bias: FP32
  // master + momentum in FP32 for all; gradients in the storage type (FP32 ones in FP32); the
  // compute copy of the weights when the storage type is not FP32.
  p.parameters = 2 * 4 * (compute + fp32) + compute * elem + fp32 * 4 + (elem != 4 ? compute * elem : 0);
  // The images; BN running mean/var and saved mean/inverse variance (FP32); labels (int32), logits
  // (FP32) and their gradient (storage type), the loss.
  int64_t bn_c = 0;
  for (const auto& c : n.convs) bn_c += c.k;
  p.other = n.convs[0].in_elems() * batch * elem + 4 * 4 * bn_c + batch * 4 + batch * n.classes * (4 + elem) + 4;
  return p;
}

ByteFloor memory_bound_floor(const Net& n, int64_t batch, int elem) {
  ByteFloor f;
  std::vector<bool> join(n.convs.size(), false), plain(n.convs.size(), false);
  for (const auto& b : n.blocks) {
    join[size_t(b.conv3)] = true;
    if (b.down >= 0) plain[size_t(b.down)] = true;
  }
  for (size_t i = 0; i < n.convs.size(); ++i) {
    const int64_t e = n.convs[i].out_elems() * batch;
    // forward: x, y (+ residual); backward: x, dy, mask (not for the projection), dx (+ dz)
    const int64_t fwd = 2 + (join[i] ? 1 : 0), bwd = 3 + (plain[i] ? 0 : 1) + (join[i] ? 1 : 0);
    f.bn += (fwd + bwd) * e * elem;
  }
  const int64_t stem = n.convs[0].out_elems() * batch, pooled = int64_t(n.convs[0].k) * n.pool_out_hw * n.pool_out_hw * batch;
  const int64_t last = int64_t(n.fc_in) * n.stage_out_hw(4) * n.stage_out_hw(4) * batch, feat = int64_t(n.fc_in) * batch;
  f.pool = (stem + pooled) * elem + (stem + pooled + stem) * elem + (last + feat) * elem + (feat + last) * elem;
  const int64_t compute = n.conv_weight_count() + int64_t(n.fc_in) * n.classes, fp32 = n.bn_parameter_count() + n.classes;
  f.update = compute * (16 + elem + (elem != 4 ? elem : 0)) + fp32 * (16 + 4);
  return f;
}

double softmax_xent_reference(const std::vector<float>& logits, const std::vector<float>& bias,
                              const std::vector<int32_t>& labels, int classes, double scale, std::vector<double>& dlogits) {
  const size_t n = labels.size();
  dlogits.assign(n * size_t(classes), 0.0);
  double loss = 0;
  for (size_t i = 0; i < n; ++i) {
    double m = -INFINITY;
    for (int j = 0; j < classes; ++j) m = std::max(m, double(logits[i * classes + j]) + bias[size_t(j)]);
    double sum = 0;
    for (int j = 0; j < classes; ++j) sum += std::exp(double(logits[i * classes + j]) + bias[size_t(j)] - m);
    const int y = labels[i];
    loss += std::log(sum) + m - (double(logits[i * classes + size_t(y)]) + bias[size_t(y)]);
    for (int j = 0; j < classes; ++j) {
      const double p = std::exp(double(logits[i * classes + j]) + bias[size_t(j)] - m) / sum;
      dlogits[i * classes + j] = scale * (p - (j == y ? 1.0 : 0.0)) / double(n);
    }
  }
  return loss / double(n);
}

}  // namespace nb::resnet50
