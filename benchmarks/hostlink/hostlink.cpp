// Host link: host-to-device, device-to-host and both at once, from pinned (on the GPU's NUMA
// node), pageable and write-combined memory, by the copy engines (cudaMemcpyAsync) and by SM
// kernels over mapped pinned memory; per GPU, and all GPUs at once. Each result carries the
// link's theoretical bandwidth from its PCIe generation and width, read while the link is busy.
#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include "bench/benchmark.hpp"
#include "bench/cost.hpp"
#include "base/json_fields.hpp"
#include "base/text.hpp"
#include "bench/validate_values.hpp"
#include "node/host_memory.hpp"
#include "kernels/common/kernels.cuh"
#include "base/resources.hpp"
#include "base/stats.hpp"
#include "base/verify.hpp"
#include "hostlink_metrics.hpp"

namespace nb {
namespace {

using nlohmann::json;

HostMemKind parse_kind(const std::string& m) {
  if (m == "pinned") return HostMemKind::pinned;
  if (m == "pageable") return HostMemKind::pageable;
  return HostMemKind::write_combined;
}

// Link width and generation read now (the link is busy or just was), as metrics.
void add_link(CaseContext& ctx, double gbps) {
  const GpuInfo& g = ctx.gpu();
  PcieLink l = g.nvml_index ? ctx.nvml().pcie(*g.nvml_index) : PcieLink{};
  if (!l.gen_current) l = g.pcie;
  if (l.gen_current && l.width_current) {
    if (auto theo = pcie_gbps(*l.gen_current, *l.width_current)) {
      ctx.metric(hostlink::kLinkGbps, *theo);
      ctx.metric(hostlink::kLinkPct, 100.0 * gbps / *theo);
    }
    ctx.details()["link"] = {{"gen", *l.gen_current}, {"width", *l.width_current},
                             {"gen_max", l.gen_max ? json(*l.gen_max) : json(nullptr)},
                             {"width_max", l.width_max ? json(*l.width_max) : json(nullptr)}};
  }
}

// The source pattern: word i of every buffer. Made on the GPU (kernels::launch_fill_words), so
// that a case's setup does not spend a host core's second on writing 1 GiB -- a cost that varied
// with the host from run to run -- and checked on the host from this formula.
constexpr uint32_t kWordMul = 2654435761u, kWordXor = 0xA5A5A5A5u;
uint32_t host_word(size_t i) { return uint32_t(i) * kWordMul ^ kWordXor; }

void fill_device(void* dev, size_t bytes, cudaStream_t st) {
  kernels::launch_fill_words(st, static_cast<uint32_t*>(dev), bytes / 4, kWordMul, kWordXor);
  NB_CUDA_LAUNCH();
  NB_CUDA(cudaStreamSynchronize(st));
}

// A host buffer with the pattern: made in `dev` (which then holds it too) and copied over.
void fill_host(void* host, void* dev, size_t bytes, cudaStream_t st) {
  fill_device(dev, bytes, st);
  NB_CUDA(cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost));
}

std::string check_words(const void* host_or_null, const void* dev_or_null, size_t bytes) {
  return compare_sampled_words(
      int64_t(bytes / 4), 0x1234ull, [](int64_t i) { return host_word(size_t(i)); },
      [&](int64_t i) {
        uint32_t v = 0;
        if (dev_or_null)
          NB_CUDA(cudaMemcpy(&v, static_cast<const uint32_t*>(dev_or_null) + i, 4, cudaMemcpyDeviceToHost));
        else
          v = static_cast<const uint32_t*>(host_or_null)[i];
        return v;
      },
      "wrong");
}

// Copies whose times vary by more than the target CV, so that whether they converge at the
// minimum samples or sample to the cap flips from run to run (and with it their cost, 10x): they
// always sample to the cap (MeasureConfig::to_cap). Pageable copies (staged through the driver's
// buffers by a host core), both directions at once (two streams contending), and copy-engine
// copies shorter than kSteadyCopyS at the link's rate. In the calibration run
// (results/h200/2026-12-02-full-suite-4/calibrate.json.gz) every copy-engine copy of 1 MiB (17 us)
// or less ran to 2,000 samples, every one of 4 MiB (66 us) or more converged at 10 samples,
// pageable copies of 16 MiB or more and both-way copies of 256 MiB or more stopped at the time cap;
// in three quick runs the 1 MiB copies converged at 10 in two of six and ran to 2,000 in four.
constexpr double kSteadyCopyS = 50e-6;
double copy_s(const GpuInfo& g, double bytes) { return bytes / 1e9 / link_gbps(g); }
bool samples_to_cap(const std::string& dir, const std::string& memory, const std::string& engine, double op_s) {
  return memory == "pageable" || dir == "bidir" || (engine != "sm" && op_s < kSteadyCopyS);
}

// After a family that let go of most of the GPU's memory (the training step's largest batches),
// the copy engines stay busy for a while: in two of four full runs on an H200 the first pinned
// copies of 4-256 KiB took 95-180 us instead of 3-9 us (0.04 GB/s at 4 KiB) for about 0.15 s, and
// their figures were 30x low (results/h200/2026-12-02-full-suite-4/full.json.gz). So the family's
// first case on a GPU first waits until 256 KiB copies run at kQuietLinkShare of the link's rate
// or better (normal: about half; in that state: 2%), at most kQuietLinkWaitS, and says so.
constexpr double kQuietLinkShare = 0.10, kQuietLinkWaitS = 3.0;
double wait_for_quiet_link(const GpuInfo& g, cudaStream_t st) {
  const size_t bytes = size_t(256) << 10;
  PinnedBuffer host(bytes, cudaHostAllocPortable);
  DeviceBuffer dev(bytes);
  Event a, b;
  const auto t0 = std::chrono::steady_clock::now();
  auto waited = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  for (;;) {
    std::vector<double> t;
    for (int i = 0; i < 10; ++i) {
      a.record(st);
      NB_CUDA(cudaMemcpyAsync(dev.get(), host.get(), bytes, cudaMemcpyHostToDevice, st));
      b.record(st);
      NB_CUDA(cudaEventSynchronize(b.get()));
      t.push_back(b.seconds_since(a));
    }
    const double gbps = double(bytes) / 1e9 / compute_stats(t).median;
    if (gbps >= kQuietLinkShare * link_gbps(g) || waited() >= kQuietLinkWaitS) return waited();
  }
}

// The family's host buffers, kept from one case to the next on this GPU while its cases run
// (ctx.family_resources()): page-locking 1 GiB took 0.5-1 s a case, more than its copies, and
// varied from run to run. Each (kind, slot) keeps its largest buffer; released when a case of
// another family runs on the GPU. Made by the family's first case there, after the quiet-link wait,
// which that case's details record (quiet_link_wait_s).
struct HostLinkState {
  HostBufferPool pool;
  std::optional<double> quiet_wait_s;  // until the first case has recorded it
};
HostBufferPool& host_pool(CaseContext& ctx) {
  HostLinkState& st = ctx.family_resources().get<HostLinkState>([&] {
    auto made = std::make_unique<HostLinkState>();
    made->quiet_wait_s = wait_for_quiet_link(ctx.gpu(), ctx.stream());
    return made;
  });
  if (st.quiet_wait_s) ctx.details()["quiet_link_wait_s"] = *std::exchange(st.quiet_wait_s, std::nullopt);
  return st.pool;
}

void run_one_way(CaseContext& ctx, const std::string& dir, const std::string& memory, const std::string& engine,
                 size_t bytes) {
  const GpuInfo& g = ctx.gpu();
  const HostMemKind kind = parse_kind(memory);
  const auto node = gpu_numa_node(g.pci_bus_id);
  HostBuffer& host = host_pool(ctx).get(kind, 0, bytes, kind == HostMemKind::pinned ? node : std::nullopt);
  DeviceBuffer dev(bytes);
  if (samples_to_cap(dir, memory, engine, copy_s(g, double(bytes)))) ctx.mutable_config().to_cap = true;
  const bool h2d = dir == "h2d";
  // The source holds the pattern in both directions, so both verify the same way.
  if (h2d) fill_host(host.get(), dev.get(), bytes, ctx.stream());
  else fill_device(dev.get(), bytes, ctx.stream());
  if (kind == HostMemKind::pageable) ctx.mutable_config().timer = Timer::host;
  std::function<void(cudaStream_t)> launch;
  if (engine == "ce") {
    launch = [&, h2d](cudaStream_t st) {
      if (h2d) NB_CUDA(cudaMemcpyAsync(dev.get(), host.get(), bytes, cudaMemcpyHostToDevice, st));
      else NB_CUDA(cudaMemcpyAsync(host.get(), dev.get(), bytes, cudaMemcpyDeviceToHost, st));
    };
  } else {
    const unsigned blocks = unsigned(g.sm_count) * 4, threads = 256;
    launch = [&, h2d, blocks](cudaStream_t st) {
      if (h2d) kernels::launch_sm_copy(st, host.device_ptr(), dev.get(), bytes / 16, blocks, threads);
      else kernels::launch_sm_copy(st, dev.get(), host.device_ptr(), bytes / 16, blocks, threads);
      NB_CUDA_LAUNCH();
    };
  }
  ctx.measure(launch);
  ctx.set_throughput(hostlink::kGbps, double(bytes) / 1e9, "");
  const Stats s = compute_stats(ctx.output().measurement->samples_s);
  add_link(ctx, double(bytes) / 1e9 / s.median);
  ctx.details()["numa_node"] = host.bound_node() ? json(*host.bound_node()) : json(nullptr);
  ctx.details()["timer"] = kind == HostMemKind::pageable ? "host clock (pageable copies are staged by the driver)"
                                                         : "cuda events";
  // Verify: clear the destination, copy once more, compare sampled words.
  if (h2d) NB_CUDA(cudaMemset(dev.get(), 0, bytes));
  else std::memset(host.get(), 0, bytes);
  launch(ctx.stream());
  NB_CUDA(cudaStreamSynchronize(ctx.stream()));
  const std::string err = h2d ? check_words(nullptr, dev.get(), bytes) : check_words(host.get(), nullptr, bytes);
  ctx.details()["verification"] = {{"method", "64 sampled 32-bit words of a position-dependent pattern"}, {"ok", err.empty()}};
  if (!err.empty()) ctx.wrong(err);
}

// Both directions at once on two streams; each direction timed from a common start event.
void run_bidir(CaseContext& ctx, size_t bytes) {
  const GpuInfo& g = ctx.gpu();
  const auto node = gpu_numa_node(g.pci_bus_id);
  HostBufferPool& pool = host_pool(ctx);
  HostBuffer& hsrc = pool.get(HostMemKind::pinned, 0, bytes, node);
  HostBuffer& hdst = pool.get(HostMemKind::pinned, 1, bytes, node);
  DeviceBuffer dsrc(bytes), ddst(bytes);
  ctx.mutable_config().to_cap = samples_to_cap("bidir", "pinned", "ce", copy_s(g, 2.0 * double(bytes)));
  fill_host(hsrc.get(), dsrc.get(), bytes, nullptr);  // both sources hold the pattern
  Stream a, b;
  Event start, end_h2d, end_d2h;
  std::vector<double> t_h2d, t_d2h;
  double pair_s = 0;
  auto once = [&](bool keep) {
    start.record(a.get());
    NB_CUDA(cudaStreamWaitEvent(b.get(), start.get(), 0));
    NB_CUDA(cudaMemcpyAsync(ddst.get(), hsrc.get(), bytes, cudaMemcpyHostToDevice, a.get()));
    NB_CUDA(cudaMemcpyAsync(hdst.get(), dsrc.get(), bytes, cudaMemcpyDeviceToHost, b.get()));
    end_h2d.record(a.get());
    end_d2h.record(b.get());
    NB_CUDA(cudaEventSynchronize(end_h2d.get()));
    NB_CUDA(cudaEventSynchronize(end_d2h.get()));
    if (!keep) return;
    t_h2d.push_back(end_h2d.seconds_since(start));
    t_d2h.push_back(end_d2h.seconds_since(start));
    pair_s = std::max(t_h2d.back(), t_d2h.back());
  };
  ctx.set_measurement(warm_then_sample(ctx.config(), 3, [&](bool keep) {
    once(keep);
    return pair_s;
  }));
  const double h2d_gbps = double(bytes) / 1e9 / compute_stats(t_h2d).median;
  const double d2h_gbps = double(bytes) / 1e9 / compute_stats(t_d2h).median;
  ctx.metric(hostlink::kH2dGbps, h2d_gbps);
  ctx.metric(hostlink::kD2hGbps, d2h_gbps);
  ctx.metric(hostlink::kSumGbps, h2d_gbps + d2h_gbps);  // as tools that report each direction add them
  ctx.set_throughput(hostlink::kGbps, 2.0 * double(bytes) / 1e9, "");
  add_link(ctx, std::max(h2d_gbps, d2h_gbps));
  ctx.details()["note"] = "h2d_gbps and d2h_gbps: each direction while both run (its own events); sum_gbps their sum; "
                          "gbps counts both directions over the time until both are done; link_pct is the faster "
                          "direction against one direction's theoretical";
  std::memset(hdst.get(), 0, bytes);
  NB_CUDA(cudaMemset(ddst.get(), 0, bytes));
  once(false);
  std::string err = check_words(nullptr, ddst.get(), bytes);
  if (err.empty()) err = check_words(hdst.get(), nullptr, bytes);
  ctx.details()["verification"] = {{"method", "64 sampled words each way"}, {"ok", err.empty()}};
  if (!err.empty()) ctx.wrong(err);
}

// Host-to-device on every selected GPU at once: the aggregate, and each GPU's share.
void run_all_gpus(CaseContext& ctx, size_t bytes) {
  struct PerGpu {
    int index;
    std::unique_ptr<HostBuffer> host;
    std::unique_ptr<DeviceBuffer> dev;
    std::unique_ptr<Stream> stream;
    std::unique_ptr<Event> e0, e1;
    std::vector<double> times;
  };
  std::vector<PerGpu> per;
  for (const GpuInfo* g : ctx.gpus()) {
    DeviceGuard guard(g->index);
    PerGpu p;
    p.index = g->index;
    p.host = std::make_unique<HostBuffer>(HostMemKind::pinned, bytes, gpu_numa_node(g->pci_bus_id));
    p.dev = std::make_unique<DeviceBuffer>(bytes);
    fill_host(p.host->get(), p.dev->get(), bytes, nullptr);
    NB_CUDA(cudaMemset(p.dev->get(), 0, bytes));  // the copies, not the fill, must put the pattern there
    p.stream = std::make_unique<Stream>();
    p.e0 = std::make_unique<Event>();
    p.e1 = std::make_unique<Event>();
    per.push_back(std::move(p));
  }
  double wall = 0;
  auto once = [&](bool keep) {
    const auto h0 = std::chrono::steady_clock::now();
    for (auto& p : per) {
      DeviceGuard guard(p.index);
      p.e0->record(p.stream->get());
      NB_CUDA(cudaMemcpyAsync(p.dev->get(), p.host->get(), bytes, cudaMemcpyHostToDevice, p.stream->get()));
      p.e1->record(p.stream->get());
    }
    for (auto& p : per) NB_CUDA(cudaEventSynchronize(p.e1->get()));
    wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - h0).count();
    if (!keep) return;
    for (auto& p : per) p.times.push_back(p.e1->seconds_since(*p.e0));
  };
  ctx.set_measurement(warm_then_sample(ctx.config(), 3, [&](bool keep) {
    once(keep);
    return wall;
  }));
  ctx.set_throughput(hostlink::kGbps, double(bytes) * double(per.size()) / 1e9, "");
  json shares = json::object();
  for (auto& p : per) {
    const double gbps = double(bytes) / 1e9 / compute_stats(p.times).median;
    ctx.metric(hostlink::kGpuGbps, std::to_string(p.index), gbps);
  }
  ctx.details()["timer"] = "aggregate: host clock over all GPUs; per GPU: that GPU's events";
  std::string err;
  for (auto& p : per) {
    DeviceGuard guard(p.index);
    if (err.empty()) err = check_words(nullptr, p.dev->get(), bytes);
  }
  if (!err.empty()) ctx.wrong(err);
}

