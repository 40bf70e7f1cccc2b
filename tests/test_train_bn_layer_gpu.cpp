// GPU test of single batch-norm layers of the training step (label gpu, in gpu_train_gradients'
// program; alone: --gtest_filter='TrainBnLayerGpu.*'): each kind the step runs (bn, bn_relu,
// bn_add_relu), forward in training mode and backward, on each path the step can take (its own
// kernels everywhere; cuDNN's fused *Ex calls for FP16 NHWC, where the step takes them; unfused:
// cuDNN's batch norm with the separate ReLU / add kernels, which checks the reference itself),
// through the functions the step calls (shared/resnet50/train_bn_layer.hpp), against the float64
// reference of bn_reference.hpp on the same inputs copied back: the saved mean and inverse
// standard deviation, the running averages, y; dx, dgamma, dbeta and dz (the residual's
// gradient). Shapes: ResNet-50's 7x7 and 56x56 planes with 64 channels at batch 4, and odd ones
// (37 channels on 9x9: one element a step in the reductions; 36 channels on 10x10 at batch 2: FP16 NHWC
// vectors of 4, not 8; 6 channels on 5x5 at batch 1; 3 channels on 1x1), in both layouts and
// storage types; the own kernels' ReLU layer with y poisoned before backward (their backward
// recomputes the mask from x), and the own kernels with the residual and dy one element off the
// 16-byte vector. Every output is poisoned (NaN) first
// and guarded on both sides; the tolerances and the faults they catch are in bn_reference.hpp
// (tests/test_bn_reference.cpp shows a plausible FP32 implementation passes and each fault fails).
// Each case prints the worst error / tolerance of each result (<= 1 passes).
#include <gtest/gtest.h>

#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "base/resources.hpp"
#include "bn_reference.hpp"
#include "gpu_test_util.hpp"
#include "kernels/train/train_vec.hpp"
#include "shared/resnet50/train_bn_layer.hpp"

namespace nb {
namespace {

using test::BnRefShape;
using test::have_gpu;
using train::BnAct;
using train::BnPath;

constexpr size_t kGuard = 64;  // elements either side (128 bytes in FP16: the vectors stay aligned)
constexpr double kGuardValue = 3.5;

// n elements in FP16 or FP32 with guards; values in and out as double; poison() fills with NaN.
// shift > 0 starts the data that many elements past the guard: a pointer off the 16-byte vector.
class Buf {
 public:
  Buf(size_t n, bool half, size_t shift = 0)
      : n_(n), half_(half), at_(kGuard + shift), buf_((n + 2 * kGuard + shift) * (half ? 2 : 4)) {
    poison();
  }
  void* ptr() const { return static_cast<char*>(buf_.get()) + at_ * (half_ ? 2 : 4); }
  float* f() const { return static_cast<float*>(ptr()); }
  void set(const std::vector<double>& v) {
    std::vector<double> all(total(), kGuardValue);
    std::copy(v.begin(), v.end(), all.begin() + std::ptrdiff_t(at_));
    write(all);
  }
  void poison() {
    std::vector<double> all(total(), kGuardValue);
    std::fill(all.begin() + std::ptrdiff_t(at_), all.begin() + std::ptrdiff_t(at_ + n_), NAN);
    write(all);
  }
  std::vector<double> get() const {
    const auto all = read();
    return {all.begin() + std::ptrdiff_t(at_), all.begin() + std::ptrdiff_t(at_ + n_)};
  }
  size_t guards_changed() const {
    const auto all = read();
    size_t bad = 0;
    for (size_t i = 0; i < all.size(); ++i) bad += (i < at_ || i >= at_ + n_) && all[i] != kGuardValue;
    return bad;
  }

