#include "cudnn_conv.hpp"

#include <algorithm>
#include <map>
#include <mutex>

#include "settings.hpp"
#include "stats.hpp"
#include "text.hpp"

namespace nb::cudnn {

using nlohmann::json;

void check(cudnnStatus_t s, const char* expr, const char* file, int line) {
  if (s == CUDNN_STATUS_SUCCESS) return;
  throw LibraryError(int(s), std::string(cudnnGetErrorString(s)) + " in `" + expr + "` at " + file + ":" +
                                 std::to_string(line));
}

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

namespace {
const Prec kPrecs[] = {
    {"fp32", CUDNN_DATA_FLOAT, CUDNN_FMA_MATH, 4, kernels::FillType::f32, 0},
    {"tf32", CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH, 4, kernels::FillType::f32, 80},
    {"fp16", CUDNN_DATA_HALF, CUDNN_TENSOR_OP_MATH, 2, kernels::FillType::f16, 0},
};
}  // namespace

const std::vector<const Prec*>& all_precs() {
  static const std::vector<const Prec*> all = {&kPrecs[0], &kPrecs[1], &kPrecs[2]};
  return all;
}

const Prec& prec_by_name(const std::string& n) {
  for (const auto& p : kPrecs)
    if (n == p.name) return p;
  throw Error("unknown conv precision " + n);
}

Availability prec_available(const Prec& p, const GpuInfo& g) {
  if (g.cc() < p.min_cc)
    return Availability::no(std::string(p.name) + " needs TF32 tensor cores (compute capability 8.0 or newer); this GPU has " +
                            g.cc_string());
  return Availability::yes();
}

const char* pass_name(Pass p) { return p == Pass::fwd ? "fwd" : p == Pass::bwd_data ? "bwd_data" : "bwd_filter"; }

ConvDesc::ConvDesc(const ConvShape& shape, const Prec& prec, bool nhwc)
    : shape_(shape), prec_(prec), fmt_(nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW) {
  try {
    NB_CUDNN(cudnnCreateTensorDescriptor(&x));
    NB_CUDNN(cudnnCreateTensorDescriptor(&y));
    NB_CUDNN(cudnnCreateFilterDescriptor(&w));
    NB_CUDNN(cudnnCreateConvolutionDescriptor(&conv));
    NB_CUDNN(cudnnSetTensor4dDescriptor(x, fmt_, prec_.data, int(shape_.n), shape_.c, shape_.h, shape_.w));
    NB_CUDNN(cudnnSetFilter4dDescriptor(w, prec_.data, fmt_, shape_.k, shape_.c / shape_.groups, shape_.r, shape_.s));
    // FLOAT compute type for every precision: FP16 accumulates in FP32 (and runs on the FP32 units
    // below compute capability 7.0).
    NB_CUDNN(cudnnSetConvolution2dDescriptor(conv, shape_.pad, shape_.pad, shape_.stride, shape_.stride, 1, 1,
                                             CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    NB_CUDNN(cudnnSetConvolutionGroupCount(conv, shape_.groups));
    NB_CUDNN(cudnnSetConvolutionMathType(conv, prec_.math));
    int on = 0, oc = 0;
    NB_CUDNN(cudnnGetConvolution2dForwardOutputDim(conv, x, w, &on, &oc, &out_h_, &out_w_));
    NB_CUDNN(cudnnSetTensor4dDescriptor(y, fmt_, prec_.data, on, oc, out_h_, out_w_));
  } catch (...) {
    release();
    throw;
  }
}

ConvDesc::~ConvDesc() { release(); }

void ConvDesc::release() {
  if (conv) cudnnDestroyConvolutionDescriptor(conv);
  if (w) cudnnDestroyFilterDescriptor(w);
  if (y) cudnnDestroyTensorDescriptor(y);
  if (x) cudnnDestroyTensorDescriptor(x);
  conv = nullptr;
  w = nullptr;
  x = y = nullptr;
}

std::string ConvDesc::key() const {
  const ConvShape& s = shape_;
  return "n" + std::to_string(s.n) + "_c" + std::to_string(s.c) + "_" + std::to_string(s.h) + "x" + std::to_string(s.w) +
         "_k" + std::to_string(s.k) + "_" + std::to_string(s.r) + "x" + std::to_string(s.s) + "_s" +
         std::to_string(s.stride) + "_p" + std::to_string(s.pad) + "_g" + std::to_string(s.groups) + "_" + prec_.name +
         (nhwc() ? "_nhwc" : "_nchw");
}

// With 1 GiB, the H200 sweeps of 2026-11-29 lost the fast algorithms of the largest layers from
// batch 512 up (ResNet-50's first convolution's filter gradient at batch 1024 fell back to
// algorithm 0, 100x slower). 4 GiB is the default limit TensorFlow gives cuDNN.
size_t find_workspace_limit() {
  size_t free_b = 0, total_b = 0;
  NB_CUDA(cudaMemGetInfo(&free_b, &total_b));
  const size_t cap = current_settings().cudnn_workspace_mib << 20;
  return std::min<size_t>(cap, free_b / 4);
}

namespace {

// One pass with a given algorithm; the status is returned, not thrown, so that a candidate that
// cuDNN's search listed but that does not run here can be set aside.
cudnnStatus_t try_pass(cudnnHandle_t h, ConvDesc& c, Pass pass, int algo, const ConvBuffers& b, void* ws,
                       size_t ws_bytes, float alpha = 1.f, float beta = 0.f) {
  if (pass == Pass::fwd)
    return cudnnConvolutionForward(h, &alpha, c.x, b.x, c.w, b.w, c.conv, cudnnConvolutionFwdAlgo_t(algo), ws, ws_bytes,
                                   &beta, c.y, b.y);
  if (pass == Pass::bwd_data)
    return cudnnConvolutionBackwardData(h, &alpha, c.w, b.w, c.y, b.dy, c.conv, cudnnConvolutionBwdDataAlgo_t(algo), ws,
                                        ws_bytes, &beta, c.x, b.dx);
  return cudnnConvolutionBackwardFilter(h, &alpha, c.x, b.x, c.y, b.dy, c.conv, cudnnConvolutionBwdFilterAlgo_t(algo), ws,
                                        ws_bytes, &beta, c.w, b.dw);
}

cudnnStatus_t workspace_size(cudnnHandle_t h, ConvDesc& c, Pass pass, int algo, size_t& bytes) {
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

std::vector<Candidate> search(cudnnHandle_t h, ConvDesc& c, Pass pass, const ConvBuffers& b, DeviceBuffer& ws,
                              int& returned) {
  if (pass == Pass::fwd) {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    NB_CUDNN(cudnnFindConvolutionForwardAlgorithmEx(h, c.x, b.x, c.w, b.w, c.conv, c.y, b.y,
                                                    CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf, ws.get(), ws.bytes()));
    return successful(perf, returned);
  }
  if (pass == Pass::bwd_data) {
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    NB_CUDNN(cudnnFindConvolutionBackwardDataAlgorithmEx(h, c.w, b.w, c.y, b.dy, c.conv, c.x, b.dx,
                                                         CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &returned, perf, ws.get(),
                                                         ws.bytes()));
    return successful(perf, returned);
  }
  cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
  NB_CUDNN(cudnnFindConvolutionBackwardFilterAlgorithmEx(h, c.x, b.x, c.y, b.dy, c.conv, c.w, b.dw,
                                                         CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &returned, perf, ws.get(),
                                                         ws.bytes()));
  return successful(perf, returned);
}

// Which of cuDNN's candidates are timed again, and how: those within kTrialSpread of its fastest
// (at most kTrialCandidates), each in kTrialRounds interleaved rounds of one untimed run (its own
// data back in L2) and kTrialBurst timed back-to-back runs.
constexpr size_t kTrialCandidates = 6;
constexpr float kTrialSpread = 4.0f;
constexpr int kTrialRounds = 3;
constexpr int kTrialBurst = 3;

std::mutex& cache_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, AlgoChoice>& process_cache() {
  static std::map<std::string, AlgoChoice> m;
  return m;
}

}  // namespace

// cuDNN's search times each algorithm once, cold, and at small batches ranks them wrongly: for
// the 3x3 64->64 FP16 convolution at batch 32 on an H200 it put the tensor-core implicit GEMM
// fifth, at twice the time of Winograd, which ran at half the speed of PyTorch's choice. So its
// nearest candidates are run again here: each checked to run at all (a listed algorithm can
// fail with CUDNN_STATUS_BAD_PARAM), then timed warm, in interleaved rounds on the stream; the one
// with the smallest median wins. Large layers (over 2 ms a run) get one round.
AlgoChoice choose_algo(cudnnHandle_t h, ConvDesc& c, Pass pass, const ConvBuffers& b, DeviceBuffer& ws,
                       cudaStream_t stream, const std::string& gpu_model) {
  const std::string key = gpu_model + "|cudnn" + std::to_string(cudnnGetVersion()) + "|" + c.key() + "|" + pass_name(pass);
  {
    std::lock_guard<std::mutex> lock(cache_mutex());
    auto it = process_cache().find(key);
    if (it != process_cache().end()) {
      AlgoChoice ch = it->second;
      ch.from_cache = true;
      return ch;
    }
  }
  const cudnnMathType_t requested = c.prec().math;
  NB_CUDNN(cudnnSetStream(h, stream));
  NB_CUDNN(cudnnSetConvolutionMathType(c.conv, requested));
  int returned = 0;
  const std::vector<Candidate> cands = search(h, c, pass, b, ws, returned);
  AlgoChoice ch;
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
    if (st == CUDNN_STATUS_SUCCESS) st = try_pass(h, c, pass, cand.algo, b, ws.get(), need);
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
    throw Error("cuDNN found no working algorithm for " + c.key() + " " + pass_name(pass) + ": " + ch.trials.dump());
  }
  Event e0, e1;
  const bool large = !cands.empty() && cands.front().find_ms > 2.0f;
  const int rounds = large ? 1 : kTrialRounds, burst = large ? 1 : kTrialBurst;
  for (int round = 0; round < rounds && live.size() > 1; ++round)
    for (Trial& t : live) {
      NB_CUDNN(cudnnSetConvolutionMathType(c.conv, t.cand.math));
      NB_CUDNN(try_pass(h, c, pass, t.cand.algo, b, ws.get(), t.workspace));  // untimed: its data back in L2
      e0.record(stream);
      for (int i = 0; i < burst; ++i) NB_CUDNN(try_pass(h, c, pass, t.cand.algo, b, ws.get(), t.workspace));
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
  std::lock_guard<std::mutex> lock(cache_mutex());
  process_cache().emplace(key, ch);
  return ch;
}

void run_pass(cudnnHandle_t h, ConvDesc& c, Pass pass, const AlgoChoice& ch, const ConvBuffers& b, void* ws,
              cudaStream_t s, float alpha, float beta) {
  NB_CUDNN(cudnnSetStream(h, s));
  NB_CUDNN(cudnnSetConvolutionMathType(c.conv, ch.math));
  NB_CUDNN(try_pass(h, c, pass, ch.algo, b, ws, ch.workspace, alpha, beta));
}

}  // namespace nb::cudnn
