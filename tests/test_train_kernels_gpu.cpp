// GPU tests of the training step's own kernels (label gpu, in gpu_train_gradients' program) on
// inputs the step itself never gives them: element counts that are not a multiple of the 16-byte
// vector, and pointers one element past their alignment (where the launchers and the update's
// chunks fall back to one element a step), against host results computed here from the
// definitions:
//  - ReLU, its gradient (also in place) and add + ReLU: exact (inputs are multiples of 1/32 within
//    [-2, 2], exact in FP16, and so are their sums and maxima);
//  - the multi-tensor SGD update over several chunks with tails, misaligned tensors beside aligned
//    ones, a skipped step, and the non-finite check finding an infinity or a NaN in a tail.
// Every output has guard elements on both sides that must keep their value.
#include <gtest/gtest.h>

#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "base/resources.hpp"
#include "kernels/train/train_bn_kernels.cuh"
#include "kernels/train/train_kernels.cuh"
#include "gpu_test_util.hpp"

namespace nb {
namespace {

using test::have_gpu;
constexpr size_t kGuard = 16;    // guard elements either side of an array's range
constexpr float kGuardValue = 7.f;

// n elements of FP16 or FP32 storage, starting `offset` elements past a kGuard-element guard at
// the start of a cudaMalloc'd (256-byte aligned) buffer; values go in and out as float.
class DevArray {
 public:
  DevArray(size_t n, bool half, size_t offset)
      : n_(n), half_(half), start_(kGuard + offset), total_(n + 2 * kGuard + offset), buf_(total_ * (half ? 2 : 4)) {
    write_all(std::vector<float>(total_, kGuardValue));
  }
  void* ptr() const { return static_cast<char*>(buf_.get()) + start_ * (half_ ? 2 : 4); }
  float* f() const { return static_cast<float*>(ptr()); }
  void set(const std::vector<float>& v) {
    auto all = read_all();
    std::copy(v.begin(), v.end(), all.begin() + std::ptrdiff_t(start_));
    write_all(all);
  }
  std::vector<float> get() const {
    const auto all = read_all();
    return {all.begin() + std::ptrdiff_t(start_), all.begin() + std::ptrdiff_t(start_ + n_)};
  }
  int guards_changed() const {
    const auto all = read_all();
    int bad = 0;
    for (size_t i = 0; i < total_; ++i) bad += (i < start_ || i >= start_ + n_) && all[i] != kGuardValue;
    return bad;
  }