 private:
  void write(const std::vector<double>& v) {
    if (half_) {
      std::vector<__half> h(v.size());
      for (size_t i = 0; i < v.size(); ++i) h[i] = __float2half_rn(float(v[i]));
      NB_CUDA(cudaMemcpy(buf_.get(), h.data(), h.size() * 2, cudaMemcpyHostToDevice));
    } else {
      std::vector<float> h(v.begin(), v.end());
      NB_CUDA(cudaMemcpy(buf_.get(), h.data(), h.size() * 4, cudaMemcpyHostToDevice));
    }
    NB_CUDA(cudaDeviceSynchronize());
  }
  size_t total() const { return n_ + 2 * kGuard + (at_ - kGuard); }
  std::vector<double> read() const {
    NB_CUDA(cudaDeviceSynchronize());
    std::vector<double> out(total());
    if (half_) {
      std::vector<__half> h(out.size());
      NB_CUDA(cudaMemcpy(h.data(), buf_.get(), h.size() * 2, cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < out.size(); ++i) out[i] = __half2float(h[i]);
    } else {
      std::vector<float> h(out.size());
      NB_CUDA(cudaMemcpy(h.data(), buf_.get(), h.size() * 4, cudaMemcpyDeviceToHost));
      out.assign(h.begin(), h.end());
    }
    return out;
  }
  size_t n_;
  bool half_;
  size_t at_;
  DeviceBuffer buf_;
};

struct Case {
  int64_t n, c, h;  // h x h positions
  bool nhwc, half;
  BnAct act;
  BnPath path;
  bool from_x = false;  // the own kernels' backward recomputes the ReLU's mask from x (the stem's)
  // The residual and dy one element off the 16-byte vector (the own kernels: the passes that read
  // them run one element a step, the others stay vectorised).
  bool misaligned = false;
  kernels::BnGridTuning grid = {};  // the own reductions' grid (the step's default unless swept)
  std::string name() const {
    return std::string(half ? "fp16" : "fp32") + (nhwc ? " nhwc" : " nchw") + " n" + std::to_string(n) + " c" +
           std::to_string(c) + " " + std::to_string(h) + "x" + std::to_string(h) + " " + train::bn_act_name(act) + " " +
           train::bn_path_name(path) + (from_x ? " mask-from-x" : "") + (misaligned ? " misaligned" : "") +
           (is_default_grid() ? "" : " grid " + std::to_string(grid.blocks_per_sm) + ":" + std::to_string(grid.row_bytes));
  }
  bool is_default_grid() const {
    return grid.blocks_per_sm == kernels::BnGridTuning{}.blocks_per_sm && grid.row_bytes == kernels::BnGridTuning{}.row_bytes;
  }
};

// The cuDNN descriptors of one layer's tensors and of its batch-norm parameters.
struct Descs {
  cudnnTensorDescriptor_t y = nullptr, bn = nullptr;
  cudnnActivationDescriptor_t relu = nullptr;
  Descs(const Case& k, cudnnBatchNormMode_t mode) {
    NB_CUDNN(cudnnCreateTensorDescriptor(&y));
    NB_CUDNN(cudnnCreateTensorDescriptor(&bn));
    NB_CUDNN(cudnnSetTensor4dDescriptor(y, k.nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                                        k.half ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT, int(k.n), int(k.c), int(k.h), int(k.h)));
    NB_CUDNN(cudnnDeriveBNTensorDescriptor(bn, y, mode));
    relu = train::create_bn_relu();
  }
  ~Descs() {
    cudnnDestroyTensorDescriptor(y);
    cudnnDestroyTensorDescriptor(bn);
    cudnnDestroyActivationDescriptor(relu);
  }
  Descs(const Descs&) = delete;
  Descs& operator=(const Descs&) = delete;
};

// The layer's buffers: activations in the storage type, per-channel values in FP32.
struct Bufs {
  Buf x, r, y, scratch, dy, dx, dz;
  Buf gamma, beta, dgamma, dbeta, run_mean, run_var, save_mean, save_inv;
  Bufs(size_t e, size_t c, bool half, size_t shift)
      : x(e, half), r(e, half, shift), y(e, half), scratch(e, half), dy(e, half, shift), dx(e, half), dz(e, half),
        gamma(c, false),
        beta(c, false), dgamma(c, false), dbeta(c, false), run_mean(c, false), run_var(c, false), save_mean(c, false),
        save_inv(c, false) {}
  std::vector<const Buf*> all() const {
    return {&x, &r, &y, &scratch, &dy, &dx, &dz, &gamma, &beta, &dgamma, &dbeta, &run_mean, &run_var, &save_mean, &save_inv};
  }
};

// One result judged: printed as "name worst-ratio", failed with its description.
void judge(std::string& line, const char* what, const std::vector<double>& got, const std::vector<double>& ref,
           const std::vector<double>& tol) {
  const test::BnCheck c = test::bn_check(got, ref, tol);
  char buf[64];
  std::snprintf(buf, sizeof buf, " %s %.3g", what, c.worst);
  line += buf;
  if (c.unwritten) line += "(" + std::to_string(c.unwritten) + " unwritten)";
  EXPECT_TRUE(c.ok()) << c.describe(what);
}

// Runs one case; false when cuDNN answers CUDNN_STATUS_NOT_SUPPORTED (its calls on an odd shape),
// with the reason in `line`.
bool run_case(const Case& k, cudnnHandle_t h, int sms, std::string& line) {
  SCOPED_TRACE(k.name());
  const BnRefShape s{k.n, k.c, k.h * k.h, k.nhwc};
  auto in = test::bn_ref_inputs(s, uint64_t(k.c * 131 + k.h));
  test::round_to_storage(in, k.half);
  const bool add = k.act == BnAct::add_relu, relu = k.act != BnAct::none;
  Descs d(k, train::bn_mode_for(k.nhwc));
  Bufs b(s.size(), size_t(k.c), k.half, k.misaligned ? 1 : 0);
  b.x.set(in.x), b.r.set(in.residual), b.dy.set(in.dy), b.gamma.set(in.gamma), b.beta.set(in.beta);
  b.run_mean.set(in.run_mean), b.run_var.set(in.run_var);
  train::BnRun r;
  r.act = k.act, r.path = k.path, r.half = k.half, r.h = h, r.mode = train::bn_mode_for(k.nhwc), r.relu = d.relu;
  r.y_desc = d.y, r.bn_desc = d.bn, r.elems = s.size();
  r.shape = {k.n, k.c, s.hw, k.nhwc, k.half};
  r.geo = kernels::bn_geometry(k.nhwc, k.n, k.c, s.hw, k.half ? 2 : 4, sms, k.grid);
  r.x = b.x.ptr(), r.out = b.y.ptr(), r.scratch = b.scratch.ptr(), r.relu_from_x = k.from_x;
  r.gamma = b.gamma.f(), r.beta = b.beta.f(), r.dgamma = b.dgamma.f(), r.dbeta = b.dbeta.f();
  r.run_mean = b.run_mean.f(), r.run_var = b.run_var.f(), r.save_mean = b.save_mean.f(), r.save_inv = b.save_inv.f();
  const train::BnNeeds need = train::bn_needs(r);
  if (need.status != CUDNN_STATUS_SUCCESS) {
    line = std::string("not run: cuDNN's size queries answered ") + cudnnGetErrorString(need.status);
    return false;
  }
  DeviceBuffer ws(std::max(need.fwd_ws, need.bwd_ws) + 256), reserve(need.reserve + 256);
  // Each pass with the workspace the step gives it (bn_needs), the reserve space kept between them.
  r.ws = ws.get(), r.ws_bytes = need.fwd_ws, r.reserve = reserve.get(), r.reserve_bytes = need.reserve;
  Stream st;
  try {
    train::bn_forward(r, add ? b.r.ptr() : nullptr, st.get());
    NB_CUDA(cudaStreamSynchronize(st.get()));
  } catch (const LibraryError& e) {
    (void)cudaGetLastError();
    if (k.path == BnPath::kernels || e.status() != int(CUDNN_STATUS_NOT_SUPPORTED)) throw;
    line = std::string("not run: ") + e.what();
    return false;
  }
  const double eps = train::kBnEps, factor = train::kBnFactor;
  const auto tol = test::BnTolerance::for_storage(k.half);
  const auto f = test::bn_ref_forward(s, in.x, add ? &in.residual : nullptr, relu, in.gamma, in.beta, in.run_mean,
                                      in.run_var, eps, factor);
  const auto ft = test::bn_forward_tol(s, f, in.gamma, eps, factor, tol);
  line = "fwd:";
  judge(line, "mean", b.save_mean.get(), f.mean, ft.mean);
  judge(line, "inv_std", b.save_inv.get(), f.inv_std, ft.inv_std);
  judge(line, "run_mean", b.run_mean.get(), f.run_mean, ft.run_mean);
  judge(line, "run_var", b.run_var.get(), f.run_var, ft.run_var);
  const auto y = b.y.get();
  judge(line, "y", y, f.y, ft.y);
  // The own kernels' backward of a ReLU recomputes the mask from x: it must not read y (NaN would
  // mask every element out).
  if (k.from_x || (k.path == BnPath::kernels && k.act == BnAct::relu)) b.y.poison();
  r.ws_bytes = need.bwd_ws;
  train::bn_backward(r, b.dy.ptr(), b.dx.ptr(), add ? b.dz.ptr() : nullptr, st.get());
  NB_CUDA(cudaStreamSynchronize(st.get()));
  // The mask from the y the backward read (checked above), as the step's backward takes it.
  const auto bw = test::bn_ref_backward(s, in.x, relu ? &y : nullptr, in.dy, in.gamma, eps);
  const auto bt = test::bn_backward_tol(s, in.x, in.gamma, f, bw, eps, tol);
  line += " | bwd:";
  judge(line, "dx", b.dx.get(), bw.dx, bt.dx);
  judge(line, "dgamma", b.dgamma.get(), bw.dgamma, bt.dgamma);
  judge(line, "dbeta", b.dbeta.get(), bw.dbeta, bt.dbeta);
  if (add) judge(line, "dz", b.dz.get(), bw.dz, bt.dz);
  size_t guards = 0;
  for (const Buf* p : b.all()) guards += p->guards_changed();
  EXPECT_EQ(guards, 0u) << "written outside a buffer";
  return true;
}

// The step's default grid first, then others the settings select.
const kernels::BnGridTuning kGrids[] = {kernels::BnGridTuning{}, {4, 128}, {8, 128}, {4, 512}, {1, 256}};

TEST(TrainBnLayerGpu, EveryKindAndPathMatchesTheFloat64Reference) {
  cudaDeviceProp prop{};
  if (!have_gpu(prop)) GTEST_SKIP() << "no GPU";
  test::Lent lent;
  const cudnnHandle_t h = lent.libs(0).cudnn();
  struct Shape {
    int64_t n, c, h;
  };
  // ResNet-50's planes, then odd ones: C not a multiple of 4 with odd HW, N = 1 (C 6 on 5x5; C 3
  // on 1x1 at batch 2: vectors crossing channel planes, NHWC vectors wrapping around the channels);
  // C 8 on 15x15 at batch 32: NCHW one element a load (225 odd) over more items than one block's
  // loads in flight, so several chunks per channel and the last block's combine on that path too.
  const Shape shapes[] = {{4, 64, 7}, {4, 64, 56}, {3, 37, 9}, {2, 36, 10}, {1, 6, 5}, {2, 3, 1}, {32, 8, 15}};
  int ran = 0, not_run = 0, cudnn_fused = 0;
  for (const Shape& sh : shapes)
    for (bool half : {false, true})
      for (bool nhwc : {false, true})
        for (BnAct act : {BnAct::none, BnAct::relu, BnAct::add_relu})
          for (BnPath path : {BnPath::kernels, BnPath::cudnn, BnPath::unfused}) {
            // cuDNN's fused calls: where the step takes them (FP16 NHWC, C a multiple of 4 for the add).
            if (path == BnPath::cudnn && train::choose_bn_path(train::Fusion::on, half, nhwc, sh.c, act).path != BnPath::cudnn)
              continue;
            for (int variant = 0; variant < 3; ++variant) {
              const bool from_x = variant == 1, misaligned = variant == 2;
              if (from_x && (path != BnPath::kernels || act != BnAct::relu)) continue;
              if (misaligned && path != BnPath::kernels) continue;
              // The N = 1 and 1x1 shapes are the own kernels' odd cases, not cuDNN's.
              if ((sh.n == 1 || sh.h == 1) && path != BnPath::kernels) continue;
              // The own kernels also on the other grids the step can be set to
              // (NODEBENCH_TRAIN_BN_BLOCKS_PER_SM / _ROW_BYTES): more block columns of narrower rows,
              // more chunks; each its own workspace size.
              for (const kernels::BnGridTuning& grid : kGrids) {
                Case k{sh.n, sh.c, sh.h, nhwc, half, act, path, from_x, misaligned, grid};
                if (&grid != &kGrids[0] && (k.is_default_grid() || path != BnPath::kernels || variant != 0)) continue;
                std::string line;
                const bool done = run_case(k, h, prop.multiProcessorCount, line);
                std::printf("  %-64s %s\n", k.name().c_str(), line.c_str());
                ++(done ? ran : not_run);
                // The step's own shapes (64 channels) run on every path it can take.
                if (sh.c == 64) EXPECT_TRUE(done) << k.name() << ": " << line;
                if (done && path == BnPath::cudnn) ++cudnn_fused;
              }
            }
          }
  std::printf("%d cases run, %d not run by cuDNN (%d on cuDNN's fused calls)\n", ran, not_run, cudnn_fused);
  EXPECT_GT(ran, 0);
}

}  // namespace
}  // namespace nb
