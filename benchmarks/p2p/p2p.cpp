// Peer-to-peer between the GPUs of one host: which pairs can reach each other's memory
// (cudaDeviceCanAccessPeer) beside how NVML says they are linked (NVLink, PIX, PXB, PHB, NODE,
// SYS); bandwidth of every ordered pair one way and of every pair both ways at once, with
// peer access enabled and disabled (then the driver stages the copy through host memory);
// by the copy engines (cudaMemcpyPeerAsync, pushed by the source GPU) and by SM copies (a
// kernel on the destination GPU reading the source GPU's memory); and the latency of a 4-byte
// copy. One record per pair (a part of the case: "<case>/gpu<src>-gpu<dst>"), the matrices in
// the result's analysis.p2p. Needs two GPUs in the process: with one, every case is skipped.
// NODEBENCH_P2P_LOOPBACK=1 (a test hook) lets one GPU run every case with itself as the peer
// (device-to-device copies through the same code), so the family's path is tested on one GPU.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

#include "bench/benchmark.hpp"
#include "base/json_fields.hpp"
#include "base/text.hpp"
#include "bench/validate_values.hpp"
#include "bench/settings.hpp"
#include "shared/nccl/collectives.hpp"
#include "kernels/common/kernels.cuh"
#include "base/resources.hpp"
#include "base/stats.hpp"
#include "node/topology.hpp"
#include "base/verify.hpp"

