#include "cudnn_conv.hpp"
#include "bench/measure.hpp"

#include <algorithm>
#include <map>
#include <mutex>

#include "bench/settings.hpp"
#include "bench/algo_choice.hpp"
#include "base/stats.hpp"
#include "base/text.hpp"

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

// 1 TiB of workspace is more than any GPU has; the cap keeps the shift to bytes from wrapping.
const SettingRegistrar kWorkspace({"NODEBENCH_CUDNN_WORKSPACE_MIB", SettingKind::integer, "cudnn_workspace_mib", 4096,
                                   1 << 20, false, "conv algorithm search workspace in MiB (default 4096)", "cudnn"});

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
  const size_t cap = size_t(current_settings().integer("NODEBENCH_CUDNN_WORKSPACE_MIB")) << 20;
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

// How a candidate is timed: one untimed run (its own data back in L2), then a burst of runs back
// to back (one for large layers, whose single run is long enough to time), per round; the rounds
// and the decision follow nb::ChoiceRules (algo_choice.hpp).
constexpr int kTrialBurst = 3;
constexpr float kLargeMs = 2.0f;

std::mutex& cache_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, AlgoChoice>& process_cache() {
  static std::map<std::string, AlgoChoice> m;
  return m;
}

// The candidate id of the generic choice: the algorithm first, then the math type, so that a full
// tie goes to the lower algorithm number (cuDNN lists an algorithm once per math type).
int candidate_id(int algo, cudnnMathType_t math) { return algo * 4 + int(math); }

// Whether `algo` under `math` runs here with the search's workspace; the workspace it needs in
// `need`.
cudnnStatus_t runs_here(cudnnHandle_t h, ConvDesc& c, Pass pass, int algo, cudnnMathType_t math, size_t listed,
                        const ConvBuffers& b, DeviceBuffer& ws, cudaStream_t stream, size_t& need) {
  NB_CUDNN(cudnnSetConvolutionMathType(c.conv, math));
  need = 0;
  cudnnStatus_t st = workspace_size(h, c, pass, algo, need);
  need = std::max(need, listed);
  if (st == CUDNN_STATUS_SUCCESS && need > ws.bytes()) st = CUDNN_STATUS_ALLOC_FAILED;
  if (st == CUDNN_STATUS_SUCCESS) st = try_pass(h, c, pass, algo, b, ws.get(), need);
  if (st == CUDNN_STATUS_SUCCESS) NB_CUDA(cudaStreamSynchronize(stream));
  return st;
}

std::string rejection(cudnnStatus_t st) {
  return std::string("rejected: ") + cudnnGetErrorString(st) +
         (st == CUDNN_STATUS_ALLOC_FAILED ? " (workspace larger than the search's)" : "");
}

}  // namespace

