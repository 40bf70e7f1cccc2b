// The p2p family's runs (p2p_spec.hpp): every ordered pair one way, every pair both ways, and
// the latency of a 4-byte copy; one record per pair (a part of the case), the access matrix,
// link types and the rates in the result's analysis.p2p.
#include "p2p_spec.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <sstream>

#include "base/resources.hpp"
#include "base/stats.hpp"
#include "base/verify.hpp"
#include "kernels/common/kernels.cuh"
#include "node/topology.hpp"

namespace nb::p2p {

using nlohmann::json;

namespace {

std::string pair_name(int a, int b) { return "gpu" + std::to_string(a) + "-gpu" + std::to_string(b); }

// The pairs of a case: ordered (one way) or unordered (both ways) pairs of distinct GPUs; with
// the loopback hook and one GPU, the GPU with itself.
std::vector<std::pair<int, int>> pairs_of(CaseContext& ctx, bool ordered) {
  std::vector<std::pair<int, int>> out;
  const auto& g = ctx.gpus();
  if (g.size() == 1 && loopback_hook(ctx.settings())) return {{g[0]->index, g[0]->index}};
  for (size_t x = 0; x < g.size(); ++x)
    for (size_t y = ordered ? 0 : x + 1; y < g.size(); ++y)
      if (x != y) out.push_back({g[x]->index, g[y]->index});
  return out;
}

bool can_access(int a, int b) {
  if (a == b) return true;  // loopback: a GPU reaches its own memory
  int ok = 0;
  NB_CUDA(cudaDeviceCanAccessPeer(&ok, a, b));
  return ok != 0;
}

// Enables or disables peer access both ways between a and b; "already so" is not an error.
void set_peer(int a, int b, bool on) {
  if (a == b) return;
  for (auto [x, y] : {std::pair{a, b}, std::pair{b, a}}) {
    DeviceGuard g(x);
    const cudaError_t e = on ? cudaDeviceEnablePeerAccess(y, 0) : cudaDeviceDisablePeerAccess(y);
    if (e == cudaErrorPeerAccessAlreadyEnabled || e == cudaErrorPeerAccessNotEnabled) {
      (void)cudaGetLastError();
      continue;
    }
    NB_CUDA(e);
  }
}

// Per-GPU state of a case: a source filled with a GPU-specific pattern, a destination, a
// stream and a Measurer (made on the GPU they belong to).
struct GpuSide {
  int id = 0;
  int sm_count = 1;
  DeviceBuffer src, dst;
  std::unique_ptr<Stream> stream;
  std::unique_ptr<Measurer> measurer;
};

class Sides {
 public:
  Sides(CaseContext& ctx, size_t bytes) {
    for (const GpuInfo* g : ctx.gpus()) {
      DeviceGuard guard(g->index);
      GpuSide s;
      s.id = g->index;
      s.sm_count = std::max(1, g->sm_count);
      s.src = DeviceBuffer(bytes);
      s.dst = DeviceBuffer(bytes);
      s.stream = std::make_unique<Stream>();
      s.measurer = std::make_unique<Measurer>(g->index, g->l2_bytes, &ctx.nvml(), g->nvml_index);
      kernels::launch_fill_random(s.stream->get(), s.src.get(), bytes / 4, kernels::FillType::f32, 7000 + uint64_t(g->index));
      NB_CUDA_LAUNCH();
      s.stream->sync();
      by_id_[g->index] = sides_.size();
      sides_.push_back(std::move(s));
    }
  }
  GpuSide& operator[](int id) { return sides_[by_id_.at(id)]; }

