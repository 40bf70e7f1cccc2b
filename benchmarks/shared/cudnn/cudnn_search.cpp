// The algorithm choice of one convolution pass (cudnn_conv.hpp's choose_algo): cuDNN's search
// (cudnnFind*AlgorithmEx) or the seeded search from the same layer's choice at another batch,
// every candidate timed again here and chosen by nb::choose_by_timing; the session's memo and the
// algorithm cache.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>

#include "bench/algo_choice.hpp"
#include "bench/measure.hpp"
#include "base/text.hpp"
#include "cudnn_conv.hpp"

namespace nb::cudnn {

using nlohmann::json;

namespace {


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
// A seeded search times, besides the seed's candidates, cuDNN's best `kHeuristicTop` by
// heuristics, and of the seed those within `kSeedBand` times its fastest: a candidate twice as
// slow at a neighbouring batch has not been seen to win after a doubling of the batch, and
// heuristics cover an algorithm that only pays at larger sizes.
constexpr int kHeuristicTop = 2;
constexpr double kSeedBand = 2.0;

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

// What one choice works on: the pass's descriptors and operands, the search workspace, the
// stream, and the math type the descriptor is left with.
struct Choosing {
  cudnnHandle_t h;
  ConvDesc& c;
  Pass pass;
  const ConvBuffers& b;
  DeviceBuffer& ws;
  cudaStream_t stream;
  cudnnMathType_t requested;
};

// The algorithm cache's entry for the key, when it still runs here with the search's workspace
// (else the search runs as if there were no entry; the trial row says why).
bool from_cache(const Choosing& x, AlgoCache& cache, const AlgoCacheKey& ckey, AlgoChoice& ch) {
  bool from_file = false;
  const std::optional<AlgoCacheEntry> e = cache.get(ckey, &from_file);
  if (!e) return false;
  size_t need = 0;
  const cudnnStatus_t st =
      runs_here(x.h, x.c, x.pass, e->algo, cudnnMathType_t(e->extra), size_t(e->workspace), x.b, x.ws, x.stream, need);
  NB_CUDNN(cudnnSetConvolutionMathType(x.c.conv, x.requested));
  json row = {{"algo", e->algo}, {"math_type", e->extra}, {"workspace_bytes", need}, {"median_us", e->median_s * 1e6},
              {"chosen_at", e->chosen_at}};
  if (st != CUDNN_STATUS_SUCCESS) {
    row["trial"] = "from the algorithm cache, " + rejection(st) + ": searched again";
    ch.trials.push_back(row);
    return false;
  }
  ch.algo = e->algo;
  ch.math = cudnnMathType_t(e->extra);
  ch.workspace = need;
  ch.trial_us = e->median_s * 1e6;
  ch.from_cache = true;
  ch.source = from_file ? "file" : "process";
  row["trial"] = "from the algorithm cache";
  row["chosen"] = true;
  ch.trials.push_back(row);
  return true;
}

// A candidate of cuDNN's search that runs here, with the workspace it needs and its trial row.
struct Live {
  Candidate cand;
  size_t workspace;
  size_t row;
};

// Whether `cand` runs here: live (timed later) or its trial row says why not; `why` tags the row
// (a seeded search's seed or heuristic pick).
// `reject_over_s` > 0: a candidate whose first run takes longer is not timed further (a seeded
// search's bound: cuDNN's heuristics put an algorithm 300 to 1000 times slower than the seed's among
// their best two for TF32 NHWC's backward-data on an H200, and timing it in rounds took most of a
// 46 s case).
void add_live(const Choosing& x, const Candidate& cand, const char* why, AlgoChoice& ch, std::map<int, Live>& live,
              std::vector<AlgoCandidate>& generic, double reject_over_s = 0) {
  const int id = candidate_id(cand.algo, cand.math);
  if (live.count(id)) return;  // listed twice: timed once
  json row = {{"algo", cand.algo}, {"math_type", int(cand.math)}, {"workspace_bytes", cand.memory}};
  if (why) row["candidate"] = why;
  else row["cudnn_ms"] = cand.find_ms;
  size_t need = 0;
  const auto t0 = std::chrono::steady_clock::now();
  const cudnnStatus_t st = runs_here(x.h, x.c, x.pass, cand.algo, cand.math, cand.memory, x.b, x.ws, x.stream, need);
  const double first_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (st == CUDNN_STATUS_SUCCESS && first_run_too_slow(first_s, reject_over_s)) {
    row["trial"] = "rejected: its first run took " + fmt(first_s * 1e3, 2) + " ms, over the seeded search's bound of " +
                   fmt(reject_over_s * 1e3, 2) + " ms";
  } else if (st == CUDNN_STATUS_SUCCESS) {
    row["workspace_bytes"] = need;
    live.emplace(id, Live{cand, need, ch.trials.size()});
    generic.push_back({id, need, "algo " + std::to_string(cand.algo) + " math " + std::to_string(int(cand.math))});
  } else {
    row["trial"] = rejection(st);
  }
  ch.trials.push_back(row);
}

// cuDNN's search, and each candidate it lists checked to run at all; by candidate id.
std::map<int, Live> live_candidates(const Choosing& x, AlgoChoice& ch, std::vector<AlgoCandidate>& generic, bool& large) {
  int returned = 0;
  const std::vector<Candidate> cands = search(x.h, x.c, x.pass, x.b, x.ws, returned);
  ch.candidates = returned;
  large = !cands.empty() && cands.front().find_ms > kLargeMs;
  std::map<int, Live> live;
  for (const Candidate& cand : cands) add_live(x, cand, nullptr, ch, live, generic);
  return live;
}

// cuDNN's ranking by heuristics, without running anything (the _v7 queries): its `top` best.
std::vector<Candidate> heuristics(const Choosing& x, int top) {
  int n = 0;
  NB_CUDNN(cudnnSetConvolutionMathType(x.c.conv, x.requested));  // the candidates' checks set others
  std::vector<Candidate> out;
  if (x.pass == Pass::fwd) {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    NB_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(x.h, x.c.x, x.c.w, x.c.conv, x.c.y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                                    &n, perf));
    out = successful(perf, n);
  } else if (x.pass == Pass::bwd_data) {
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    NB_CUDNN(cudnnGetConvolutionBackwardDataAlgorithm_v7(x.h, x.c.w, x.c.y, x.c.conv, x.c.x,
                                                         CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, perf));
    out = successful(perf, n);
  } else {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    NB_CUDNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7(x.h, x.c.x, x.c.y, x.c.conv, x.c.w,
                                                           CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, perf));
    out = successful(perf, n);
  }
  // FP32 asks for FMA math (no TF32): a heuristic entry of another math type would change the precision.
  if (x.requested == CUDNN_FMA_MATH)
    out.erase(std::remove_if(out.begin(), out.end(), [](const Candidate& c) { return c.math != CUDNN_FMA_MATH; }), out.end());
  if (int(out.size()) > top) out.resize(size_t(top));
  return out;
}

