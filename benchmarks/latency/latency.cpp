// Latencies, in microseconds with their spread: a 4-byte copy each way (pinned), an empty
// kernel's launch-to-completion round trip, the host cost of one launch, and a stream
// synchronize on a stream with nothing left to do. Host-clock timings: a caller waits them.
#include "bench/benchmark.hpp"
#include "bench/cost.hpp"
#include "node/host_memory.hpp"
#include "kernels/common/kernels.cuh"
#include "base/resources.hpp"
#include "base/stats.hpp"
#include "latency_metrics.hpp"

namespace nb {
namespace {

void finish_latency(CaseContext& ctx) {
  const Stats s = compute_stats(ctx.output().measurement->samples_s);
  ctx.metric(kLatencyMetric, s.median * 1e6);
  ctx.metric(latency::kP90Latency, s.p90 * 1e6);
}

void run_latency(CaseContext& ctx, const std::string& what) {
  MeasureConfig& cfg = ctx.mutable_config();
  cfg = one_op_per_sample(cfg);
  cfg.timer = Timer::host;
  HostBuffer host(HostMemKind::pinned, 4096);
  DeviceBuffer dev(4096);
  if (what == "h2d_4b") {
    ctx.measure([&](cudaStream_t s) { NB_CUDA(cudaMemcpyAsync(dev.get(), host.get(), 4, cudaMemcpyHostToDevice, s)); });
  } else if (what == "d2h_4b") {
    ctx.measure([&](cudaStream_t s) { NB_CUDA(cudaMemcpyAsync(host.get(), dev.get(), 4, cudaMemcpyDeviceToHost, s)); });
  } else if (what == "launch_roundtrip") {
    ctx.measure([&](cudaStream_t s) {
      kernels::launch_empty(s);
      NB_CUDA_LAUNCH();
    });
  } else if (what == "launch_host") {
    // Batches of launches with one synchronize: the host's cost per launch.
    cfg.min_sample_s = 1.0;  // -> the largest batch
    ctx.measure([&](cudaStream_t s) { kernels::launch_empty(s); });
    NB_CUDA_LAUNCH();
  } else if (what == "sync_idle") {
    ctx.measure([&](cudaStream_t) {});  // the measurer synchronizes the idle stream
  }
  finish_latency(ctx);
  ctx.details()["timer"] = "host steady clock, including cudaStreamSynchronize";
}

class LatencyFamily : public Family {
 public:
  std::string name() const override { return "latency"; }
  // Its cases contend for the host CPU, whose clock times these round trips: one GPU at a time.
  bool shares_host() const override { return true; }
  std::string description() const override {
    return "Latencies: 4-byte H2D/D2H copies, kernel launch round trip and host cost, idle stream synchronize";
  }
  std::vector<Case> cases(Suite) const override {
    return Axes()
        .add_string("what", {"h2d_4b", "d2h_4b", "launch_roundtrip", "launch_host", "sync_idle"})
        .cases("latency", [](const AxisPoint& p, Case& c) {
          c.run = [what = p.str("what")](CaseContext& ctx) { run_latency(ctx, what); };
          // The cost model (bench/cost.hpp): one operation of about 10 us a sample.
          c.cost = [](const CostInput& in) {
            CaseCost k;
            k.kind = "latency";
            k.sample_s = one_op_sampling_s(in.cfg, 10e-6);
            return k;
          };
        });
  }
};

const Registrar registrar(std::make_unique<LatencyFamily>());
NB_REGISTER_METRICS("latency", {kLatencyMetric, latency::kP90Latency});

}  // namespace
}  // namespace nb
