// Peak arithmetic: kernels that keep one unit busy (FP32 FFMA, FP16 HFMA2, BF16, FP64 DFMA,
// INT8 DP4A, INT32 IMAD, and the tensor cores for FP16, BF16, TF32, INT8, FP8: warpgroup MMA
// (wgmma) on Hopper, warp-level mma.sync elsewhere; peak_rules.hpp says which where). Each
// result in TFLOPS or TOPS, against the theoretical rate at the SM clock measured inside the
// kernel (clock64 cycles over %globaltimer time), and against the device profile's figure.
#include <cmath>

#include "bench/analysis.hpp"
#include "bench/precision.hpp"
#include "base/resources.hpp"
#include "bench/benchmark.hpp"
#include "bench/cost.hpp"
#include "kernels/common/kernels.cuh"
#include "kernels/peak/peak_kernels.cuh"
#include "peak_metrics.hpp"
#include "peak_rules.hpp"

namespace nb {
namespace {

using kernels::PeakUnit;
using nlohmann::json;

struct UnitInfo {
  const char* name;
  PeakUnit unit;
  bool ops;              // integer operations: TOPS (else TFLOPS)
  const char* peak_key;  // device profile key, "" for none
  const char* what;      // what the GPU lacks when it cannot run
};
const UnitInfo kUnits[] = {
    {"fp32_ffma", PeakUnit::ffma, false, "fp32_tflops", ""},
    {"fp16_hfma2", PeakUnit::hfma2, false, "fp16_tflops", "FP16 arithmetic (compute capability 5.3 or newer)"},
    {"bf16_fma2", PeakUnit::bf16fma2, false, "", "BF16 arithmetic (compute capability 8.0 or newer)"},
    {"fp64_dfma", PeakUnit::dfma, false, "fp64_tflops", ""},
    {"int8_dp4a", PeakUnit::dp4a, true, "int8_dp4a_tops", "DP4A (compute capability 6.1 or newer)"},
    {"int32_imad", PeakUnit::imad, true, "", ""},
    {"mma_fp16", PeakUnit::mma_fp16, false, "fp16_tensor_tflops", "tensor cores (compute capability 7.0 or newer)"},
    {"mma_bf16", PeakUnit::mma_bf16, false, "bf16_tensor_tflops", "BF16 tensor cores (compute capability 8.0 or newer)"},
    {"mma_tf32", PeakUnit::mma_tf32, false, "tf32_tflops", "TF32 tensor cores (compute capability 8.0 or newer)"},
    {"mma_int8", PeakUnit::mma_int8, true, "int8_tops", "INT8 tensor cores (compute capability 7.2 or newer)"},
    {"mma_fp8", PeakUnit::mma_fp8, false, "fp8_tflops", "FP8 tensor cores (compute capability 8.9 or newer)"},
};

kernels::FillType fill_type(PeakUnit u) {
  switch (u) {
    case PeakUnit::mma_fp16: return kernels::FillType::f16;
    case PeakUnit::mma_bf16: return kernels::FillType::bf16;
    case PeakUnit::mma_int8: return kernels::FillType::i8;
    case PeakUnit::mma_fp8: return kernels::FillType::fp8_e4m3;
    default: return kernels::FillType::f32;  // TF32 from FP32 containers
  }
}

// One launch of a peak kernel with `iters` loop iterations.
using PeakLaunch = std::function<void(cudaStream_t, int)>;

// The iteration count that makes one launch last about 2 ms (the unit's steady rate, long against
// launch overhead, short against the time cap).
int calibrate_iters(cudaStream_t s, const PeakLaunch& launch) {
  int iters = 256;
  for (int round = 0; round < 6; ++round) {
    Event e0, e1;
    e0.record(s);
    launch(s, iters);
    e1.record(s);
    NB_CUDA(cudaEventSynchronize(e1.get()));
    const double t = e1.seconds_since(e0);
    if (t > 1.5e-3 && t < 4e-3) break;
    iters = int(std::clamp(double(iters) * 2e-3 / std::max(t, 1e-6), 16.0, double(1 << 24)));
  }
  return iters;
}

// Calibrates, times, and records the rate: `ops_per_iter` operations per loop iteration of the
// whole grid. Against the dense peak (the profile's figure, the theoretical rate at the measured
// clock) only where `dense` is true. `clocks` holds each block's cycles and nanoseconds.
void measure_peak(CaseContext& ctx, const UnitInfo& u, const PeakLaunch& launch, double ops_per_iter, bool dense,
                  const DeviceBuffer& clocks, unsigned blocks) {
  const GpuInfo& g = ctx.gpu();
  const int iters = calibrate_iters(ctx.stream(), launch);
  ctx.measure([&](cudaStream_t st) { launch(st, iters); });
  ctx.set_throughput(u.ops ? peak::kTops : peak::kTflops, double(iters) * ops_per_iter / 1e12, dense ? u.peak_key : "");
  ctx.details()["iterations"] = iters;

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
  if (n == 0) return;
  const double mhz = 1e3 * ghz_sum / n;
  ctx.metric(kSmClockMetric, mhz);
  const Theoretical theo = peak_theoretical(u.name, g.cc_major, g.cc_minor, g.sm_count, mhz, dense);
  if (theo.rate) ctx.metric(u.ops ? peak::kTheoreticalTops : peak::kTheoreticalTflops, *theo.rate);
  ctx.details()["theoretical"] = theo.detail;
}

// FP32, FP16, ... and the tensor cores through mma.sync: 4 blocks of 256 threads per SM.
void run_sync(CaseContext& ctx, const UnitInfo& u, const TensorPath* tensor) {
  const unsigned threads = 256, blocks = unsigned(ctx.gpu().sm_count) * 4;
  DeviceBuffer out(blocks * sizeof(float));
  DeviceBuffer clocks(2 * blocks * sizeof(unsigned long long));
  const PeakLaunch launch = [&](cudaStream_t st, int iters) {
    kernels::launch_peak(st, u.unit, iters, out.as<float>(), clocks.as<unsigned long long>(), blocks, threads);
    NB_CUDA_LAUNCH();
  };
  const bool dense = !tensor || tensor->dense_peak;
  measure_peak(ctx, u, launch, double(blocks) * threads * kernels::peak_ops_per_thread_iter(u.unit), dense, clocks,
               blocks);
  ctx.details()["grid"] = {{"blocks", blocks}, {"threads", threads}};
  ctx.details()["verification"] = {{"method", "none: a synthetic kernel with no output to check"}};
  if (tensor) {
    ctx.details()["instruction"] = u.unit == PeakUnit::mma_fp8 ? "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32"
                                                               : "mma.sync (through WMMA 16x16 tiles)";
    ctx.details()["dense_tensor_peak"] = dense;
    if (!dense) ctx.details()["note"] = tensor->reason;
  }
}

// Hopper: warpgroup MMA on operands resident in shared memory, as many blocks as fit per SM.
void run_wgmma(CaseContext& ctx, const UnitInfo& u) {
  int per_sm = 0;
  NB_CUDA(kernels::wgmma_peak_blocks_per_sm(u.unit, &per_sm));
  if (per_sm < 1) throw Error(std::string("no block of the wgmma peak kernel fits on an SM (") + u.name + ")");
  const unsigned blocks = unsigned(ctx.gpu().sm_count) * unsigned(per_sm);
  const size_t acc_words = size_t(kernels::kWgmmaAccRegs) * kernels::kWgmmaThreads;
  DeviceBuffer tiles(kernels::kWgmmaTileBytes), acc(acc_words * sizeof(uint32_t));
  DeviceBuffer clocks(2 * blocks * sizeof(unsigned long long));
  cudaStream_t s = ctx.stream();
  const PeakLaunch launch = [&](cudaStream_t st, int iters) {
    NB_CUDA(kernels::launch_peak_wgmma(st, u.unit, iters, tiles.get(), acc.as<uint32_t>(),
                                       clocks.as<unsigned long long>(), blocks));
  };
  // Exact check first: with all-ones operands every accumulator is iterations x wgmma x K.
  const int check_iters = 8;
  const std::vector<uint8_t> ones = wgmma_ones_tile(u.unit);
  NB_CUDA(cudaMemcpyAsync(tiles.get(), ones.data(), ones.size(), cudaMemcpyHostToDevice, s));  // stream order
  launch(s, check_iters);
  std::vector<uint32_t> h(acc_words);
  NB_CUDA(cudaMemcpyAsync(h.data(), acc.get(), acc.bytes(), cudaMemcpyDeviceToHost, s));
  NB_CUDA(cudaStreamSynchronize(s));
  const std::string bad = wgmma_ones_mismatch(u.unit, check_iters, h);
  // Timed on pseudo-random operands (as the GEMM family's), not on ones, which switch fewer bits.
  const kernels::MmaShape shape = kernels::wgmma_peak_shape(u.unit);
  const unsigned elem = wgmma_operand_one(u.unit).bytes;
  kernels::launch_fill_random(s, tiles.get(), kernels::kWgmmaTileBytes / elem, fill_type(u.unit), 0x5eed);
  NB_CUDA_LAUNCH();
  measure_peak(ctx, u, launch, double(blocks) * kernels::kWgmmaPerIter * kernels::mma_ops(shape), true, clocks, blocks);
  ctx.details()["grid"] = {{"blocks", blocks}, {"threads", kernels::kWgmmaThreads}, {"blocks_per_sm", per_sm}};
  ctx.details()["instruction"] = std::string(kernels::wgmma_peak_instruction(u.unit)) +
                                 " (A and B from shared memory, one m64n256 accumulator per warpgroup)";
  ctx.details()["mma_shape"] = {{"m", shape.m}, {"n", shape.n}, {"k", shape.k}, {"ops_per_mma", kernels::mma_ops(shape)}};
  ctx.details()["wgmma_per_iteration"] = kernels::kWgmmaPerIter;
  ctx.details()["dense_tensor_peak"] = true;
  ctx.details()["verification"] = {
      {"method", "all-ones operands, " + std::to_string(check_iters) +
                     " iterations: every accumulator of block 0 must equal iterations x wgmma per iteration x K"},
      {"expected", wgmma_ones_expected(u.unit, check_iters)},
      {"ok", bad.empty()}};
  if (!bad.empty()) ctx.wrong("wgmma check with all-ones operands: " + bad);
}

void run_peak(CaseContext& ctx, const UnitInfo& u) {
  if (!kernels::is_tensor_unit(u.unit)) return run_sync(ctx, u, nullptr);
  const TensorPath path = choose_tensor_path(u.unit, ctx.gpu().cc(), kernels::wgmma_peak_runnable(u.unit),
                                             kernels::wgmma_peak_unbuilt_reason());
  if (!path.runs) {
    const bool unbuilt = ctx.gpu().cc() == 90 && kernels::wgmma_peak_unbuilt_reason() != nullptr;
    ctx.skip(path.reason, unbuilt ? ReasonKind::not_built : ReasonKind::unsupported);
  }
  if (path.instr == TensorInstr::wgmma) return run_wgmma(ctx, u);
  run_sync(ctx, u, &path);
}

class PeakFamily : public Family {
 public:
  std::string name() const override { return "peak"; }
  std::string description() const override {
    return "Peak arithmetic: FFMA, HFMA2, BF16, DFMA, DP4A, IMAD, and the tensor cores (FP16, BF16, TF32, INT8, FP8; "
           "wgmma on Hopper, mma.sync elsewhere)";
  }
  std::vector<Case> cases(Suite) const override {
    std::vector<std::string> units;
    for (const auto& u : kUnits) units.push_back(u.name);
    return Axes().add_string("unit", units).cases("peak", [](const AxisPoint& p, Case& c) {
      const UnitInfo* up = nullptr;
      for (const auto& u : kUnits)
        if (p.str("unit") == u.name) up = &u;
      const int min_cc = kernels::peak_min_cc(up->unit);
      c.available = [up, min_cc](const GpuInfo& g) {
        if (g.cc() < min_cc)
          return Availability::no(std::string(up->name) + " needs " + up->what + "; this GPU has compute capability " +
                                  g.cc_string());
        return Availability::yes();
      };
      c.run = [up](CaseContext& ctx) { run_peak(ctx, *up); };
      c.l2 = L2Mode::hot;
      // The cost model (bench/cost.hpp): a launch sized to about 2 ms (a few runs to size it),
      // then sampled.
      c.cost = [](const CostInput& in) {
        CaseCost k;
        k.kind = "peak";
        k.setup_s = 4 * 2e-3;
        k.sample_s = sampling_s(in.cfg, 2e-3);
        return k;
      };
    });
  }
};

const Registrar registrar(std::make_unique<PeakFamily>());
NB_REGISTER_METRICS("peak", {peak::kTflops, peak::kTops, peak::kTheoreticalTflops, peak::kTheoreticalTops, kSmClockMetric});

// The evidence for the FP16-versus-FP32 verdict (bench/precision.hpp): the units' rates against
// FP32 FFMA; synthetic, so the least preferred. Its FP16 rows head the table, its INT8 row
// follows the GEMM's rows.
double unit_rate(const json& records, const GpuBrief& g, const char* unit) {
  return best_metric(records, g, {peak::kTflops.name(), peak::kTops.name()},
                     [&](const json& r) { return r["family"] == "peak" && r["params"]["unit"] == unit; });
}

// A tensor case that measured another instruction than the GPU's dense path says so in its
// details (mma.sync where the dense rate needs tcgen05): the row says it too.
std::string tensor_note(const json& records, const GpuBrief& g, const char* unit) {
  for (const auto& r : records)
    if (r["family"] == "peak" && r["params"].value("unit", "") == unit && record_on(r, g) && r.contains("details") &&
        r["details"].is_object() && r["details"].value("dense_tensor_peak", true) == false)
      return " (mma.sync, not the dense tensor rate)";
  return "";
}

std::vector<PrecisionRow> fp16_evidence(const json& records, const GpuBrief& g, std::vector<std::string>&) {
  const double fp32 = unit_rate(records, g, "fp32_ffma");
  return {{"peak: fp16_hfma2 / fp32_ffma", "peak", "fp16", fp32, unit_rate(records, g, "fp16_hfma2")},
          {"peak: mma_fp16" + tensor_note(records, g, "mma_fp16") + " / fp32_ffma", "peak", "fp16", fp32,
           unit_rate(records, g, "mma_fp16")}};
}

std::vector<PrecisionRow> int8_evidence(const json& records, const GpuBrief& g, std::vector<std::string>&) {
  return {{"peak: int8_dp4a / fp32_ffma", "int8", "int8", unit_rate(records, g, "fp32_ffma"),
           unit_rate(records, g, "int8_dp4a")}};
}

const PrecisionEvidenceRegistrar fp16_rows({"peak", 10, 3, true, true, fp16_evidence});
const PrecisionEvidenceRegistrar int8_rows({"peak", 30, 3, false, true, int8_evidence});

}  // namespace
}  // namespace nb