 private:
  std::vector<GpuSide> sides_;
  std::map<int, size_t> by_id_;
};

// 64 sampled 32-bit words of src and dst (any GPUs: unified addressing) compared; "" when equal.
std::string compare_words(const void* src, const void* dst, size_t bytes) {
  auto word = [](const void* buf) {
    return [buf](int64_t i) {
      uint32_t v = 0;
      NB_CUDA(cudaMemcpy(&v, static_cast<const uint32_t*>(buf) + i, 4, cudaMemcpyDefault));
      return v;
    };
  };
  return compare_sampled_words(int64_t(bytes / 4), 0x5eedull, word(src), word(dst), "differ from the source");
}

// One copy of `bytes` from a's source to b's destination, enqueued on `st`.
void copy_once(cudaStream_t st, GpuSide& a, GpuSide& b, size_t bytes, Engine engine) {
  if (engine == Engine::ce) {
    NB_CUDA(cudaMemcpyPeerAsync(b.dst.get(), b.id, a.src.get(), a.id, bytes, st));
  } else {
    // A kernel on b (the stream's GPU) reads a's memory.
    kernels::launch_sm_copy(st, a.src.get(), b.dst.get(), bytes / 16, unsigned(b.sm_count) * 4, 256);
    NB_CUDA_LAUNCH();
  }
}

json matrix(size_t n) { return json(std::vector<json>(n, json(std::vector<json>(n, nullptr)))); }

// The access matrix and link types, into analysis.p2p; returns the position of each GPU.
std::map<int, size_t> describe(CaseContext& ctx) {
  const auto& gpus = ctx.gpus();
  const size_t n = gpus.size();
  json ids = json::array(), access = matrix(n), link = matrix(n), level = matrix(n), nvlink = matrix(n);
  std::map<int, size_t> pos;
  for (size_t i = 0; i < n; ++i) {
    ids.push_back(gpus[i]->index);
    pos[gpus[i]->index] = i;
    link[i][i] = "X";
    for (size_t j = 0; j < n; ++j) {
      if (i == j) continue;
      access[i][j] = can_access(gpus[i]->index, gpus[j]->index);
      const PairLink p = pair_link(ctx.nvml(), gpus[i]->nvml_index, gpus[j]->nvml_index);
      link[i][j] = p.type;
      level[i][j] = p.level ? json(*p.level) : json(nullptr);
      nvlink[i][j] = p.nvlink;
    }
  }
  ctx.analysis()["p2p"] = {{"gpus", ids},
                           {"access", access},
                           {"link_type", link},
                           {"topology_level", level},
                           {"nvlink", nvlink},
                           {"note", "rows are the source (or first) GPU, columns the destination; matrices in the "
                                    "order of 'gpus'"}};
  return pos;
}

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

void finish_part(CasePart& part, double started) { part.duration_s = now_s() - started; }

// The part of one ordered pair, and its skip where the two GPUs have no peer access.
CasePart pair_part(int a, int b) {
  CasePart part;
  part.name = pair_name(a, b);
  part.params = {{"src", a}, {"dst", b}};
  part.gpus = {a, b};
  return part;
}
void skip_no_peer(CasePart& part, int a, int b) {
  part.status = Status::skipped;
  part.reason_kind = ReasonKind::unsupported;
  part.reason = "no peer access between GPU " + std::to_string(a) + " and GPU " + std::to_string(b) +
                " (cudaDeviceCanAccessPeer)";
}

// The part's verification: how it was checked, and wrong when `err` says what differed.
void record_verification(CasePart& part, const std::string& err, const char* method) {
  part.out.details["verification"] = {{"method", method}, {"ok", err.empty()}};
  if (!err.empty()) {
    part.out.wrong = true;
    part.out.wrong_reason = err;
  }
}

}  // namespace

namespace {

// The part of each pair of the case (ordered: one way; else both ways), with its skip where the
// GPUs have no peer access (`reach` says whether they do), its outcome and duration.
void for_each_pair(CaseContext& ctx, bool ordered, const std::function<bool(int a, int b)>& reach,
                   const std::function<void(CasePart& part, int a, int b)>& run) {
  for (const auto& [a, b] : pairs_of(ctx, ordered)) {
    const double t0 = now_s();
    CasePart part = pair_part(a, b);
    try {
      if (reach(a, b)) run(part, a, b);
      else skip_no_peer(part, a, b);
    } catch (const std::exception& e) {
      set_outcome(part, e);
    }
    finish_part(part, t0);
    ctx.add_part(std::move(part));
  }
}

// Both directions of a pair at once: a->b and b->a on two streams, started together, each
// direction timed by its own events on the GPU whose stream carries it (ce: each source pushes;
// sm: each destination pulls).
class BothWays {
 public:
  BothWays(GpuSide& sa, GpuSide& sb, size_t bytes, Engine engine)
      : sa_(sa), sb_(sb), own_ab_(engine == Engine::ce ? sa : sb), own_ba_(engine == Engine::ce ? sb : sa),
        bytes_(bytes), engine_(engine) {
    for (auto [side, pair] : {std::pair{&own_ab_, &ab_}, std::pair{&own_ba_, &ba_}}) {
      DeviceGuard g(side->id);
      pair->first = std::make_unique<Event>();
      pair->second = std::make_unique<Event>();
    }
  }
  // One copy each way; kept as a sample unless `keep` is false.
  void once(bool keep) {
    const auto h0 = std::chrono::steady_clock::now();
    enqueue(own_ab_, sa_, sb_, ab_);
    enqueue(own_ba_, sb_, sa_, ba_);
    NB_CUDA(cudaEventSynchronize(ab_.second->get()));
    NB_CUDA(cudaEventSynchronize(ba_.second->get()));
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - h0).count();
    if (!keep) return;
    t_ab.push_back(ab_.second->seconds_since(*ab_.first));
    t_ba.push_back(ba_.second->seconds_since(*ba_.first));
    t_wall.push_back(wall);
    // The sample: each direction's own events, so that 2 x bytes over it is the sum of the two
    // directions' rates (the host's wall clock adds its wake-up and reads low).
    m.samples_s.push_back(both_ways_sample_s(t_ab.back(), t_ba.back()));
  }
  // Three warm-up pairs, then samples until the measurement rules stop.
  void sample(const MeasureConfig& cfg) {
    for (int i = 0; i < 3; ++i) once(false);
    m.warmup_runs = 3;
    const auto start = std::chrono::steady_clock::now();
    while (true) {
      once(true);
      const Stats s = compute_stats(m.samples_s);
      const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      m.stop = should_stop(cfg, m.samples_s.size(), m.samples_s.size() > 1 ? s.cv : 1.0, el);
      if (m.stop != StopReason::none) break;
    }
  }
  std::vector<double> t_ab, t_ba, t_wall;
  Measurement m;