// A seeded search's candidates: the seed's (the same layer's choice at the nearest batch) and
// cuDNN's best two by heuristics, each checked to run; by candidate id. `large` from the seed's
// fastest median scaled to this batch.
std::map<int, Live> seeded_candidates(const Choosing& x, const std::vector<TimedAlgo>& seed, int64_t from,
                                      AlgoChoice& ch, std::vector<AlgoCandidate>& generic, bool& large) {
  std::map<int, Live> live;
  double fastest = 0;
  for (const TimedAlgo& t : seed) {
    add_live(x, {t.algo, t.math, 0, 0.f}, "seed", ch, live, generic);
    if (t.median_s > 0 && (fastest == 0 || t.median_s < fastest)) fastest = t.median_s;
  }
  const double bound = seeded_first_run_bound(fastest, x.c.shape().n, from);
  for (const Candidate& h : heuristics(x, kHeuristicTop)) add_live(x, h, "heuristic", ch, live, generic, bound);
  ch.candidates = int(live.size());
  large = fastest * double(x.c.shape().n) / double(from) * 1e3 > kLargeMs;
  return live;
}

// Times the live candidates (nb::choose_by_timing) and records the choice in `ch`; returns the
// chosen one's median in seconds.
double time_and_choose(const Choosing& x, const std::map<int, Live>& live, const std::vector<AlgoCandidate>& generic,
                       bool large, AlgoChoice& ch, std::vector<TimedAlgo>& timed) {
  Event e0, e1;
  StreamHold hold;
  const int burst = large ? 1 : kTrialBurst;
  // Each candidate is timed as the cases measure it: queued behind a blocking kernel, so that the
  // host's cost of issuing the call stays out. Timed back to back from the host instead, the
  // tensor-core algorithm of ResNet-50's 1x1 FP16 NCHW layers at batch 32 read 108-198 us per
  // call in the choice against 15-21 us in the case (H200), and the choice flipped between runs.
  auto time_one = [&](const AlgoCandidate& a) {
    const Live& t = live.at(a.id);
    NB_CUDNN(cudnnSetConvolutionMathType(x.c.conv, t.cand.math));
    NB_CUDNN(try_pass(x.h, x.c, x.pass, t.cand.algo, x.b, x.ws.get(), t.workspace));  // untimed: its data back in L2
    hold.hold(x.stream);
    e0.record(x.stream);
    cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
    for (int i = 0; i < burst && st == CUDNN_STATUS_SUCCESS; ++i)
      st = try_pass(x.h, x.c, x.pass, t.cand.algo, x.b, x.ws.get(), t.workspace);
    e1.record(x.stream);
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
    cudnnSetConvolutionMathType(x.c.conv, x.requested);
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
    if (!t.dropped && !t.samples_s.empty()) timed.push_back({live.at(t.cand.id).cand.algo, live.at(t.cand.id).cand.math, t.median_s});
  }
  const Live& best = live.at(out.best().cand.id);
  ch.algo = best.cand.algo;
  ch.math = best.cand.math;
  ch.workspace = best.workspace;
  ch.find_ms = best.cand.find_ms;
  ch.trial_us = out.best().median_s * 1e6;
  ch.rounds = out.rounds;
  return out.best().median_s;
}