namespace nb {
namespace {

using nlohmann::json;

struct Spec {
  std::string test;    // bandwidth | latency
  std::string mode;    // one_way | bidir
  bool peer = true;    // peer access enabled
  std::string engine;  // ce | sm
  size_t bytes = 0;
};

std::string case_name(const Spec& s) {
  const std::string peer = s.peer ? "enabled" : "disabled";
  if (s.test == "latency") return "latency/" + peer + "/" + s.engine;
  return s.mode + "/" + peer + "/" + s.engine + "/" + coll::size_name(s.bytes);
}

std::string pair_name(int a, int b) { return "gpu" + std::to_string(a) + "-gpu" + std::to_string(b); }

const SettingRegistrar kLoopback({"NODEBENCH_P2P_LOOPBACK", SettingKind::flag, "p2p_loopback", false, 0, false,
                                  "=0|1 with one GPU, copy the GPU to itself (default 0)", "p2p"});
bool loopback_hook() { return current_settings().flag("NODEBENCH_P2P_LOOPBACK"); }

// The pairs of a case: ordered (one way) or unordered (both ways) pairs of distinct GPUs; with
// the loopback hook and one GPU, the GPU with itself.
std::vector<std::pair<int, int>> pairs_of(const CaseContext& ctx, bool ordered) {
  std::vector<std::pair<int, int>> out;
  const auto& g = ctx.gpus();
  if (g.size() == 1 && loopback_hook()) return {{g[0]->index, g[0]->index}};
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
  const auto pos = sample_positions(int64_t(bytes / 4), 1, 64, 0x5eedull);
  size_t bad = 0;
  std::ostringstream first;
  for (const auto& [i, j] : pos) {
    (void)j;
    uint32_t a = 0, b = 0;
    NB_CUDA(cudaMemcpy(&a, static_cast<const uint32_t*>(src) + i, 4, cudaMemcpyDefault));
    NB_CUDA(cudaMemcpy(&b, static_cast<const uint32_t*>(dst) + i, 4, cudaMemcpyDefault));
    if (a != b) {
      if (!bad) first << "word " << i << " = " << b << ", expected " << a;
      ++bad;
    }
  }
  if (!bad) return "";
  std::ostringstream os;
  os << bad << " of " << pos.size() << " sampled words differ from the source; first: " << first.str();
  return os.str();
}

// One copy of `bytes` from a's source to b's destination, enqueued on `st`.
void copy_once(cudaStream_t st, GpuSide& a, GpuSide& b, size_t bytes, const std::string& engine) {
  if (engine == "ce") {
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

void run_one_way(CaseContext& ctx, const Spec& spec) {
  const auto pos = describe(ctx);
  const size_t bytes = spec.test == "latency" ? 4 : spec.bytes;
  Sides sides(ctx, std::max<size_t>(bytes, 16));
  json mat = matrix(pos.size());
  for (const auto& [a, b] : pairs_of(ctx, true)) {
    {
      const double t0 = now_s();
      CasePart part = pair_part(a, b);
      try {
        if (spec.peer && !can_access(spec.engine == "sm" ? b : a, spec.engine == "sm" ? a : b)) {
          skip_no_peer(part, a, b);
        } else {
          set_peer(a, b, spec.peer);
          GpuSide &sa = sides[a], &sb = sides[b];
          GpuSide& owner = spec.engine == "ce" ? sa : sb;  // the GPU whose stream carries the copy
          DeviceGuard guard(owner.id);
          MeasureConfig cfg = ctx.config();
          // Latency: one copy per sample, as the latency family times one operation per sample
          // (back-to-back copies would overlap and show a pipelined rate, not a latency).
          if (spec.test == "latency") cfg = one_op_per_sample(cfg);
          // Without peer access the driver stages the copy through the host: timed by the host
          // clock (what a caller waits), as the host link's pageable copies are.
          if (!spec.peer) cfg.timer = Timer::host;
          auto launch = [&](cudaStream_t st) { copy_once(st, sa, sb, bytes, spec.engine); };
          part.out.config = cfg;
          part.out.measurement = owner.measurer->measure(owner.stream->get(), launch, cfg);
          const double med = compute_stats(part.out.measurement->samples_s).median;
          if (spec.test == "latency") {
            part.out.metrics["latency_us"] = med * 1e6;
            part.out.metrics["p90_latency_us"] = compute_stats(part.out.measurement->samples_s).p90 * 1e6;
            mat[pos.at(a)][pos.at(b)] = med * 1e6;
          } else {
            part.out.throughput_metric = "gbps";
            part.out.work_per_launch = double(bytes) / 1e9;
            mat[pos.at(a)][pos.at(b)] = double(bytes) / 1e9 / med;
          }
          part.out.details = {{"peer_access", spec.peer},
                              {"loopback", a == b},
                              {"stream_gpu", owner.id},
                              {"timer", spec.peer ? "cuda events" : "host clock (staged through the host)"}};
          // Verify: clear the destination, copy once more, compare sampled words.
          {
            DeviceGuard gb_guard(b);
            NB_CUDA(cudaMemset(sb.dst.get(), 0, bytes));
          }
          launch(owner.stream->get());
          owner.stream->sync();
          const std::string err = compare_words(sa.src.get(), sb.dst.get(), bytes);
          record_verification(part, err, "64 sampled 32-bit words against the source");
        }
      } catch (const std::exception& e) {
        set_outcome(part, e);
      }
      finish_part(part, t0);
      ctx.add_part(std::move(part));
    }
  }
  ctx.analysis()["p2p"][spec.test == "latency" ? "latency_us" : "bandwidth_gbps"][case_name(spec)] = mat;
}

// Both directions of every pair at once: a->b and b->a on two streams, started together; a
// sample is the host's time until both are done, each direction's rate from its own events.
void run_bidir(CaseContext& ctx, const Spec& spec) {
  const auto pos = describe(ctx);
  const size_t bytes = spec.bytes;
  Sides sides(ctx, bytes);
  json mat = matrix(pos.size());
  for (const auto& [a, b] : pairs_of(ctx, false)) {
    {
      const double t0 = now_s();
      CasePart part = pair_part(a, b);
      try {
        if (spec.peer && (!can_access(a, b) || !can_access(b, a))) {
          skip_no_peer(part, a, b);
        } else {
          set_peer(a, b, spec.peer);
          GpuSide &sa = sides[a], &sb = sides[b];
          // ce: each source pushes; sm: each destination pulls.
          GpuSide& own_ab = spec.engine == "ce" ? sa : sb;
          GpuSide& own_ba = spec.engine == "ce" ? sb : sa;
          std::unique_ptr<Event> s_ab, e_ab, s_ba, e_ba;
          {
            DeviceGuard g(own_ab.id);
            s_ab = std::make_unique<Event>();
            e_ab = std::make_unique<Event>();
          }
          {
            DeviceGuard g(own_ba.id);
            s_ba = std::make_unique<Event>();
            e_ba = std::make_unique<Event>();
          }
          std::vector<double> t_ab, t_ba, t_wall;
          Measurement m;
          auto once = [&](bool keep) {
            const auto h0 = std::chrono::steady_clock::now();
            {
              DeviceGuard g(own_ab.id);
              s_ab->record(own_ab.stream->get());
              copy_once(own_ab.stream->get(), sa, sb, bytes, spec.engine);
              e_ab->record(own_ab.stream->get());
            }
            {
              DeviceGuard g(own_ba.id);
              s_ba->record(own_ba.stream->get());
              copy_once(own_ba.stream->get(), sb, sa, bytes, spec.engine);
              e_ba->record(own_ba.stream->get());
            }
            NB_CUDA(cudaEventSynchronize(e_ab->get()));
            NB_CUDA(cudaEventSynchronize(e_ba->get()));
            const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - h0).count();
            if (!keep) return;
            t_ab.push_back(e_ab->seconds_since(*s_ab));
            t_ba.push_back(e_ba->seconds_since(*s_ba));
            t_wall.push_back(wall);
            // The sample: each direction's own events, so that 2 x bytes over it is the sum of the
            // two directions' rates (the host's wall clock adds its wake-up and reads low).
            m.samples_s.push_back(both_ways_sample_s(t_ab.back(), t_ba.back()));
          };
          for (int i = 0; i < 3; ++i) once(false);
          m.warmup_runs = 3;
          const MeasureConfig& cfg = ctx.config();
          const auto start = std::chrono::steady_clock::now();
          while (true) {
            once(true);
            const Stats s = compute_stats(m.samples_s);
            const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            m.stop = should_stop(cfg, m.samples_s.size(), m.samples_s.size() > 1 ? s.cv : 1.0, el);
            if (m.stop != StopReason::none) break;
          }
          part.out.config = cfg;
          part.out.measurement = m;
          part.out.throughput_metric = "gbps";
          part.out.work_per_launch = 2.0 * double(bytes) / 1e9;
          const double fwd = double(bytes) / 1e9 / compute_stats(t_ab).median;
          const double rev = double(bytes) / 1e9 / compute_stats(t_ba).median;
          part.out.metrics["fwd_gbps"] = fwd;
          part.out.metrics["rev_gbps"] = rev;
          part.out.metrics["sum_gbps"] = fwd + rev;
          part.out.metrics["wall_gbps"] = 2.0 * double(bytes) / 1e9 / compute_stats(t_wall).median;
          const double total = 2.0 * double(bytes) / 1e9 / compute_stats(m.samples_s).median;
          mat[pos.at(a)][pos.at(b)] = total;
          mat[pos.at(b)][pos.at(a)] = total;
          part.out.details = {{"peer_access", spec.peer},
                              {"loopback", a == b},
                              {"timer", "fwd (src->dst) and rev (dst->src): each direction's CUDA events; a sample is "
                                        "2 / (1/t_fwd + 1/t_rev), so gbps is the sum of the two directions' rates; "
                                        "wall_gbps from the host clock until both are done"},
                              {"note", "gbps counts both directions: fwd_gbps + rev_gbps per sample; sum_gbps is the "
                                       "sum of the two directions' medians"}};
          {
            DeviceGuard g1(a);
            NB_CUDA(cudaMemset(sa.dst.get(), 0, bytes));
            DeviceGuard g2(b);
            NB_CUDA(cudaMemset(sb.dst.get(), 0, bytes));
          }
          once(false);
          std::string err = compare_words(sa.src.get(), sb.dst.get(), bytes);
          if (err.empty()) err = compare_words(sb.src.get(), sa.dst.get(), bytes);
          record_verification(part, err, "64 sampled 32-bit words each way");
        }
      } catch (const std::exception& e) {
        set_outcome(part, e);
      }
      finish_part(part, t0);
      ctx.add_part(std::move(part));
    }
  }
  ctx.analysis()["p2p"]["bandwidth_gbps"][case_name(spec)] = mat;
}

// What `nodebench validate` judges of this family: one-way copies with peer access on (the
// staged, peer-off copies measure the host path), one check per ordered pair, by link type.
std::vector<ValidationCheck> p2p_checks() {
  ValidationCheck c;
  c.id = "p2p.bandwidth";
  c.required_level = 3;
  c.min_gpus = 2;
  c.fix = "Peer bandwidth is low: see p2p.access, p2p.topology and p2p.iommu; on NVLink systems check "
          "nvidia-smi nvlink -s for inactive links and the fabric manager (nvidia-fabricmanager) on NVSwitch systems.";
  c.runs_case = [](const Case& x) {
    return x.params.value("test", "bandwidth") == "bandwidth" && x.params.value("mode", "one_way") == "one_way" &&
           x.params.value("peer", "enabled") == "enabled" && x.params.value("engine", "ce") == "ce";
  };
  c.node = [](const NodeCheckInput& in) {
    using jf::at;
    using jf::num_or;
    using jf::str_or;
    const json& doc = in.doc;
    const json& records = at(doc, "records");
    const json* env = &at(doc, "environment");
    auto usable = [](const json& r) {
      const json& p = at(r, "params");
      return str_or(r, "family") == "p2p" && at(p, "src").is_number() && at(p, "dst").is_number() &&
             str_or(p, "test", "bandwidth") == "bandwidth" && str_or(p, "mode", "one_way") == "one_way" &&
             str_or(p, "peer", "enabled") == "enabled" && str_or(p, "engine", "ce") == "ce";
    };
    std::set<std::pair<int, int>> pairs;
    for (const auto& r : records)
      if (usable(r)) {
        const int a = at(at(r, "params"), "src").get<int>(), b = at(at(r, "params"), "dst").get<int>();
        if (a != b) pairs.insert({a, b});
      }
    std::vector<Judgement> out;
    if (pairs.empty()) {
      Judgement j;
      j.id = "p2p.bandwidth";
      j.skip = "no one-way peer copy record in this run";
      out.push_back(j);
    }
    for (const auto& [s, d] : pairs) {
      Judgement j;
      j.record = largest_record(records, [&, s = s, d = d](const json& r) {
        return usable(r) && num_or(at(r, "params"), "src", -1) == s && num_or(at(r, "params"), "dst", -1) == d;
      });
      const std::string link = j.record ? link_class(doc, *j.record, {s, d}) : "pcie";
      j.id = "p2p." + link;
      j.gpu = s;
      j.peer = d;
      j.model_gpu = s;
      j.what = "p2p " + std::to_string(s) + "->" + std::to_string(d);
      const std::string unit = in.unit(j.id, s);
      j.value = [env, unit, link, s = s, d = d](const json& r, std::string& how) -> std::optional<double> {
        const double gbps = num_or(at(r, "metrics"), "gbps", NAN);
        if (!std::isfinite(gbps)) return std::nullopt;
        if (unit == "percent_of_link") {
          const auto a = max_link_gbps(*env, s), b = max_link_gbps(*env, d);
          if (!a || !b) return std::nullopt;
          const double l = std::min(*a, *b);
          how = fmt(gbps, 1) + " GB/s of " + fmt(l, 1) + " GB/s (the slower GPU's PCIe link), link " + link;
          return 100.0 * gbps / l;
        }
        how = fmt(gbps, 1) + " GB/s, link " + link;
        return gbps;
      };
      out.push_back(j);
    }
    return out;
  };
  return {c};
}

class P2pFamily : public Family {
 public:
  std::string name() const override { return "p2p"; }
  std::string description() const override {
    return "GPU peer-to-peer: access matrix and link types, bandwidth one way and both ways, peer access on and "
           "off, copy engine and SM copies, latency";
  }
  std::vector<Case> cases(Suite suite) const override {
    std::vector<Case> out;
    auto add = [&](Spec s) {
      Case c;
      c.family = "p2p";
      c.name = case_name(s);
      c.params = {{"test", s.test}, {"mode", s.mode}, {"peer", s.peer ? "enabled" : "disabled"},
                  {"engine", s.engine}, {"bytes", s.test == "latency" ? size_t(4) : s.bytes}};
      c.l2 = L2Mode::hot;
      c.multi_gpu = true;
      c.min_gpus = loopback_hook() ? 1 : 2;
      if (s.mode == "bidir") c.run = [s](CaseContext& ctx) { run_bidir(ctx, s); };
      else c.run = [s](CaseContext& ctx) { run_one_way(ctx, s); };
      out.push_back(std::move(c));
    };
    const size_t MiB = size_t(1) << 20, GiB = MiB * 1024;
    std::vector<size_t> sizes = {256 * MiB};
    if (suite == Suite::full) sizes = {1 * MiB, 16 * MiB, 256 * MiB, 1 * GiB};
    for (size_t b : sizes) {
      add({"bandwidth", "one_way", true, "ce", b});
      add({"bandwidth", "one_way", false, "ce", b});
      add({"bandwidth", "one_way", true, "sm", b});
    }
    for (size_t b : suite == Suite::full ? std::vector<size_t>{256 * MiB, 1 * GiB} : std::vector<size_t>{256 * MiB}) {
      add({"bandwidth", "bidir", true, "ce", b});
      add({"bandwidth", "bidir", false, "ce", b});
      if (suite == Suite::full) add({"bandwidth", "bidir", true, "sm", b});
    }
    add({"latency", "one_way", true, "ce", 4});
    add({"latency", "one_way", false, "ce", 4});
    return out;
  }
  std::vector<ValidationCheck> validation_checks() const override { return p2p_checks(); }
};

const Registrar registrar(std::make_unique<P2pFamily>());

}  // namespace
}  // namespace nb