 private:
  std::vector<float> read_all() const {
    NB_CUDA(cudaDeviceSynchronize());
    std::vector<float> out(total_);
    if (half_) {
      std::vector<__half> h(total_);
      NB_CUDA(cudaMemcpy(h.data(), buf_.get(), total_ * 2, cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < total_; ++i) out[i] = __half2float(h[i]);
    } else {
      NB_CUDA(cudaMemcpy(out.data(), buf_.get(), total_ * 4, cudaMemcpyDeviceToHost));
    }
    return out;
  }
  void write_all(const std::vector<float>& v) {
    if (half_) {
      std::vector<__half> h(total_);
      for (size_t i = 0; i < total_; ++i) h[i] = __float2half_rn(v[i]);
      NB_CUDA(cudaMemcpy(buf_.get(), h.data(), total_ * 2, cudaMemcpyHostToDevice));
    } else {
      NB_CUDA(cudaMemcpy(buf_.get(), v.data(), total_ * 4, cudaMemcpyHostToDevice));
    }
    NB_CUDA(cudaDeviceSynchronize());  // a pageable copy may still be in flight when cudaMemcpy returns
  }
  size_t n_;
  bool half_;
  size_t start_, total_;
  DeviceBuffer buf_;
};

// A multiple of 1/32 in [-2, 2] (exact in FP16), varied with i and salt.
float value(size_t i, int salt) { return float(int((i * 37 + size_t(salt) * 11 + i / 7) % 129) - 64) / 32.f; }
std::vector<float> values(size_t n, int salt) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = value(i, salt);
  return v;
}

void sync(Stream& s) {
  NB_CUDA(cudaGetLastError());
  NB_CUDA(cudaStreamSynchronize(s.get()));
}

// The first index where got and want differ (exactly), or -1.
long first_diff(const std::vector<float>& got, const std::vector<float>& want) {
  for (size_t i = 0; i < want.size(); ++i)
    if (got[i] != want[i]) return long(i);
  return -1;
}

void elementwise_case(bool half, size_t n, size_t in_off, size_t out_off) {
  SCOPED_TRACE(std::string(half ? "fp16" : "fp32") + " n " + std::to_string(n) + " offsets " + std::to_string(in_off) +
               "/" + std::to_string(out_off));
  Stream s;
  const auto a = values(n, 1), b = values(n, 2);
  DevArray da(n, half, in_off), db(n, half, in_off), out(n, half, out_off);
  da.set(a);
  db.set(b);
  std::vector<float> want(n);
  kernels::launch_relu(s.get(), da.ptr(), out.ptr(), n, half);
  sync(s);
  for (size_t i = 0; i < n; ++i) want[i] = std::max(a[i], 0.f);
  EXPECT_EQ(first_diff(out.get(), want), -1) << "relu";
  kernels::launch_add_relu(s.get(), da.ptr(), db.ptr(), out.ptr(), n, half);
  sync(s);
  for (size_t i = 0; i < n; ++i) want[i] = std::max(a[i] + b[i], 0.f);
  EXPECT_EQ(first_diff(out.get(), want), -1) << "add_relu";
  kernels::launch_relu_backward(s.get(), da.ptr(), db.ptr(), out.ptr(), n, half);
  sync(s);
  for (size_t i = 0; i < n; ++i) want[i] = a[i] > 0.f ? b[i] : 0.f;
  EXPECT_EQ(first_diff(out.get(), want), -1) << "relu_backward";
  EXPECT_EQ(out.guards_changed(), 0) << "written outside the range";
  kernels::launch_relu_backward(s.get(), da.ptr(), db.ptr(), db.ptr(), n, half);  // dx aliasing dy, as the step runs it
  sync(s);
  EXPECT_EQ(first_diff(db.get(), want), -1) << "relu_backward in place";
  EXPECT_EQ(db.guards_changed(), 0);
}

TEST(TrainKernelsGpu, ElementwiseOnOddCountsAndMisalignedPointers) {
  cudaDeviceProp prop{};
  if (!have_gpu(prop)) GTEST_SKIP() << "no GPU";
  for (bool half : {true, false})
    for (size_t n : {size_t(5), size_t(1003), size_t(4096)}) {
      elementwise_case(half, n, 0, 0);  // 16-byte vectors, and their scalar tail
      elementwise_case(half, n, 1, 1);  // every pointer one element off: one element a step
      elementwise_case(half, n, 0, 3);  // the output alone off
    }
}

// ---- the multi-tensor SGD update -------------------------------------------------------------
struct MtHost {
  size_t n;
  bool g_half, copy;
  size_t off;  // every pointer of the tensor this many elements off
  std::vector<float> w, v, g;
};

TEST(TrainKernelsGpu, MultiTensorSgdOverChunksWithTailsAndMisalignedTensors) {
  cudaDeviceProp prop{};
  if (!have_gpu(prop)) GTEST_SKIP() << "no GPU";
  Stream s;
  const float lr = 0.05f, mu = 0.9f, wd = 0.01f, scale = 8.f;
  // FP16 gradients with an FP16 copy one element off; FP32 one element off; both aligned (the
  // vector path, a tail of 1 in the last chunk); kMtMaxTensors in all.
  std::vector<MtHost> h = {{1003, true, true, 1, {}, {}, {}},
                           {37, false, false, 1, {}, {}, {}},
                           {301, false, false, 0, {}, {}, {}},
                           {2001, true, true, 0, {}, {}, {}}};
  std::vector<DevArray> w, v, g, copy;
  kernels::MtTable t;
  std::vector<size_t> sizes;
  for (size_t k = 0; k < h.size(); ++k) {
    auto& x = h[k];
    x.w = values(x.n, 3 + int(k)), x.v = values(x.n, 6 + int(k)), x.g = values(x.n, 9 + int(k));
    for (float& e : x.g) e *= scale;  // gradients carry the loss scale (exact: a power of two)
    w.emplace_back(x.n, false, x.off), v.emplace_back(x.n, false, x.off), g.emplace_back(x.n, x.g_half, x.off);
    copy.emplace_back(x.n, true, x.off);
  }
  for (size_t k = 0; k < h.size(); ++k) {
    w[k].set(h[k].w), v[k].set(h[k].v), g[k].set(h[k].g);
    t.t[k] = {w[k].f(), v[k].f(), g[k].ptr(), h[k].g_half, h[k].copy ? copy[k].ptr() : nullptr, h[k].n};
    sizes.push_back(h[k].n);
  }
  t.tensors = int(h.size());
  const auto chunks = kernels::mt_chunks(sizes, 100);  // 104-element chunks: several per tensor, with tails
  ASSERT_GT(chunks.size(), h.size());
  DeviceBuffer table(chunks.size() * sizeof(kernels::MtChunk));
  NB_CUDA(cudaMemcpy(table.get(), chunks.data(), table.bytes(), cudaMemcpyHostToDevice));
  t.chunks = table.get();
  t.n_chunks = unsigned(chunks.size());
  DeviceBuffer d_scale(4), d_flag(4);
  NB_CUDA(cudaMemcpy(d_scale.get(), &scale, 4, cudaMemcpyHostToDevice));
  const int one = 1, zero = 0;
  // A skipped step (overflowed gradients) changes nothing.
  NB_CUDA(cudaMemcpy(d_flag.get(), &one, 4, cudaMemcpyHostToDevice));
  kernels::launch_mt_sgd(s.get(), t, lr, mu, wd, d_scale.as<float>(), d_flag.as<int>());
  sync(s);
  for (size_t k = 0; k < h.size(); ++k) EXPECT_EQ(first_diff(w[k].get(), h[k].w), -1) << "skipped step, tensor " << k;
  NB_CUDA(cudaMemcpy(d_flag.get(), &zero, 4, cudaMemcpyHostToDevice));
  kernels::launch_mt_sgd(s.get(), t, lr, mu, wd, d_scale.as<float>(), d_flag.as<int>());
  sync(s);
  for (size_t k = 0; k < h.size(); ++k) {
    SCOPED_TRACE("tensor " + std::to_string(k));
    const auto gw = w[k].get(), gv = v[k].get(), gc = copy[k].get();
    double worst_w = 0, worst_v = 0, worst_c = 0;
    for (size_t i = 0; i < h[k].n; ++i) {
      const double vi = double(mu) * h[k].v[i] + (double(h[k].g[i]) / scale + double(wd) * h[k].w[i]);
      const double wi = h[k].w[i] - double(lr) * vi;
      worst_v = std::max(worst_v, std::fabs(gv[i] - vi));
      worst_w = std::max(worst_w, std::fabs(gw[i] - wi));
      if (h[k].copy) worst_c = std::max(worst_c, double(std::fabs(gc[i] - gw[i])));
    }
    EXPECT_LE(worst_v, 1e-5);  // |v| < 4: a few FP32 units
    EXPECT_LE(worst_w, 1e-5);
    EXPECT_LE(worst_c, 2e-3) << "the FP16 copy: within half an FP16 unit of w (|w| < 4)";
    for (const DevArray* a : {&w[k], &v[k], &g[k], &copy[k]}) EXPECT_EQ(a->guards_changed(), 0);
    if (!h[k].copy) EXPECT_EQ(first_diff(gc, std::vector<float>(h[k].n, kGuardValue)), -1) << "no copy asked";
  }
  // The non-finite check over the same chunks: nothing, then an infinity or a NaN in a tail.
  auto found = [&] {
    NB_CUDA(cudaMemcpy(d_flag.get(), &zero, 4, cudaMemcpyHostToDevice));
    kernels::launch_mt_find_nonfinite(s.get(), t, d_flag.as<int>());
    sync(s);
    int f = -1;
    NB_CUDA(cudaMemcpy(&f, d_flag.get(), 4, cudaMemcpyDeviceToHost));
    return f;
  };
  EXPECT_EQ(found(), 0);
  for (size_t k = 0; k < h.size(); ++k) {
    auto bad = h[k].g;
    bad.back() = k % 2 ? std::nanf("") : INFINITY;
    g[k].set(bad);
    EXPECT_EQ(found(), 1) << "a non-finite last gradient of tensor " << k;
    g[k].set(h[k].g);
  }
  EXPECT_EQ(found(), 0);
}

}  // namespace
}  // namespace nb