// What the memo keeps of a choice for the same layer at other batches: what it timed, or for a
// reused choice (cache file) the chosen one alone.
std::vector<TimedAlgo> seed_of(const AlgoChoice& ch, std::vector<TimedAlgo> timed) {
  if (timed.empty()) timed.push_back({ch.algo, ch.math, ch.trial_us * 1e-6});
  return timed;
}

// The cuDNN search or the seeded one (a choice of the same layer at another batch): the live
// candidates timed and chosen; `timed` gets what was timed. Throws when nothing runs.
double search_and_choose(const Libraries& libs, const Choosing& x, const std::string& seed_key, AlgoChoice& ch,
                         std::vector<TimedAlgo>& timed) {
  std::vector<AlgoCandidate> generic;
  bool large = false;
  std::map<int, Live> live;
  if (libs.seeded_search) {
    std::map<int64_t, std::vector<TimedAlgo>> seeds;
    {
      std::lock_guard<std::mutex> lock(libs.memo->mu);
      auto it = libs.memo->seeds.find(seed_key);
      if (it != libs.memo->seeds.end()) seeds = it->second;
    }
    int64_t from = 0;
    const std::vector<TimedAlgo> seed = seed_candidates(seeds, x.c.shape().n, kSeedBand, from);
    if (!seed.empty()) {
      live = seeded_candidates(x, seed, from, ch, generic, large);
      ch.source = "seeded";
      ch.seeded_from = from;
    }
  }
  if (live.empty()) {  // no seed, or none of its candidates runs here: cuDNN's whole search
    ch.source = "search";
    ch.seeded_from = 0;
    live = live_candidates(x, ch, generic, large);
  }
  if (live.empty())
    throw Error("cuDNN found no working algorithm for " + x.c.key() + " " + pass_name(x.pass) + ": " + ch.trials.dump());
  return time_and_choose(x, live, generic, large, ch, timed);
}

}  // namespace

double seeded_first_run_bound(double seed_fastest_s, int64_t batch, int64_t from) {
  if (!(seed_fastest_s > 0) || batch <= 0 || from <= 0) return 0;  // no seed time: no bound
  // The seed's fastest scaled to this batch, times the rounds' drop factor (4: a candidate that slow
  // is dropped after its first round anyway); at least 1 ms, over the host's timing of one run.
  return std::max(4.0 * seed_fastest_s * double(batch) / double(from), 1e-3);
}

bool first_run_too_slow(double first_run_s, double bound_s) { return bound_s > 0 && first_run_s > bound_s; }