 private:
  using Events = std::pair<std::unique_ptr<Event>, std::unique_ptr<Event>>;
  void enqueue(GpuSide& owner, GpuSide& from, GpuSide& to, Events& ev) {
    DeviceGuard g(owner.id);
    ev.first->record(owner.stream->get());
    copy_once(owner.stream->get(), from, to, bytes_, engine_);
    ev.second->record(owner.stream->get());
  }
  GpuSide &sa_, &sb_, &own_ab_, &own_ba_;
  size_t bytes_;
  Engine engine_;
  Events ab_, ba_;
};

// One ordered pair one way: timed on the stream that carries the copy, then verified.
void one_way_part(CaseContext& ctx, const Spec& spec, GpuSide& sa, GpuSide& sb, size_t bytes, CasePart& part,
                  json& cell) {
  GpuSide& owner = spec.engine == Engine::ce ? sa : sb;  // the GPU whose stream carries the copy
  DeviceGuard guard(owner.id);
  MeasureConfig cfg = ctx.config();
  // Latency: one copy per sample, as the latency family times one operation per sample
  // (back-to-back copies would overlap and show a pipelined rate, not a latency).
  if (spec.test == Test::latency) cfg = one_op_per_sample(cfg);
  // Without peer access the driver stages the copy through the host: timed by the host
  // clock (what a caller waits), as the host link's pageable copies are.
  if (!spec.peer) cfg.timer = Timer::host;
  auto launch = [&](cudaStream_t st) { copy_once(st, sa, sb, bytes, spec.engine); };
  part.out.config = cfg;
  part.out.measurement = owner.measurer->measure(owner.stream->get(), launch, cfg);
  const Stats st = compute_stats(part.out.measurement->samples_s);
  if (spec.test == Test::latency) {
    part.out.metric(kLatencyMetric, st.median * 1e6);
    part.out.metric(kP90Latency, st.p90 * 1e6);
    cell = st.median * 1e6;
  } else {
    part.out.set_throughput(kGbps, double(bytes) / 1e9, "");
    cell = double(bytes) / 1e9 / st.median;
  }
  part.out.details = {{"peer_access", spec.peer},
                      {"loopback", sa.id == sb.id},
                      {"stream_gpu", owner.id},
                      {"timer", spec.peer ? "cuda events" : "host clock (staged through the host)"}};
  // Verify: clear the destination, copy once more, compare sampled words.
  {
    DeviceGuard gb_guard(sb.id);
    NB_CUDA(cudaMemset(sb.dst.get(), 0, bytes));
  }
  launch(owner.stream->get());
  owner.stream->sync();
  record_verification(part, compare_words(sa.src.get(), sb.dst.get(), bytes), "64 sampled 32-bit words against the source");
}

// One pair both ways at once; returns the rate of both directions together.
double both_ways_part(CaseContext& ctx, const Spec& spec, GpuSide& sa, GpuSide& sb, CasePart& part) {
  const size_t bytes = spec.bytes;
  BothWays bw(sa, sb, bytes, spec.engine);
  bw.sample(ctx.config());
  part.out.config = ctx.config();
  part.out.measurement = bw.m;
  part.out.set_throughput(kGbps, 2.0 * double(bytes) / 1e9, "");
  const double fwd = double(bytes) / 1e9 / compute_stats(bw.t_ab).median;
  const double rev = double(bytes) / 1e9 / compute_stats(bw.t_ba).median;
  part.out.metric(kFwdGbps, fwd);
  part.out.metric(kRevGbps, rev);
  part.out.metric(kSumGbps, fwd + rev);
  part.out.metric(kWallGbps, 2.0 * double(bytes) / 1e9 / compute_stats(bw.t_wall).median);
  part.out.details = {{"peer_access", spec.peer},
                      {"loopback", sa.id == sb.id},
                      {"timer", "fwd (src->dst) and rev (dst->src): each direction's CUDA events; a sample is "
                                "2 / (1/t_fwd + 1/t_rev), so gbps is the sum of the two directions' rates; "
                                "wall_gbps from the host clock until both are done"},
                      {"note", "gbps counts both directions: fwd_gbps + rev_gbps per sample; sum_gbps is the "
                               "sum of the two directions' medians"}};
  {
    DeviceGuard g1(sa.id);
    NB_CUDA(cudaMemset(sa.dst.get(), 0, bytes));
    DeviceGuard g2(sb.id);
    NB_CUDA(cudaMemset(sb.dst.get(), 0, bytes));
  }
  bw.once(false);
  std::string err = compare_words(sa.src.get(), sb.dst.get(), bytes);
  if (err.empty()) err = compare_words(sb.src.get(), sa.dst.get(), bytes);
  record_verification(part, err, "64 sampled 32-bit words each way");
  return 2.0 * double(bytes) / 1e9 / compute_stats(bw.m.samples_s).median;
}

}  // namespace