// What `nodebench validate` judges of this family: pinned copies each way through the copy engine
// at the largest size, against the PCIe rate of the GPU's maximum link (or in GB/s).
std::vector<ValidationCheck> hostlink_checks() {
  static const char* const kFix =
      "Host-device bandwidth is low: see pcie.link (a link trained at lower width or generation), run the copy "
      "from the GPU's NUMA node (numactl --cpunodebind=N --membind=N), check p2p.iommu (a translating IOMMU slows "
      "DMA), and the BIOS PCIe settings (link speed, max payload size).";
  std::vector<ValidationCheck> out;
  for (const std::string d : {"h2d", "d2h"}) {
    ValidationCheck c = gpu_check("hostlink." + d, "pinned " + d, kFix, 2);
    c.runs_case = [d](const Case& x) {
      return x.params.value("direction", "") == d && x.params.value("memory", "") == "pinned" &&
             x.params.value("engine", "ce") == "ce";
    };
    c.judges = [d](const json& r) {
      const json& p = jf::at(r, "params");
      return jf::str_or(p, "direction") == d && jf::str_or(p, "memory") == "pinned" && jf::str_or(p, "engine", "ce") == "ce";
    };
    c.value = [](const json& r, const CheckInput& in, std::string& how) -> std::optional<double> {
      const double gbps = hostlink::kGbps.of(r).value_or(NAN);
      if (!std::isfinite(gbps)) return std::nullopt;
      if (in.unit == "gbps") {
        how = fmt(gbps, 1) + " GB/s";
        return gbps;
      }
      const double bytes = jf::num_or(jf::at(r, "params"), "bytes", 0);
      const std::string size = bytes > 0 ? fmt(bytes / double(1 << 20), 0) + " MiB, " : "";
      const auto link_pct = hostlink::kLinkPct.of(r);
      if (auto link = max_link_gbps(in.environment, in.gpu, &r); link && *link > 0) {
        how = size + fmt(gbps, 1) + " GB/s of " + fmt(*link, 1) + " GB/s (the PCIe rate at the GPU's maximum generation and width)";
        if (link_pct) how += "; " + fmt(*link_pct, 1) + "% of the link as trained";
        return 100.0 * gbps / *link;
      }
      if (link_pct) {
        how = size + fmt(gbps, 1) + " GB/s, " + fmt(*link_pct, 1) + "% of the link as trained (its maximum is unknown)";
        return *link_pct;
      }
      return std::nullopt;
    };
    out.push_back(c);
  }
  return out;
}

