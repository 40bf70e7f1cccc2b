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
#include "p2p_spec.hpp"

#include "bench/benchmark.hpp"
#include "bench/cost.hpp"
#include "bench/settings.hpp"

namespace nb::p2p {

bool loopback_hook(const Settings& s) { return s.flag("NODEBENCH_P2P_LOOPBACK"); }

namespace {

const SettingRegistrar kLoopback({"NODEBENCH_P2P_LOOPBACK", SettingKind::flag, "p2p_loopback", false, 0, false,
                                  "=0|1 with one GPU, copy the GPU to itself (default 0)", "p2p"});

// The cost model (bench/cost.hpp): every ordered pair one way, or every pair both ways, copies
// at the host link's rate (NVLink is faster: the estimate errs long), verified once; a latency is
// one 4-byte copy a sample. Fewer GPUs than it needs: skipped at once.
CaseCost p2p_cost(const CostInput& in, const Spec& s, int min_gpus) {
  CaseCost k;
  k.kind = "p2p";
  if (in.gpus < min_gpus) return k;
  const double n = double(in.gpus);
  const bool bidir = s.mode == Mode::bidir;
  const double pairs = in.gpus == 1 ? 1.0 : bidir ? n * (n - 1) / 2 : n * (n - 1);
  const double bytes = double(s.bytes) * (bidir ? 2.0 : 1.0);
  const double op = s.test == Test::latency ? 5e-6 : bytes / 1e9 / link_gbps(in.gpu);
  k.setup_s = pairs * 2 * op;
  k.sample_s = pairs * (s.test == Test::latency ? one_op_sampling_s(in.cfg, op) : sampling_s(in.cfg, op));
  return k;
}

class P2pFamily : public Family {
 public:
  std::string name() const override { return "p2p"; }
  std::string description() const override {
    return "GPU peer-to-peer: access matrix and link types, bandwidth one way and both ways, peer access on and "
           "off, copy engine and SM copies, latency";
  }
  // Params test, mode, peer, engine, bytes; names <mode>/<peer>/<engine>/<size> and
  // latency/<peer>/<engine>. A peer-off SM copy is no case (a kernel cannot read a peer's memory
  // without peer access); both ways by SM copies only in the full suite.
  std::vector<Case> cases(Suite suite) const override {
    const int64_t MiB = int64_t(1) << 20, GiB = MiB * 1024;
    const bool full = suite == Suite::full;
    const std::vector<int64_t> one_way = full ? std::vector<int64_t>{1 * MiB, 16 * MiB, 256 * MiB, 1 * GiB}
                                              : std::vector<int64_t>{256 * MiB};
    const std::vector<int64_t> bidir = full ? std::vector<int64_t>{256 * MiB, 1 * GiB} : std::vector<int64_t>{256 * MiB};
    auto copies = [&](const char* mode, const std::vector<int64_t>& sizes, bool sm_both_ways) {
      return Axes()
          .set("test", "bandwidth")
          .add_string("mode", {mode})
          .add_bytes("bytes", sizes)
          .add_string("engine", {"ce", "sm"})
          .add_string("peer", {"enabled", "disabled"})
          .where([sm_both_ways](const AxisPoint& p) {
            return p.str("engine") == "ce" || (p.str("peer") == "enabled" && sm_both_ways);
          })
          .name("{mode}/{peer}/{engine}/{bytes}");
    };
    const Axes latency = Axes()
                             .add_string("test", {"latency"})
                             .set("mode", "one_way")
                             .add_values("bytes", {{{{"bytes", 4}}, ""}})
                             .add_string("engine", {"ce"})
                             .add_string("peer", {"enabled", "disabled"})
                             .name("{test}/{peer}/{engine}");
    const int min_gpus = loopback_hook(current_settings()) ? 1 : 2;  // listed before any case context exists
    auto fill = [min_gpus](const AxisPoint& p, Case& c) {
      const Spec s = Spec::of(p);
      c.l2 = L2Mode::hot;
      c.multi_gpu = true;
      c.min_gpus = min_gpus;
      if (s.mode == Mode::bidir) c.run = [s](CaseContext& ctx) { run_bidir(ctx, s); };
      else c.run = [s](CaseContext& ctx) { run_one_way(ctx, s); };
      c.cost = [s, min_gpus](const CostInput& in) { return p2p_cost(in, s, min_gpus); };
    };
    std::vector<Case> out = copies("one_way", one_way, true).cases("p2p", fill);
    append_cases(out, copies("bidir", bidir, full).cases("p2p", fill));
    append_cases(out, latency.cases("p2p", fill));
    return out;
  }
  std::vector<ValidationCheck> validation_checks() const override { return p2p_checks(); }
};

const Registrar registrar(std::make_unique<P2pFamily>());
NB_REGISTER_METRICS("p2p", {kGbps, kLatencyMetric, kP90Latency, kFwdGbps, kRevGbps, kSumGbps, kWallGbps});

}  // namespace
}  // namespace nb::p2p