void run_one_way(CaseContext& ctx, const Spec& spec) {
  const auto pos = describe(ctx);
  const size_t bytes = spec.test == Test::latency ? 4 : spec.bytes;
  Sides sides(ctx, std::max<size_t>(bytes, 16));
  json mat = matrix(pos.size());
  // An SM copy runs on the destination, which must reach the source's memory.
  auto reach = [&](int a, int b) {
    return !spec.peer || can_access(spec.engine == Engine::sm ? b : a, spec.engine == Engine::sm ? a : b);
  };
  for_each_pair(ctx, true, reach, [&](CasePart& part, int a, int b) {
    set_peer(a, b, spec.peer);
    one_way_part(ctx, spec, sides[a], sides[b], bytes, part, mat[pos.at(a)][pos.at(b)]);
  });
  ctx.analysis()["p2p"][spec.test == Test::latency ? "latency_us" : "bandwidth_gbps"][case_name(spec)] = mat;
}

// Both directions of every pair at once: a->b and b->a on two streams, started together; a
// sample is the host's time until both are done, each direction's rate from its own events.
void run_bidir(CaseContext& ctx, const Spec& spec) {
  const auto pos = describe(ctx);
  Sides sides(ctx, spec.bytes);
  json mat = matrix(pos.size());
  auto reach = [&](int a, int b) { return !spec.peer || (can_access(a, b) && can_access(b, a)); };
  for_each_pair(ctx, false, reach, [&](CasePart& part, int a, int b) {
    set_peer(a, b, spec.peer);
    const double total = both_ways_part(ctx, spec, sides[a], sides[b], part);
    mat[pos.at(a)][pos.at(b)] = total;
    mat[pos.at(b)][pos.at(a)] = total;
  });
  ctx.analysis()["p2p"]["bandwidth_gbps"][case_name(spec)] = mat;
}

}  // namespace nb::p2p