// One copy of the quick suite's lists: memory, engine, size (and the direction, where given), named
// as the full suite's cases are.
AxisValue copy_value(const std::string& memory, const std::string& engine, int64_t bytes, const std::string& dir = "") {
  AxisValue v{{{"memory", memory}, {"engine", engine}, {"bytes", bytes}}, memory + "/" + engine + "/" + bytes_label(bytes)};
  if (!dir.empty()) {
    v.params["direction"] = dir;
    v.label = dir + "/" + v.label;
  }
  return v;
}

// The cost model (bench/cost.hpp): the host buffer allocated and touched (page-locked for pinned
// and write-combined memory) at an assumed kHostTouchGbps -- paid by the case that first needs a
// buffer that large (host_pool), but a case's cost cannot know the order, so the fit per memory
// kind scales it --, then the copies at the link's rate from its generation and width (both ways
// at once: twice the bytes). Copies that sample to the cap (samples_to_cap) cost
// sampling_to_cap_s.
constexpr double kHostTouchGbps = 5;
CaseCost hostlink_cost(const CostInput& in, const std::string& dir, const std::string& memory, const std::string& engine,
                       size_t bytes) {
  const double gpus = dir == "h2d_all_gpus" ? double(in.gpus) : 1.0;
  const double moved = double(bytes) * (dir == "bidir" ? 2.0 : 1.0) * gpus;
  const double op = copy_s(in.gpu, moved);
  const bool to_cap = samples_to_cap(dir, memory, engine, op);
  CaseCost k;
  k.kind = "hostlink/" + memory;
  k.setup_s = moved / 1e9 / kHostTouchGbps + op;  // allocate and touch, one verifying copy
  k.sample_s = to_cap ? sampling_to_cap_s(in.cfg, op) : sampling_s(in.cfg, op);
  return k;
}

