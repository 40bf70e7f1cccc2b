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
#include "train_gpu_util.hpp"

namespace nb {
namespace {

using test::have_gpu;

double rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  const test::Diff d = test::max_diff(a, b);
  return d.scale > 0 ? d.worst / d.scale : d.worst;
}

TEST(TrainDpGpu, HookCoversEveryParameterOnceAndGradientsAreFinal) {
  cudaDeviceProp prop{};
  if (!have_gpu(prop)) GTEST_SKIP() << "no GPU";
  test::BackwardOnce once(prop, test::step_config("fp32", 2));
  train::TrainStep& st = once.st;
  Stream& s = once.s;
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
  const train::StepConfig cfg = test::step_config("fp32", 2);
  for (const size_t bucket : {size_t(1) << 20, size_t(25) << 20}) {
    test::Lent lent;
    const std::vector<train_dp::EngineGpu> gpu0 = {{0, prop.name, lent.libs(0)}};
    train_dp::Engine one(cfg, gpu0, bucket, 1), two(cfg, gpu0, bucket, 2);
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
