// Convolution through cuDNN's convolution API (cudnnFind*AlgorithmEx / cudnnConvolution*),
// which every cuDNN 9 release carries, from 9.0..9.10 (the last with Pascal) to today's.
// Forward, backward-data and backward-filter; FP32 (FMA only), TF32 (sm_80+), FP16 with FP32
// accumulate; NCHW and NHWC; the algorithm chosen by measurement (cuDNN's search, then its fastest
// few candidates timed again here), with its workspace.
// Layer cases time one convolution; network cases run every distinct convolution of ResNet-50
// (weighted by how often it occurs) for one batch size, with the memory a training step's
// activations and workspace take, measured. An allocation that fails is a recorded
// "does not fit", and larger batches of the same series are then skipped.
#include <cudnn.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>

#include "benchmark.hpp"
#include "cli.hpp"
#include "kernels.cuh"
#include "resources.hpp"
#include "stats.hpp"
#include "text.hpp"
#include "verify.hpp"

namespace nb {
namespace {

using nlohmann::json;

void check_cudnn(cudnnStatus_t s, const char* expr, const char* file, int line) {
  if (s == CUDNN_STATUS_SUCCESS) return;
  throw LibraryError(int(s), std::string(cudnnGetErrorString(s)) + " in `" + expr + "` at " + file + ":" +
                                 std::to_string(line));
}
#define NB_CUDNN(expr) check_cudnn((expr), #expr, __FILE__, __LINE__)

struct Layer {
  const char* name;
  int c, k, hw, r, stride, pad, groups, count;  // square input hw x hw, filter r x r
  int out_hw() const { return (hw + 2 * pad - r) / stride + 1; }
};

// Every distinct convolution of ResNet-50 (v1.5: stride on the 3x3), 224x224 input, with how
// often it occurs (53 in all), and one MobileNetV2 depthwise layer for a different regime.
const std::vector<Layer>& resnet50_layers() {
  static const std::vector<Layer> l = {
      {"conv1_7x7_3_64_s2", 3, 64, 224, 7, 2, 3, 1, 1},
      {"l1_1x1_64_64", 64, 64, 56, 1, 1, 0, 1, 1},
      {"l1_3x3_64_64", 64, 64, 56, 3, 1, 1, 1, 3},
      {"l1_1x1_64_256", 64, 256, 56, 1, 1, 0, 1, 4},
      {"l1_1x1_256_64", 256, 64, 56, 1, 1, 0, 1, 2},
      {"l2_1x1_256_128", 256, 128, 56, 1, 1, 0, 1, 1},
      {"l2_3x3_128_128_s2", 128, 128, 56, 3, 2, 1, 1, 1},
      {"l2_1x1_128_512", 128, 512, 28, 1, 1, 0, 1, 4},
      {"l2_1x1_256_512_s2", 256, 512, 56, 1, 2, 0, 1, 1},
      {"l2_1x1_512_128", 512, 128, 28, 1, 1, 0, 1, 3},
      {"l2_3x3_128_128", 128, 128, 28, 3, 1, 1, 1, 3},
      {"l3_1x1_512_256", 512, 256, 28, 1, 1, 0, 1, 1},
      {"l3_3x3_256_256_s2", 256, 256, 28, 3, 2, 1, 1, 1},
      {"l3_1x1_256_1024", 256, 1024, 14, 1, 1, 0, 1, 6},
      {"l3_1x1_512_1024_s2", 512, 1024, 28, 1, 2, 0, 1, 1},
      {"l3_1x1_1024_256", 1024, 256, 14, 1, 1, 0, 1, 5},
      {"l3_3x3_256_256", 256, 256, 14, 3, 1, 1, 1, 5},
      {"l4_1x1_1024_512", 1024, 512, 14, 1, 1, 0, 1, 1},
      {"l4_3x3_512_512_s2", 512, 512, 14, 3, 2, 1, 1, 1},
      {"l4_1x1_512_2048", 512, 2048, 7, 1, 1, 0, 1, 3},
      {"l4_1x1_1024_2048_s2", 1024, 2048, 14, 1, 2, 0, 1, 1},
      {"l4_1x1_2048_512", 2048, 512, 7, 1, 1, 0, 1, 2},
      {"l4_3x3_512_512", 512, 512, 7, 3, 1, 1, 1, 2},
  };
  return l;
}
const Layer kDepthwise = {"mbv2_dw3x3_144", 144, 144, 56, 3, 1, 1, 144, 1};

const Layer* find_layer(const std::string& name) {
  for (const auto& l : resnet50_layers())
    if (name == l.name) return &l;
  if (name == kDepthwise.name) return &kDepthwise;
  return nullptr;
}

struct Prec {
  const char* name;
  cudnnDataType_t data;
  cudnnMathType_t math;
  size_t elem;
  kernels::FillType fill;
  int min_cc;
};
const Prec kPrecs[] = {
    {"fp32", CUDNN_DATA_FLOAT, CUDNN_FMA_MATH, 4, kernels::FillType::f32, 0},
    {"tf32", CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH, 4, kernels::FillType::f32, 80},
    {"fp16", CUDNN_DATA_HALF, CUDNN_TENSOR_OP_MATH, 2, kernels::FillType::f16, 0},
};
const Prec& prec_by_name(const std::string& n) {
  for (const auto& p : kPrecs)
    if (n == p.name) return p;
  throw Error("unknown conv precision " + n);
}

// One cuDNN handle per device, kept for the process.
cudnnHandle_t handle_for(int device) {
  static std::mutex mu;
  static std::map<int, cudnnHandle_t> all;
  std::lock_guard<std::mutex> lock(mu);
  auto it = all.find(device);
  if (it != all.end()) return it->second;
  cudnnHandle_t h = nullptr;
  NB_CUDNN(cudnnCreate(&h));
  all[device] = h;
  return h;
}

// A device allocation that turns "out of memory" into a recorded "does not fit".
DeviceBuffer alloc_or_skip(CaseContext& ctx, size_t bytes, const std::string& what) {
  try {
    return DeviceBuffer(bytes);
  } catch (const CudaError& e) {
    if (!e.out_of_memory()) throw;
    size_t free_b = 0, total_b = 0;
    (void)cudaMemGetInfo(&free_b, &total_b);
    ctx.skip("out of memory: does not fit: asked for " + std::to_string(bytes) + " bytes for " + what + ", " +
             std::to_string(free_b) + " bytes free");
  }
}

// The smallest batch that did not fit, per (device, series); larger ones are skipped.
std::map<std::string, int64_t>& oom_batches() {
  static std::map<std::string, int64_t> m;
  return m;
}

// Descriptors and buffers of one convolution at one batch size.
struct Conv {
  const Layer& L;
  const Prec& P;
  cudnnTensorFormat_t fmt;
  int64_t n;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  int p = 0;  // output height = width
  DeviceBuffer bx, by, bw, bdy, bdx, bdw;
  Conv(const Layer& l, const Prec& pr, bool nhwc, int64_t batch) : L(l), P(pr), fmt(nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW), n(batch) {
    NB_CUDNN(cudnnCreateTensorDescriptor(&x));
    NB_CUDNN(cudnnCreateTensorDescriptor(&y));
    NB_CUDNN(cudnnCreateFilterDescriptor(&w));
    NB_CUDNN(cudnnCreateConvolutionDescriptor(&conv));
    NB_CUDNN(cudnnSetTensor4dDescriptor(x, fmt, P.data, int(n), L.c, L.hw, L.hw));
    NB_CUDNN(cudnnSetFilter4dDescriptor(w, P.data, fmt, L.k, L.c / L.groups, L.r, L.r));
    NB_CUDNN(cudnnSetConvolution2dDescriptor(conv, L.pad, L.pad, L.stride, L.stride, 1, 1, CUDNN_CROSS_CORRELATION,
                                             CUDNN_DATA_FLOAT));
    NB_CUDNN(cudnnSetConvolutionGroupCount(conv, L.groups));
    NB_CUDNN(cudnnSetConvolutionMathType(conv, P.math));
    int on = 0, oc = 0, oh = 0, ow = 0;
    NB_CUDNN(cudnnGetConvolution2dForwardOutputDim(conv, x, w, &on, &oc, &oh, &ow));
    p = oh;
    NB_CUDNN(cudnnSetTensor4dDescriptor(y, fmt, P.data, on, oc, oh, ow));
  }
  ~Conv() {
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
    if (w) cudnnDestroyFilterDescriptor(w);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (x) cudnnDestroyTensorDescriptor(x);
  }
  Conv(const Conv&) = delete;
  Conv& operator=(const Conv&) = delete;
  size_t x_elems() const { return size_t(n) * L.c * L.hw * L.hw; }
  size_t y_elems() const { return size_t(n) * L.k * p * p; }
  size_t w_elems() const { return size_t(L.k) * (L.c / L.groups) * L.r * L.r; }
  double flops() const { return 2.0 * double(y_elems()) * (L.c / L.groups) * L.r * L.r; }
  // Element offsets in the chosen layout.
  size_t xi(size_t in, size_t c, size_t h, size_t wd) const {
    return fmt == CUDNN_TENSOR_NCHW ? ((in * L.c + c) * L.hw + h) * L.hw + wd : ((in * L.hw + h) * L.hw + wd) * L.c + c;
  }
  size_t yi(size_t in, size_t k, size_t h, size_t wd) const {
    return fmt == CUDNN_TENSOR_NCHW ? ((in * L.k + k) * p + h) * p + wd : ((in * p + h) * p + wd) * L.k + k;
  }
  size_t wi(size_t k, size_t c, size_t r, size_t s) const {
    const size_t cg = size_t(L.c / L.groups);
    return fmt == CUDNN_TENSOR_NCHW ? ((k * cg + c) * L.r + r) * L.r + s : ((k * L.r + r) * L.r + s) * cg + c;
  }
  void allocate(CaseContext& ctx, bool backward) {
    bx = alloc_or_skip(ctx, x_elems() * P.elem, "the input");
    by = alloc_or_skip(ctx, y_elems() * P.elem, "the output");
    bw = alloc_or_skip(ctx, w_elems() * P.elem, "the filter");
    if (backward) {
      bdy = alloc_or_skip(ctx, y_elems() * P.elem, "the output gradient");
      bdx = alloc_or_skip(ctx, x_elems() * P.elem, "the input gradient");
      bdw = alloc_or_skip(ctx, w_elems() * P.elem, "the filter gradient");
    }
    cudaStream_t s = ctx.stream();
    kernels::launch_fill_random(s, bx.get(), x_elems(), P.fill, 0xC0 + uint64_t(L.c));
    kernels::launch_fill_random(s, bw.get(), w_elems(), P.fill, 0xC1 + uint64_t(L.k));
    if (backward) kernels::launch_fill_random(s, bdy.get(), y_elems(), P.fill, 0xC2 + uint64_t(L.k));
    NB_CUDA_LAUNCH();
    NB_CUDA(cudaStreamSynchronize(s));
  }
};

enum class Pass { fwd, bwd_data, bwd_filter };
const char* pass_name(Pass p) { return p == Pass::fwd ? "fwd" : p == Pass::bwd_data ? "bwd_data" : "bwd_filter"; }

struct Chosen {
  int algo = -1;
  size_t workspace = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  float find_ms = 0;
  int candidates = 0;
  double trial_us = 0;  // our median over the trial rounds
  json trials = json::array();  // every candidate: algo, math, cuDNN's time, ours, or why rejected
};

// The workspace the algorithm search may use: NODEBENCH_CUDNN_WORKSPACE_MIB, else 4 GiB (the
// default limit TensorFlow gives cuDNN), and never more than a quarter of the free memory. With
// 1 GiB, the H200 sweeps of 2026-11-29 lost the fast algorithms of the largest layers from batch
// 512 up (ResNet-50's first convolution's filter gradient at batch 1024 fell back to algorithm 0,
// 100x slower), which made throughput fall past the plateau for want of workspace.
size_t find_workspace_limit() {
  size_t free_b = 0, total_b = 0;
  NB_CUDA(cudaMemGetInfo(&free_b, &total_b));
  const size_t cap = size_t(env_positive("NODEBENCH_CUDNN_WORKSPACE_MIB", true).value_or(4096)) << 20;
  return std::min<size_t>(cap, free_b / 4);
}

// One pass with a given algorithm; the status is returned, not thrown, so that a candidate that
// cuDNN's search listed but that does not run here can be set aside.
cudnnStatus_t try_pass(cudnnHandle_t h, Conv& c, Pass pass, int algo, void* ws, size_t ws_bytes) {
  const float one = 1.f, zero = 0.f;
  if (pass == Pass::fwd)
    return cudnnConvolutionForward(h, &one, c.x, c.bx.get(), c.w, c.bw.get(), c.conv, cudnnConvolutionFwdAlgo_t(algo), ws,
                                   ws_bytes, &zero, c.y, c.by.get());
  if (pass == Pass::bwd_data)
    return cudnnConvolutionBackwardData(h, &one, c.w, c.bw.get(), c.y, c.bdy.get(), c.conv,
                                        cudnnConvolutionBwdDataAlgo_t(algo), ws, ws_bytes, &zero, c.x, c.bdx.get());
  return cudnnConvolutionBackwardFilter(h, &one, c.x, c.bx.get(), c.y, c.bdy.get(), c.conv,
                                        cudnnConvolutionBwdFilterAlgo_t(algo), ws, ws_bytes, &zero, c.w, c.bdw.get());
}

cudnnStatus_t workspace_size(cudnnHandle_t h, Conv& c, Pass pass, int algo, size_t& bytes) {
  if (pass == Pass::fwd)
    return cudnnGetConvolutionForwardWorkspaceSize(h, c.x, c.w, c.conv, c.y, cudnnConvolutionFwdAlgo_t(algo), &bytes);
  if (pass == Pass::bwd_data)
    return cudnnGetConvolutionBackwardDataWorkspaceSize(h, c.w, c.y, c.conv, c.x, cudnnConvolutionBwdDataAlgo_t(algo),
                                                        &bytes);
  return cudnnGetConvolutionBackwardFilterWorkspaceSize(h, c.x, c.y, c.conv, c.w, cudnnConvolutionBwdFilterAlgo_t(algo),
                                                        &bytes);
}

struct Candidate {
  int algo;
  cudnnMathType_t math;
  size_t memory;
  float find_ms;
};

template <typename Perf>
std::vector<Candidate> successful(const Perf* perf, int n) {
  std::vector<Candidate> out;
  for (int i = 0; i < n; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS) out.push_back({int(perf[i].algo), perf[i].mathType, perf[i].memory, perf[i].time});
  return out;
}

// Which of cuDNN's candidates are timed again, and how: those within kTrialSpread of its fastest
// (at most kTrialCandidates), each in kTrialRounds interleaved rounds of one untimed run (its own
// data back in L2) and kTrialBurst timed back-to-back runs.
constexpr size_t kTrialCandidates = 6;
constexpr float kTrialSpread = 4.0f;
constexpr int kTrialRounds = 3;
constexpr int kTrialBurst = 3;

// cuDNN's search times each algorithm once, cold, and at small batches ranks them wrongly: for
// the 3x3 64->64 FP16 convolution at batch 32 on an H200 it put the tensor-core implicit GEMM
// fifth, at twice the time of Winograd, which ran at half the speed of PyTorch's choice. So its
// nearest candidates are run again here: each checked to run at all (a listed algorithm can
// fail with CUDNN_STATUS_BAD_PARAM), then timed warm, in interleaved rounds on the case's
// stream; the one with the smallest median wins. Large layers (over 2 ms a run) get one round.
Chosen find_algo(cudnnHandle_t h, Conv& c, Pass pass, DeviceBuffer& ws, cudaStream_t stream) {
  const cudnnMathType_t requested = c.P.math;
  NB_CUDNN(cudnnSetConvolutionMathType(c.conv, requested));
  int returned = 0;
  std::vector<Candidate> cands;
  if (pass == Pass::fwd) {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    NB_CUDNN(cudnnFindConvolutionForwardAlgorithmEx(h, c.x, c.bx.get(), c.w, c.bw.get(), c.conv, c.y, c.by.get(),
                                                    CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf, ws.get(), ws.bytes()));
    cands = successful(perf, returned);
  } else if (pass == Pass::bwd_data) {
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    NB_CUDNN(cudnnFindConvolutionBackwardDataAlgorithmEx(h, c.w, c.bw.get(), c.y, c.bdy.get(), c.conv, c.x, c.bdx.get(),
                                                         CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &returned, perf, ws.get(),
                                                         ws.bytes()));
    cands = successful(perf, returned);
  } else {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    NB_CUDNN(cudnnFindConvolutionBackwardFilterAlgorithmEx(h, c.x, c.bx.get(), c.y, c.bdy.get(), c.conv, c.w, c.bdw.get(),
                                                           CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &returned, perf,
                                                           ws.get(), ws.bytes()));
    cands = successful(perf, returned);
  }
  Chosen ch;
  ch.candidates = returned;
  struct Trial {
    Candidate cand;
    size_t workspace;
    std::vector<double> times;
    size_t row;
  };
  std::vector<Trial> live;
  for (const Candidate& cand : cands) {
    json row = {{"algo", cand.algo}, {"math_type", int(cand.math)}, {"cudnn_ms", cand.find_ms},
                {"workspace_bytes", cand.memory}};
    if (live.size() >= kTrialCandidates || cand.find_ms > kTrialSpread * cands.front().find_ms) {
      row["trial"] = "not timed again (in cuDNN's search, over " + fmt(kTrialSpread, 0) + "x its fastest, or past the first " +
                     std::to_string(kTrialCandidates) + ")";
      ch.trials.push_back(row);
      continue;
    }
    NB_CUDNN(cudnnSetConvolutionMathType(c.conv, cand.math));
    size_t need = 0;
    cudnnStatus_t st = workspace_size(h, c, pass, cand.algo, need);
    need = std::max(need, cand.memory);
    if (st == CUDNN_STATUS_SUCCESS && need > ws.bytes()) st = CUDNN_STATUS_ALLOC_FAILED;
    if (st == CUDNN_STATUS_SUCCESS) st = try_pass(h, c, pass, cand.algo, ws.get(), need);
    if (st == CUDNN_STATUS_SUCCESS) {
      NB_CUDA(cudaStreamSynchronize(stream));
      row["workspace_bytes"] = need;
      live.push_back({cand, need, {}, ch.trials.size()});
    } else {
      row["trial"] = std::string("rejected: ") + cudnnGetErrorString(st) +
                     (st == CUDNN_STATUS_ALLOC_FAILED ? " (workspace larger than the search's)" : "");
    }
    ch.trials.push_back(row);
  }
  if (live.empty()) {
    NB_CUDNN(cudnnSetConvolutionMathType(c.conv, requested));
    throw Error(std::string("cuDNN found no working algorithm for ") + c.L.name + " " + pass_name(pass) + ": " +
                ch.trials.dump());
  }
  Event e0, e1;
  const bool large = !cands.empty() && cands.front().find_ms > 2.0f;
  const int rounds = large ? 1 : kTrialRounds, burst = large ? 1 : kTrialBurst;
  for (int round = 0; round < rounds && live.size() > 1; ++round)
    for (Trial& t : live) {
      NB_CUDNN(cudnnSetConvolutionMathType(c.conv, t.cand.math));
      NB_CUDNN(try_pass(h, c, pass, t.cand.algo, ws.get(), t.workspace));  // untimed: its data back in L2
      e0.record(stream);
      for (int b = 0; b < burst; ++b) NB_CUDNN(try_pass(h, c, pass, t.cand.algo, ws.get(), t.workspace));
      e1.record(stream);
      NB_CUDA(cudaEventSynchronize(e1.get()));
      t.times.push_back(e1.seconds_since(e0) / burst);
    }
  // With one live candidate nothing was timed again: it is cuDNN's choice as it stands.
  const Trial* best = &live.front();
  double best_med = 0;
  for (const Trial& t : live) {
    if (t.times.empty()) continue;
    const double med = compute_stats(t.times).median;
    ch.trials[t.row]["trial_us"] = med * 1e6;
    if (best_med == 0 || med < best_med) {
      best = &t;
      best_med = med;
    }
  }
  ch.algo = best->cand.algo;
  ch.math = best->cand.math;
  ch.workspace = best->workspace;
  ch.find_ms = best->cand.find_ms;
  ch.trial_us = best_med * 1e6;
  ch.trials[best->row]["chosen"] = true;
  NB_CUDNN(cudnnSetConvolutionMathType(c.conv, requested));
  return ch;
}

// The descriptor's math type is set here, every time: the network case runs three passes of one
// descriptor, each with its own chosen math type, and an algorithm run under another pass's math
// type fails (CUDNN_STATUS_BAD_PARAM at batch 1, 2, 4 and 16 of the FP16 sweep on an H200).
void run_pass(cudnnHandle_t h, Conv& c, Pass pass, const Chosen& ch, void* ws, cudaStream_t s) {
  NB_CUDNN(cudnnSetStream(h, s));
  NB_CUDNN(cudnnSetConvolutionMathType(c.conv, ch.math));
  NB_CUDNN(try_pass(h, c, pass, ch.algo, ws, ch.workspace));
}

std::vector<double> to_doubles(const DeviceBuffer& b, size_t offset, size_t n, const Prec& p) {
  std::vector<double> out(n);
  const auto* src = static_cast<const unsigned char*>(b.get()) + offset * p.elem;
  if (p.elem == 4) {
    std::vector<float> h(n);
    NB_CUDA(cudaMemcpy(h.data(), src, n * 4, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; ++i) out[i] = h[i];
  } else {
    std::vector<uint16_t> h(n);
    NB_CUDA(cudaMemcpy(h.data(), src, n * 2, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; ++i) out[i] = half_to_double(h[i]);
  }
  return out;
}

// A device tensor read on the host one image (batch entry) at a time, on first use: the batch
// index is outermost in both layouts, so a sampled point needs only its own image.
class HostTensor {
 public:
  HostTensor(const DeviceBuffer& b, size_t per_image, const Prec& p) : b_(b), per_(per_image), p_(p) {}
  double at(size_t index) {
    auto& img = images_[index / per_];
    if (img.empty()) img = to_doubles(b_, index / per_ * per_, per_, p_);
    return img[index % per_];
  }

 private:
  const DeviceBuffer& b_;
  size_t per_;
  const Prec& p_;
  std::map<size_t, std::vector<double>> images_;
};

// Checks `samples` sampled outputs of a pass against float64 sums over the stored inputs.
// Returns the summary; sets failures.
json verify_pass(Conv& c, Pass pass, size_t samples, size_t& failures, std::string& worst) {
  const Layer& L = c.L;
  const GemmTolerance tol = gemm_tolerance("conv_" + std::string(c.P.name));
  const size_t cg = size_t(L.c / L.groups), kg = size_t(L.k / L.groups);
  const size_t x_img = c.x_elems() / size_t(c.n), y_img = c.y_elems() / size_t(c.n);
  HostTensor X(c.bx, x_img, c.P), W(c.bw, c.w_elems(), c.P), DY(c.bdy, y_img, c.P);
  HostTensor OUT(pass == Pass::fwd ? c.by : pass == Pass::bwd_data ? c.bdx : c.bdw,
                 pass == Pass::fwd ? y_img : pass == Pass::bwd_data ? x_img : c.w_elems(), c.P);
  const size_t total = pass == Pass::fwd ? c.y_elems() : pass == Pass::bwd_data ? c.x_elems() : c.w_elems();
  const auto pos = sample_positions(int64_t(total), 1, samples, 0xD00Dull);
  double max_ratio = 0;
  for (const auto& [flat, unused] : pos) {
    (void)unused;
    std::vector<double> a, b;
    size_t out_index = 0;
    if (pass == Pass::fwd) {
      // Decompose a flat (n, k, p, q) index in NCHW order, then address in the layout.
      size_t t = size_t(flat);
      const size_t q = t % c.p; t /= c.p;
      const size_t pp = t % c.p; t /= c.p;
      const size_t k = t % L.k; const size_t in = t / L.k;
      out_index = c.yi(in, k, pp, q);
      const size_t g = k / kg;
      for (size_t ci = 0; ci < cg; ++ci)
        for (int r = 0; r < L.r; ++r)
          for (int s = 0; s < L.r; ++s) {
            const long h = long(pp) * L.stride - L.pad + r, w = long(q) * L.stride - L.pad + s;
            if (h < 0 || w < 0 || h >= L.hw || w >= L.hw) continue;
            a.push_back(X.at(c.xi(in, g * cg + ci, size_t(h), size_t(w))));
            b.push_back(W.at(c.wi(k, ci, size_t(r), size_t(s))));
          }
    } else if (pass == Pass::bwd_data) {
      size_t t = size_t(flat);
      const size_t w = t % L.hw; t /= L.hw;
      const size_t h = t % L.hw; t /= L.hw;
      const size_t ch = t % L.c; const size_t in = t / L.c;
      out_index = c.xi(in, ch, h, w);
      const size_t g = ch / cg, ci = ch % cg;
      for (size_t kk = 0; kk < kg; ++kk)
        for (int r = 0; r < L.r; ++r)
          for (int s = 0; s < L.r; ++s) {
            const long ph = long(h) + L.pad - r, pw = long(w) + L.pad - s;
            if (ph < 0 || pw < 0 || ph % L.stride || pw % L.stride) continue;
            const long p = ph / L.stride, q = pw / L.stride;
            if (p >= c.p || q >= c.p) continue;
            const size_t k = g * kg + kk;
            a.push_back(DY.at(c.yi(in, k, size_t(p), size_t(q))));
            b.push_back(W.at(c.wi(k, ci, size_t(r), size_t(s))));
          }
    } else {
      size_t t = size_t(flat);
      const size_t s = t % L.r; t /= L.r;
      const size_t r = t % L.r; t /= L.r;
      const size_t ci = t % cg; const size_t k = t / cg;
      out_index = c.wi(k, ci, r, s);
      const size_t g = k / kg;
      for (int64_t in = 0; in < c.n; ++in)
        for (int p = 0; p < c.p; ++p)
          for (int q = 0; q < c.p; ++q) {
            const long h = long(p) * L.stride - L.pad + long(r), w = long(q) * L.stride - L.pad + long(s);
            if (h < 0 || w < 0 || h >= L.hw || w >= L.hw) continue;
            a.push_back(DY.at(c.yi(size_t(in), k, size_t(p), size_t(q))));
            b.push_back(X.at(c.xi(size_t(in), g * cg + ci, size_t(h), size_t(w))));
          }
    }
    const DotCheck d = check_dot(a, b, OUT.at(out_index), tol);
    if (!d.ok) {
      if (!failures) {
        std::ostringstream os;
        os << pass_name(pass) << " element " << flat << " = " << d.got << ", float64 " << d.ref << ", bound " << d.bound;
        worst = os.str();
      }
      ++failures;
    }
    if (std::isfinite(d.ratio)) max_ratio = std::max(max_ratio, d.ratio);
  }
  return {{"samples", pos.size()}, {"failures", failures}, {"max_error_ratio", max_ratio}};
}

Availability prec_available(const Prec& p, const GpuInfo& g) {
  if (g.cc() < p.min_cc)
    return Availability::no(std::string(p.name) + " needs TF32 tensor cores (compute capability 8.0 or newer); this GPU has " +
                            g.cc_string());
  return Availability::yes();
}

void run_layer_case(CaseContext& ctx, const Layer& L, const Prec& P, bool nhwc, int64_t batch, Pass pass) {
  cudnnHandle_t h = handle_for(ctx.gpu().index);
  Conv c(L, P, nhwc, batch);
  c.allocate(ctx, pass != Pass::fwd);
  DeviceBuffer find_ws = alloc_or_skip(ctx, find_workspace_limit(), "the algorithm search workspace");
  const size_t search_limit = find_ws.bytes();
  NB_CUDNN(cudnnSetStream(h, ctx.stream()));
  const Chosen ch = find_algo(h, c, pass, find_ws, ctx.stream());
  find_ws.reset();
  NB_CUDNN(cudnnSetConvolutionMathType(c.conv, ch.math));
  DeviceBuffer ws = alloc_or_skip(ctx, ch.workspace, "the workspace");
  ctx.measure([&](cudaStream_t s) { run_pass(h, c, pass, ch, ws.get(), s); });
  ctx.set_throughput("tflops", c.flops() / 1e12, P.data == CUDNN_DATA_HALF ? (ctx.gpu().cc() >= 70 ? "fp16_tensor_tflops" : "fp16_tflops")
                                                 : P.math == CUDNN_FMA_MATH ? "fp32_tflops" : "tf32_tflops");
  const Stats st = compute_stats(ctx.output().measurement->samples_s);
  ctx.metrics()["images_per_s"] = double(batch) / st.median;
  ctx.metrics()["workspace_bytes"] = double(ch.workspace);
  ctx.details()["algorithm"] = {{"algo", ch.algo}, {"workspace_bytes", ch.workspace},
                                {"math_type", int(ch.math)}, {"candidates", ch.candidates},
                                {"cudnn_find_ms", ch.find_ms}, {"trial_us", ch.trial_us},
                                {"api", "cudnnFind*AlgorithmEx, fastest candidates timed again"},
                                {"trials", ch.trials}, {"search_workspace_limit_bytes", search_limit}};
  size_t failures = 0;
  std::string worst;
  json v = verify_pass(c, pass, 16, failures, worst);
  v["reference"] = "float64 direct convolution of the stored inputs on the host";
  ctx.details()["verification"] = v;
  if (failures) ctx.wrong(std::to_string(failures) + " sampled outputs outside the bound; first: " + worst);
}

void run_network_case(CaseContext& ctx, const Prec& P, bool nhwc, int64_t batch) {
  const GpuInfo& g = ctx.gpu();
  const std::string series = std::to_string(g.index) + "/" + P.name + "/" + (nhwc ? "nhwc" : "nchw");
  {
    auto it = oom_batches().find(series);
    if (it != oom_batches().end() && batch > it->second)
      ctx.skip("out of memory: does not fit: a smaller batch (" + std::to_string(it->second) + ") of this series did not fit");
  }
  cudnnHandle_t h = handle_for(g.index);
  size_t free0 = 0, total = 0;
  NB_CUDA(cudaMemGetInfo(&free0, &total));
  try {
    std::vector<std::unique_ptr<Conv>> convs;
    std::vector<DeviceBuffer> saved;  // activations a training step keeps for backward
    for (const auto& L : resnet50_layers()) {
      convs.push_back(std::make_unique<Conv>(L, P, nhwc, batch));
      Conv& c = *convs.back();
      c.allocate(ctx, true);
      for (int i = 1; i < L.count; ++i)
        saved.push_back(alloc_or_skip(ctx, (c.x_elems() + c.y_elems()) * P.elem, "saved activations"));
    }
    DeviceBuffer find_ws = alloc_or_skip(ctx, find_workspace_limit(), "the algorithm search workspace");
    ctx.details()["search_workspace_limit_bytes"] = find_ws.bytes();
    NB_CUDNN(cudnnSetStream(h, ctx.stream()));
    std::vector<std::array<Chosen, 3>> chosen;
    size_t max_ws = 0;
    for (auto& c : convs) {
      std::array<Chosen, 3> a;
      for (int p = 0; p < 3; ++p) {
        a[size_t(p)] = find_algo(h, *c, Pass(p), find_ws, ctx.stream());
        max_ws = std::max(max_ws, a[size_t(p)].workspace);
      }
      chosen.push_back(a);
    }
    find_ws.reset();
    DeviceBuffer ws = alloc_or_skip(ctx, max_ws, "the workspace");
    size_t free_peak = 0;
    NB_CUDA(cudaMemGetInfo(&free_peak, &total));
    const double peak_bytes = double(free0) - double(free_peak);

    MeasureConfig sub = ctx.config();
    sub.fixed_samples = 10;
    sub.warmup_s = 0;
    std::vector<double> net(sub.fixed_samples, 0.0), fwd_only(sub.fixed_samples, 0.0);
    json layers = json::array();
    for (size_t i = 0; i < convs.size(); ++i) {
      Conv& c = *convs[i];
      json lj = {{"layer", c.L.name}, {"count", c.L.count}};
      for (int p = 0; p < 3; ++p) {
        const Chosen& ch = chosen[i][size_t(p)];
        NB_CUDNN(cudnnSetConvolutionMathType(c.conv, ch.math));
        const Measurement m = ctx.measure_sub([&](cudaStream_t s) { run_pass(h, c, Pass(p), ch, ws.get(), s); }, sub);
        for (size_t j = 0; j < net.size() && j < m.samples_s.size(); ++j) {
          net[j] += c.L.count * m.samples_s[j];
          if (p == 0) fwd_only[j] += c.L.count * m.samples_s[j];
        }
        const double med = compute_stats(m.samples_s).median;
        lj[std::string(pass_name(Pass(p))) + "_us"] = med * 1e6;
        lj[std::string(pass_name(Pass(p))) + "_algo"] = ch.algo;
      }
      // Forward verified on every layer (the backward passes in the layer cases).
      size_t failures = 0;
      std::string worst;
      run_pass(h, c, Pass::fwd, chosen[i][0], ws.get(), ctx.stream());
      NB_CUDA(cudaStreamSynchronize(ctx.stream()));
      lj["verification"] = verify_pass(c, Pass::fwd, 8, failures, worst);
      if (failures) ctx.wrong(std::string(c.L.name) + ": " + worst);
      layers.push_back(lj);
    }
    Measurement total_m;
    total_m.samples_s = net;
    total_m.stop = StopReason::fixed;
    total_m.batch = 1;
    ctx.set_measurement(total_m);
    double flops = 0;
    for (auto& c : convs) flops += 3.0 * c->flops() * c->L.count;
    ctx.set_throughput("tflops", flops / 1e12, "");
    const double med = compute_stats(net).median, fmed = compute_stats(fwd_only).median;
    ctx.metrics()["train_images_per_s"] = double(batch) / med;
    ctx.metrics()["fwd_images_per_s"] = double(batch) / fmed;
    ctx.metrics()["fwd_time_us"] = fmed * 1e6;
    ctx.metrics()["peak_memory_bytes"] = peak_bytes;
    ctx.metrics()["memory_fraction_x"] = peak_bytes / double(g.memory_bytes);
    ctx.metrics()["workspace_bytes"] = double(max_ws);
    ctx.details()["layers"] = layers;
    ctx.details()["memory_model"] =
        "measured with cudaMemGetInfo: every convolution's input, output and gradients for all 53 "
        "convolutions of ResNet-50 (inputs and outputs kept for backward), the filters and their "
        "gradients, and the largest workspace; other layers (batch norm, ReLU, pooling) are not included";
    ctx.details()["flops_note"] = "forward + backward-data + backward-filter, each 2 N K P Q C R S, weighted by occurrence";
  } catch (const SkipCase& s) {
    auto& o = oom_batches()[series];
    if (o == 0 || batch < o) o = batch;
    throw;
  }
}

class ConvFamily : public Family {
 public:
  std::string name() const override { return "conv"; }
  std::string description() const override {
    return "cuDNN convolution: ResNet-50 layers fwd/bwd-data/bwd-filter, FP32/TF32/FP16, NCHW/NHWC, batch sweep";
  }
  std::vector<Case> cases(Suite suite) const override {
    std::vector<Case> out;
    auto layer_case = [&](const Layer& L, const Prec& P, bool nhwc, int64_t batch, Pass pass) {
      Case c;
      c.family = "conv";
      c.name = std::string("layer/") + L.name + "/" + P.name + "/" + (nhwc ? "nhwc" : "nchw") + "/" + pass_name(pass) +
               "/b" + std::to_string(batch);
      c.params = {{"layer", L.name}, {"precision", P.name}, {"layout", nhwc ? "nhwc" : "nchw"}, {"pass", pass_name(pass)},
                  {"batch", batch}, {"c", L.c}, {"k", L.k}, {"hw", L.hw}, {"r", L.r}, {"stride", L.stride},
                  {"groups", L.groups}};
      const Prec* pp = &P;
      const Layer* lp = &L;
      c.available = [pp](const GpuInfo& g) { return prec_available(*pp, g); };
      c.run = [lp, pp, nhwc, batch, pass](CaseContext& ctx) { run_layer_case(ctx, *lp, *pp, nhwc, batch, pass); };
      out.push_back(std::move(c));
    };
    auto net_case = [&](const Prec& P, bool nhwc, int64_t batch) {
      Case c;
      c.family = "conv";
      c.name = std::string("resnet50/") + P.name + "/" + (nhwc ? "nhwc" : "nchw") + "/b" + std::to_string(batch);
      c.params = {{"layer", "resnet50_total"}, {"network", "resnet50"}, {"precision", P.name},
                  {"layout", nhwc ? "nhwc" : "nchw"}, {"pass", "train"}, {"batch", batch}};
      const Prec* pp = &P;
      c.available = [pp](const GpuInfo& g) { return prec_available(*pp, g); };
      c.run = [pp, nhwc, batch](CaseContext& ctx) { run_network_case(ctx, *pp, nhwc, batch); };
      out.push_back(std::move(c));
    };
    const Layer& l3x3 = *find_layer("l1_3x3_64_64");
    if (suite == Suite::quick) {
      layer_case(l3x3, prec_by_name("fp16"), false, 64, Pass::fwd);
      layer_case(l3x3, prec_by_name("tf32"), false, 64, Pass::fwd);
      layer_case(l3x3, prec_by_name("fp16"), false, 32, Pass::bwd_data);
      layer_case(l3x3, prec_by_name("fp16"), false, 32, Pass::bwd_filter);
      net_case(prec_by_name("fp16"), false, 32);
      return out;
    }
    for (const auto& P : kPrecs)
      for (bool nhwc : {false, true})
        for (int64_t b = 1; b <= 1024; b *= 2) net_case(P, nhwc, b);
    for (const auto& P : kPrecs)
      for (bool nhwc : {false, true}) {
        for (int64_t b : {32, 64, 128, 256})
          for (Pass pass : {Pass::fwd, Pass::bwd_data, Pass::bwd_filter}) layer_case(l3x3, P, nhwc, b, pass);
        layer_case(kDepthwise, P, nhwc, 64, Pass::fwd);
      }
    return out;
  }
};

const Registrar registrar(std::make_unique<ConvFamily>());

}  // namespace

// The ResNet-50 convolution list, for tests.
std::vector<std::pair<std::string, int>> resnet50_conv_counts() {
  std::vector<std::pair<std::string, int>> out;
  for (const auto& l : resnet50_layers()) out.emplace_back(l.name, l.count);
  return out;
}

}  // namespace nb
