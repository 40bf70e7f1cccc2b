// GPU tests of the data-parallel engine's pieces on one GPU (label gpu): the training step's
// gradient hook reports every parameter exactly once, in decreasing contiguous ranges, with
// every gradient of a reported range already final when the hook runs; gradient accumulation
// over k = 2 micro-steps on the same weights and images gives the one-step gradient (the mean
// over the micro-steps, not their sum). The all-reduce itself is checked by the family on two
// or more GPUs (tests/gpu_train_dp_check.py).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "train_dp/train_dp_engine.hpp"
#include "shared/resnet50/train_step.hpp"
#include "gpu_test_util.hpp"

namespace nb {
namespace {

using test::have_gpu;

double rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, double(std::fabs(a[i] - b[i])));
    scale = std::max(scale, double(std::fabs(b[i])));
  }
  return scale > 0 ? worst / scale : worst;
}

TEST(TrainDpGpu, HookCoversEveryParameterOnceAndGradientsAreFinal) {
  cudaDeviceProp prop{};
  if (!have_gpu(prop)) GTEST_SKIP() << "no GPU";
  Stream s;
  train::StepConfig cfg;
  cfg.prec = &cudnn::prec_by_name("fp32");
  cfg.batch = 2;
  train::TrainStep st(cfg, 0, prop.name, s.get());
  st.setup();
  st.forward(s.get());
  st.backward(s.get());
  std::vector<std::vector<float>> reference;
  for (const auto& p : st.params()) reference.push_back(st.gradients(p));
  // Zero the gradients, then backward with the hook: at each hook, copy the reported ranges'
  // gradients aside on the stream (what a bucket's all-reduce would read at that point).
  const train::GradBuffers gb = st.grad_buffers();
  NB_CUDA(cudaMemsetAsync(gb.a, 0, gb.n_a * 4, s.get()));
  NB_CUDA(cudaMemsetAsync(gb.b, 0, gb.n_b * 4, s.get()));
  DeviceBuffer snap_a(gb.n_a * 4), snap_b(gb.n_b * 4);
  std::vector<std::pair<size_t, size_t>> ranges;
  st.forward(s.get());
  st.backward(s.get(), [&](size_t first, size_t end) {
    ranges.push_back({first, end});
    for (size_t i = first; i < end && i < st.params().size(); ++i) {
      const auto& p = st.params()[i];
      char* dst = static_cast<char*>(p.fp32_segment ? snap_b.get() : snap_a.get()) + p.offset * 4;
      const char* src = reinterpret_cast<const char*>(p.fp32_segment ? static_cast<void*>(gb.b) : gb.a) + p.offset * 4;
      NB_CUDA(cudaMemcpyAsync(dst, src, p.count * 4, cudaMemcpyDeviceToDevice, s.get()));
    }
  });
  NB_CUDA(cudaStreamSynchronize(s.get()));
  const size_t n = st.params().size();
  ASSERT_FALSE(ranges.empty());
  EXPECT_EQ(ranges.front().second, n);
  EXPECT_EQ(ranges.back().first, 0u);
  for (size_t r = 0; r + 1 < ranges.size(); ++r) EXPECT_EQ(ranges[r + 1].second, ranges[r].first) << "range " << r;
  EXPECT_EQ(ranges.size(), 1u + resnet50::net().blocks.size() + 1u);
  for (size_t i = 0; i < n; ++i) {
    const auto& p = st.params()[i];
    std::vector<float> got(p.count);
    NB_CUDA(cudaMemcpy(got.data(), static_cast<char*>(p.fp32_segment ? snap_b.get() : snap_a.get()) + p.offset * 4,
                       p.count * 4, cudaMemcpyDeviceToHost));
    EXPECT_LE(rel_diff(got, reference[i]), 1e-3) << p.name << ": not final when its hook ran";
  }
}

TEST(TrainDpGpu, AccumulationAveragesTheMicroSteps) {
  cudaDeviceProp prop{};
  if (!have_gpu(prop)) GTEST_SKIP() << "no GPU";
  train::StepConfig cfg;
  cfg.prec = &cudnn::prec_by_name("fp32");
  cfg.batch = 2;
  for (const size_t bucket : {size_t(1) << 20, size_t(25) << 20}) {
    train_dp::Engine one(cfg, {0}, {prop.name}, bucket, 1), two(cfg, {0}, {prop.name}, bucket, 2);
    one.setup();
    two.setup();
    ASSERT_GE(one.buckets().size(), 1u);
    (void)one.run({0}, {}, 1);
    (void)two.run({0}, {}, 1);
    const auto& params = one.worker(0).st->params();
    for (size_t i : {size_t(0), size_t(1), params.size() / 2, params.size() - 2, params.size() - 1}) {
      const auto a = two.worker(0).st->gradients(params[i]);
      const auto b = one.worker(0).st->gradients(params[i]);
      EXPECT_LE(rel_diff(a, b), 1e-3) << params[i].name << " (bucket " << bucket << ")";
    }
  }
}

}  // namespace
}  // namespace nb