std::string batchless_key(const std::string& key) {
  const size_t u = key.find('_');
  return key.size() > 1 && key[0] == 'n' && u != std::string::npos ? key.substr(u + 1) : key;
}

std::vector<TimedAlgo> seed_candidates(const std::map<int64_t, std::vector<TimedAlgo>>& seeds, int64_t batch,
                                       double band, int64_t& from) {
  from = 0;
  double best_distance = 0;
  const std::vector<TimedAlgo>* nearest = nullptr;
  for (const auto& [b, timed] : seeds) {
    if (b == batch || b <= 0 || batch <= 0 || timed.empty()) continue;
    const double d = std::fabs(std::log2(double(b) / double(batch)));
    if (!nearest || d < best_distance - 1e-9) nearest = &timed, best_distance = d, from = b;  // ascending: a tie keeps the smaller
  }
  if (!nearest) return {};
  double fastest = 0;
  for (const auto& t : *nearest)
    if (t.median_s > 0 && (fastest == 0 || t.median_s < fastest)) fastest = t.median_s;
  std::vector<TimedAlgo> out;
  for (const auto& t : *nearest)
    if (fastest == 0 || t.median_s <= band * fastest) out.push_back(t);
  return out;
}

// cuDNN's search times each algorithm once, cold, and ranks them unreliably: for the 3x3 64->64
// FP16 convolution at batch 32 on an H200 it put the tensor-core implicit GEMM fifth, and in
// ResNet-50 at batch 32 the chosen forward algorithm of some 1x1 layers flipped between runs
// (16.5 us against 137 us). So every candidate it lists is checked to run at all (a listed
// algorithm can fail with CUDNN_STATUS_BAD_PARAM) and then timed again warm here, in interleaved
// rounds, and chosen by median with a tie margin (nb::choose_by_timing). cuDNN's search runs every
// algorithm, the slow ones too, which at large batches takes seconds a layer: once the same layer
// has been chosen at another batch of the run, the search starts from that choice instead (its
// candidates within twice the fastest, and cuDNN's two best by heuristics; NODEBENCH_CUDNN_SEARCH).
// A choice is kept in the session's memo and in the algorithm cache (--algo-cache), whose entry
// is used instead of a search.
AlgoChoice choose_algo(const Libraries& libs, ConvDesc& c, Pass pass, const ConvBuffers& b, DeviceBuffer& ws,
                       cudaStream_t stream, const std::string& gpu_model) {
  ChoiceMemo& memo = *libs.memo;
  const std::string library = "cudnn-" + std::to_string(cudnnGetVersion());
  const std::string key = gpu_model + "|" + library + "|" + c.key() + "|" + pass_name(pass);
  const std::string seed_key = gpu_model + "|" + library + "|" + batchless_key(c.key()) + "|" + pass_name(pass);
  {
    std::lock_guard<std::mutex> lock(memo.mu);
    auto it = memo.choices.find(key);
    if (it != memo.choices.end()) {
      AlgoChoice ch = it->second;
      ch.from_cache = true;
      if (ch.source == "search" || ch.source == "seeded") ch.source = "process";
      return ch;
    }
  }
  const Choosing x{libs.cudnn(), c, pass, b, ws, stream, c.prec().math};
  NB_CUDNN(cudnnSetStream(x.h, stream));
  AlgoChoice ch;
  std::vector<TimedAlgo> timed;
  const AlgoCacheKey ckey{library, gpu_model, c.key(), pass_name(pass)};
  auto keep = [&] {
    std::lock_guard<std::mutex> lock(memo.mu);
    memo.choices.emplace(key, ch);
    memo.seeds[seed_key].emplace(c.shape().n, seed_of(ch, timed));
    return ch;
  };
  if (from_cache(x, *libs.cache, ckey, ch)) return keep();
  NB_CUDNN(cudnnSetConvolutionMathType(c.conv, x.requested));
  double median_s = 0;
  try {
    median_s = search_and_choose(libs, x, seed_key, ch, timed);
  } catch (...) {
    cudnnSetConvolutionMathType(c.conv, x.requested);
    throw;
  }
  NB_CUDNN(cudnnSetConvolutionMathType(c.conv, x.requested));
  libs.cache->put(ckey, {ch.algo, int64_t(ch.math), uint64_t(ch.workspace), median_s, ""});
  return keep();
}

}  // namespace nb::cudnn
