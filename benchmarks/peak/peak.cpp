// Peak arithmetic: kernels that keep one unit busy (FP32 FFMA, FP16 HFMA2, BF16, FP64 DFMA,
// INT8 DP4A, INT32 IMAD, and the tensor cores through WMMA for FP16, BF16, TF32, INT8). Each
// result in TFLOPS or TOPS, against the theoretical rate at the SM clock measured inside the
// kernel (clock64 cycles over %globaltimer time), and against the device profile's figure.
#include <cmath>

#include "bench/benchmark.hpp"
#include "kernels/peak/peak_kernels.cuh"
#include "base/resources.hpp"

namespace nb {
namespace {

using kernels::PeakUnit;
using nlohmann::json;

struct UnitInfo {
  const char* name;
  PeakUnit unit;
  const char* metric;    // tflops or tops
  const char* peak_key;  // device profile key, "" for none
  const char* what;      // what the GPU lacks when it cannot run
};
const UnitInfo kUnits[] = {
    {"fp32_ffma", PeakUnit::ffma, "tflops", "fp32_tflops", ""},
    {"fp16_hfma2", PeakUnit::hfma2, "tflops", "fp16_tflops", "FP16 arithmetic (compute capability 5.3 or newer)"},
    {"bf16_fma2", PeakUnit::bf16fma2, "tflops", "", "BF16 arithmetic (compute capability 8.0 or newer)"},
    {"fp64_dfma", PeakUnit::dfma, "tflops", "fp64_tflops", ""},
    {"int8_dp4a", PeakUnit::dp4a, "tops", "int8_dp4a_tops", "DP4A (compute capability 6.1 or newer)"},
    {"int32_imad", PeakUnit::imad, "tops", "", ""},
    {"mma_fp16", PeakUnit::mma_fp16, "tflops", "fp16_tensor_tflops", "tensor cores (compute capability 7.0 or newer)"},
    {"mma_bf16", PeakUnit::mma_bf16, "tflops", "bf16_tensor_tflops", "BF16 tensor cores (compute capability 8.0 or newer)"},
    {"mma_tf32", PeakUnit::mma_tf32, "tflops", "tf32_tflops", "TF32 tensor cores (compute capability 8.0 or newer)"},
    {"mma_int8", PeakUnit::mma_int8, "tops", "int8_tops", "INT8 tensor cores (compute capability 7.2 or newer)"},
};

void run_peak(CaseContext& ctx, const UnitInfo& u) {
  const GpuInfo& g = ctx.gpu();
  const unsigned threads = 256, blocks = unsigned(g.sm_count) * 4;
  DeviceBuffer out(blocks * sizeof(float));
  DeviceBuffer clocks(2 * blocks * sizeof(unsigned long long));
  cudaStream_t s = ctx.stream();
  // Calibrate the iteration count so that one launch lasts about 2 ms (the unit's steady rate,
  // long against launch overhead, short against the time cap).
  int iters = 256;
  for (int round = 0; round < 6; ++round) {
    Event e0, e1;
    e0.record(s);
    kernels::launch_peak(s, u.unit, iters, out.as<float>(), clocks.as<unsigned long long>(), blocks, threads);
    NB_CUDA_LAUNCH();
    e1.record(s);
    NB_CUDA(cudaEventSynchronize(e1.get()));
    const double t = e1.seconds_since(e0);
    if (t > 1.5e-3 && t < 4e-3) break;
    iters = int(std::clamp(double(iters) * 2e-3 / std::max(t, 1e-6), 16.0, double(1 << 24)));
  }
  ctx.measure([&](cudaStream_t st) {
    kernels::launch_peak(st, u.unit, iters, out.as<float>(), clocks.as<unsigned long long>(), blocks, threads);
  });
  const double ops = double(blocks) * threads * double(iters) * kernels::peak_ops_per_thread_iter(u.unit);
  ctx.set_throughput(u.metric, ops / 1e12, u.peak_key);

  // SM clock inside the last launch: cycles over nanoseconds, averaged over blocks.
  std::vector<unsigned long long> h(2 * blocks);
  NB_CUDA(cudaMemcpy(h.data(), clocks.get(), clocks.bytes(), cudaMemcpyDeviceToHost));
  double ghz_sum = 0;
  int n = 0;
  for (unsigned b = 0; b < blocks; ++b)
    if (h[2 * b + 1] > 0) {
      ghz_sum += double(h[2 * b]) / double(h[2 * b + 1]);
      ++n;
    }
  ctx.details()["iterations"] = iters;
  ctx.details()["grid"] = {{"blocks", blocks}, {"threads", threads}};
  ctx.details()["verification"] = {{"method", "none: a synthetic kernel with no output to check"}};
  if (n == 0) return;
  const double mhz = 1e3 * ghz_sum / n;
  ctx.metrics()["sm_clock_mhz"] = mhz;
  if (auto per_clk = unit_ops_per_clock_per_sm(u.name, g.cc_major, g.cc_minor)) {
    const double theo = double(g.sm_count) * *per_clk * mhz * 1e6 / 1e12;
    ctx.metrics()[std::string("theoretical_") + u.metric] = theo;
    ctx.details()["theoretical"] = {{"ops_per_clock_per_sm", *per_clk},
                                    {"sm_count", g.sm_count},
                                    {"formula", "SMs x ops/clock/SM x SM clock measured in the kernel"}};
  } else {
    ctx.details()["theoretical"] = {{"none", "no published one-instruction rate for this unit on compute capability " +
                                                 g.cc_string() + " (e.g. Pascal multiplies 32-bit integers with three XMAD)"}};
  }
}

class PeakFamily : public Family {
 public:
  std::string name() const override { return "peak"; }
  std::string description() const override {
    return "Peak arithmetic: FFMA, HFMA2, BF16, DFMA, DP4A, IMAD, and tensor-core mma (FP16, BF16, TF32, INT8)";
  }
  std::vector<Case> cases(Suite) const override {
    std::vector<Case> out;
    for (const auto& u : kUnits) {
      Case c;
      c.family = "peak";
      c.name = u.name;
      c.params = {{"unit", u.name}};
      const UnitInfo* up = &u;
      const int min_cc = kernels::peak_min_cc(u.unit);
      c.available = [up, min_cc](const GpuInfo& g) {
        if (g.cc() < min_cc)
          return Availability::no(std::string(up->name) + " needs " + up->what + "; this GPU has compute capability " +
                                  g.cc_string());
        return Availability::yes();
      };
      c.run = [up](CaseContext& ctx) { run_peak(ctx, *up); };
      c.l2 = L2Mode::hot;
      out.push_back(std::move(c));
    }
    return out;
  }
};

const Registrar registrar(std::make_unique<PeakFamily>());

}  // namespace
}  // namespace nb