void fill_case(const AxisPoint& p, Case& c) {
  const std::string dir = p.str("direction"), memory = p.str("memory"), engine = p.str("engine");
  const size_t bytes = size_t(p.int64("bytes"));
  c.l2 = L2Mode::hot;
  c.cost = [dir, memory, engine, bytes](const CostInput& in) { return hostlink_cost(in, dir, memory, engine, bytes); };
  // On a node of several GPUs what is the host's runs on the first GPU only: copies under 256 MiB
  // (bound by the driver's and the host's latency, not by a GPU's link) and the pageable and
  // write-combined copies (the host's memory path: staging through pageable memory, uncached
  // writes). Each GPU's own link is measured by the large pinned copies, on every GPU.
  c.first_gpu_only = bytes < (size_t(256) << 20) || memory != "pinned";
  if (dir == "bidir") {
    c.run = [bytes](CaseContext& ctx) { run_bidir(ctx, bytes); };
  } else if (dir == "h2d_all_gpus") {
    c.multi_gpu = true;
    c.min_gpus = 2;
    c.run = [bytes](CaseContext& ctx) { run_all_gpus(ctx, bytes); };
  } else {
    c.run = [dir, memory, engine, bytes](CaseContext& ctx) { run_one_way(ctx, dir, memory, engine, bytes); };
  }
}