// cuDNN's search times each algorithm once, cold, and ranks them unreliably: for the 3x3 64->64
// FP16 convolution at batch 32 on an H200 it put the tensor-core implicit GEMM fifth, and in
// ResNet-50 at batch 32 the chosen forward algorithm of some 1x1 layers flipped between runs
// (16.5 us against 137 us). So every candidate it lists is checked to run at all (a listed
// algorithm can fail with CUDNN_STATUS_BAD_PARAM) and then timed again warm here, in interleaved
// rounds, and chosen by median with a tie margin (nb::choose_by_timing). A choice is kept for the
// process and in the algorithm cache (--algo-cache), whose entry is used instead of a search.
AlgoChoice choose_algo(cudnnHandle_t h, ConvDesc& c, Pass pass, const ConvBuffers& b, DeviceBuffer& ws,
                       cudaStream_t stream, const std::string& gpu_model) {
  const std::string library = "cudnn-" + std::to_string(cudnnGetVersion());
  const std::string key = gpu_model + "|" + library + "|" + c.key() + "|" + pass_name(pass);
  {
    std::lock_guard<std::mutex> lock(cache_mutex());
    auto it = process_cache().find(key);
    if (it != process_cache().end()) {
      AlgoChoice ch = it->second;
      ch.from_cache = true;
      if (ch.source == "search") ch.source = "process";
      return ch;
    }
  }
  const cudnnMathType_t requested = c.prec().math;
  NB_CUDNN(cudnnSetStream(h, stream));
  AlgoChoice ch;
  const AlgoCacheKey ckey{library, gpu_model, c.key(), pass_name(pass)};
  bool from_file = false;
  if (std::optional<AlgoCacheEntry> e = global_algo_cache().get(ckey, &from_file)) {
    // A cached choice is used when it still runs here with the search's workspace; otherwise the
    // search runs as if there were no entry.
    size_t need = 0;
    const cudnnStatus_t st =
        runs_here(h, c, pass, e->algo, cudnnMathType_t(e->extra), size_t(e->workspace), b, ws, stream, need);
    NB_CUDNN(cudnnSetConvolutionMathType(c.conv, requested));
    json row = {{"algo", e->algo}, {"math_type", e->extra}, {"workspace_bytes", need}, {"median_us", e->median_s * 1e6},
                {"chosen_at", e->chosen_at}};
    if (st == CUDNN_STATUS_SUCCESS) {
      ch.algo = e->algo;
      ch.math = cudnnMathType_t(e->extra);
      ch.workspace = need;
      ch.trial_us = e->median_s * 1e6;
      ch.from_cache = true;
      ch.source = from_file ? "file" : "process";
      row["trial"] = "from the algorithm cache";
      row["chosen"] = true;
      ch.trials.push_back(row);
      std::lock_guard<std::mutex> lock(cache_mutex());
      process_cache().emplace(key, ch);
      return ch;
    }
    row["trial"] = "from the algorithm cache, " + rejection(st) + ": searched again";
    ch.trials.push_back(row);
  }
  NB_CUDNN(cudnnSetConvolutionMathType(c.conv, requested));
  int returned = 0;
  const std::vector<Candidate> cands = search(h, c, pass, b, ws, returned);
  ch.candidates = returned;
  struct Live {
    Candidate cand;
    size_t workspace;
    size_t row;
  };
  std::map<int, Live> live;  // by candidate id
  std::vector<AlgoCandidate> generic;
  for (const Candidate& cand : cands) {
    json row = {{"algo", cand.algo}, {"math_type", int(cand.math)}, {"cudnn_ms", cand.find_ms},
                {"workspace_bytes", cand.memory}};
    const int id = candidate_id(cand.algo, cand.math);
    if (live.count(id)) continue;  // listed twice: timed once
    size_t need = 0;
    const cudnnStatus_t st = runs_here(h, c, pass, cand.algo, cand.math, cand.memory, b, ws, stream, need);
    if (st == CUDNN_STATUS_SUCCESS) {
      row["workspace_bytes"] = need;
      live.emplace(id, Live{cand, need, ch.trials.size()});
      generic.push_back({id, need, "algo " + std::to_string(cand.algo) + " math " + std::to_string(int(cand.math))});
    } else {
      row["trial"] = rejection(st);
    }
    ch.trials.push_back(row);
  }
  if (live.empty()) {
    NB_CUDNN(cudnnSetConvolutionMathType(c.conv, requested));
    throw Error("cuDNN found no working algorithm for " + c.key() + " " + pass_name(pass) + ": " + ch.trials.dump());
  }
  Event e0, e1;
  StreamHold hold;
  const bool large = !cands.empty() && cands.front().find_ms > kLargeMs;
  const int burst = large ? 1 : kTrialBurst;
  // Each candidate is timed as the cases measure it: queued behind a blocking kernel, so that the
  // host's cost of issuing the call stays out. Timed back to back from the host instead, the
  // tensor-core algorithm of ResNet-50's 1x1 FP16 NCHW layers at batch 32 read 108-198 us per
  // call in the choice against 15-21 us in the case (H200), and the choice flipped between runs.
  auto time_one = [&](const AlgoCandidate& a) {
    const Live& t = live.at(a.id);
    NB_CUDNN(cudnnSetConvolutionMathType(c.conv, t.cand.math));
    NB_CUDNN(try_pass(h, c, pass, t.cand.algo, b, ws.get(), t.workspace));  // untimed: its data back in L2
    hold.hold(stream);
    e0.record(stream);
    cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
    for (int i = 0; i < burst && st == CUDNN_STATUS_SUCCESS; ++i)
      st = try_pass(h, c, pass, t.cand.algo, b, ws.get(), t.workspace);
    e1.record(stream);
    hold.release();  // released before any error is thrown, so the stream is never left held
    NB_CUDNN(st);
    NB_CUDA(cudaEventSynchronize(e1.get()));
    return e1.seconds_since(e0) / burst;
  };
  const ChoiceRules rules;
  ChoiceOutcome out;
  try {
    out = choose_by_timing(generic, time_one, rules);
  } catch (...) {
    cudnnSetConvolutionMathType(c.conv, requested);
    throw;
  }
  for (const CandidateTiming& t : out.timings) {
    json& row = ch.trials[live.at(t.cand.id).row];
    row["samples"] = t.samples_s.size();
    row["median_us"] = t.median_s * 1e6;
    row["mean_us"] = t.mean_s * 1e6;
    row["trial_us"] = t.median_s * 1e6;
    if (t.dropped) row["trial"] = "dropped: over " + fmt(rules.drop_factor, 0) + "x the best median";
    row["tied"] = t.tied;
    if (t.chosen) row["chosen"] = true;
  }
  const Live& best = live.at(out.best().cand.id);
  ch.algo = best.cand.algo;
  ch.math = best.cand.math;
  ch.workspace = best.workspace;
  ch.find_ms = best.cand.find_ms;
  ch.trial_us = out.best().median_s * 1e6;
  ch.rounds = out.rounds;
  ch.source = "search";
  NB_CUDNN(cudnnSetConvolutionMathType(c.conv, requested));
  global_algo_cache().put(ckey, {ch.algo, int64_t(ch.math), uint64_t(ch.workspace), out.best().median_s, ""});
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