class HostLinkFamily : public Family {
 public:
  std::string name() const override { return "hostlink"; }
  // Its cases contend for the host link and host memory, which every GPU of the node shares: one GPU at a time.
  bool shares_host() const override { return true; }
  std::string description() const override {
    return "Host<->device bandwidth: pinned/pageable/write-combined, copy engine and SM copies, both ways, all GPUs";
  }
  // Params direction, memory, engine, bytes; name <direction>/<memory>/<engine>/<size>.
  std::vector<Case> cases(Suite suite) const override {
    const int64_t KiB = 1024, MiB = KiB * 1024, GiB = MiB * 1024;
    std::vector<Case> out;
    if (suite == Suite::quick) {
      std::vector<AxisValue> one_way;
      for (int64_t b : {64 * KiB, 1 * MiB, 16 * MiB, 256 * MiB, 1 * GiB}) one_way.push_back(copy_value("pinned", "ce", b));
      one_way.push_back(copy_value("pageable", "ce", 1 * GiB));
      one_way.push_back(copy_value("pinned", "sm", 256 * MiB));
      append_cases(out, Axes().add_string("direction", {"h2d", "d2h"}).add_values("copy", one_way).cases("hostlink", fill_case));
      append_cases(out, Axes()
                            .add_values("copy", {copy_value("write_combined", "ce", 1 * GiB, "h2d"),
                                                 copy_value("pinned", "ce", 256 * MiB, "bidir"),
                                                 copy_value("pinned", "ce", 256 * MiB, "h2d_all_gpus")})
                            .cases("hostlink", fill_case));
      return out;
    }
    std::vector<int64_t> sizes;
    for (int64_t b = 4 * KiB; b <= GiB; b *= 4) sizes.push_back(b);
    append_cases(out, Axes()
                          .add_string("direction", {"h2d", "d2h"})
                          .add_string("memory", {"pinned", "pageable", "write_combined"})
                          .add_bytes("bytes", sizes)
                          .add_string("engine", {"ce", "sm"})
                          .where([MiB](const AxisPoint& p) {
                            return p.str("engine") == "ce" || (p.str("memory") != "pageable" && p.int64("bytes") >= MiB);
                          })
                          .name("{direction}/{memory}/{engine}/{bytes}")
                          .cases("hostlink", fill_case));
    append_cases(out, Axes()
                          .add_string("direction", {"bidir"})
                          .add_string("memory", {"pinned"})
                          .add_string("engine", {"ce"})
                          .add_bytes("bytes", {1 * MiB, 16 * MiB, 256 * MiB, 1 * GiB})
                          .cases("hostlink", fill_case));
    append_cases(out, Axes().add_values("copy", {copy_value("pinned", "ce", 1 * GiB, "h2d_all_gpus")}).cases("hostlink", fill_case));
    return out;
  }
  std::vector<ValidationCheck> validation_checks() const override { return hostlink_checks(); }
};

const Registrar registrar(std::make_unique<HostLinkFamily>());
NB_REGISTER_METRICS("hostlink", {hostlink::kGbps, hostlink::kLinkGbps, hostlink::kLinkPct, hostlink::kH2dGbps,
                                 hostlink::kD2hGbps, hostlink::kSumGbps, hostlink::kGpuGbps});

}  // namespace
}  // namespace nb
