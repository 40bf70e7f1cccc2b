// GEMM family: cuBLAS (cublasGemmEx) and cuBLASLt (cublasLtMatmul) in every precision the GPU
// has (benchmarks/gemm/README.md). This file: the cases, the validate check, the evidence for
// the FP16-versus-FP32 verdict; gemm_run.cpp runs a case.
#include <algorithm>
#include <cmath>
#include <set>

#include "base/json_fields.hpp"
#include "bench/analysis.hpp"
#include "bench/benchmark.hpp"
#include "bench/cost.hpp"
#include "bench/precision.hpp"
#include "bench/validate_values.hpp"
#include "gemm_metrics.hpp"
#include "gemm_run.hpp"

namespace nb {
namespace {

using gemm::precision;
using gemm::precisions;
using gemm::Shape;
using nlohmann::json;

// What `nodebench validate` judges of this family: FP32 SGEMM at 8192 against the GPU's peak at
// the SM clock it ran at (gemm.fp32), and that clock on its own against the base clock
// (gemm.clock): a passively cooled GPU that holds its base clock under SGEMM is healthy, one below
// it is a cooling or power finding.
std::vector<ValidationCheck> gemm_checks() {
  static const std::string kCase = "gemm/fp32/cublas/square_8192";
  ValidationCheck c = gpu_check(
      "gemm.fp32", kCase,
      "SGEMM runs below what this GPU should reach at the clock it ran at: look at gpu.processes above (another "
      "process on the GPU), the cuBLAS version, and make sure the device profile matches this GPU; the clock itself "
      "is judged by gemm.clock (where the record has no clock, look at gpu.throttle and gpu.thermal too).",
      2);
  c.runs_case = [](const Case& k) { return k.id() == kCase; };
  c.judges = [](const json& r) { return jf::str_or(r, "id") == kCase; };
  c.value = [](const json& r, const CheckInput&, std::string& how) { return percent_at_clock_value(r, how); };
  ValidationCheck clock = gpu_check(
      "gemm.clock", kCase,
      "The SM clock fell below the base clock under SGEMM: a cooling or power finding. Look at gpu.thermal and "
      "gpu.throttle above and the throttle reasons in the evidence: hw_slowdown or sw_thermal_slowdown (airflow "
      "through a passively cooled card, its inlet temperature, fans), sw_power_cap below the board's default "
      "limit (nvidia-smi -q -d POWER: 'Default Power Limit'; nvidia-smi -pl <default>), locked clocks "
      "(nvidia-smi -q -d CLOCK).",
      2);
  clock.judges = c.judges;  // the same record; its case is planned by gemm.fp32
  clock.value = [](const json& r, const CheckInput& in, std::string& how) {
    return clock_vs_base_value(r, in.environment, in.gpu, how);
  };
  return {c, clock};
}

// The cost model (bench/cost.hpp): the operation at the GPU's peak for its precision; its
// operands filled at the memory bandwidth; cuBLASLt's autotuning times the heuristic's first four
// in interleaved rounds (5 to 15, until 50 ms are timed) of a warm and a timed run each, and takes
// the first choice for GEMMs over 20 ms (gemm_run.cpp).
CaseCost gemm_cost(const CostInput& in, const gemm::Precision& p, const std::string& api, const Shape& s) {
  const double mnk = double(s.m) * double(s.n) * double(s.k) * double(std::max<int64_t>(s.batch, 1));
  const double op = op_seconds(in.gpu, gemm::peak_key(p, in.gpu), 2.0 * mnk / 1e12, "fp32_tflops");
  const double bytes = (double(s.m) * double(s.k) + double(s.k) * double(s.n)) * double(p.ab_size) +
                       double(s.m) * double(s.n) * double(p.c_size);
  CaseCost k;
  k.kind = "gemm";
  k.setup_s = 2 * op_seconds(in.gpu, "mem_gbps", bytes / 1e9);
  if (api == "cublaslt" && op < 20e-3) {
    const double rounds = std::clamp(0.05 / std::max(4 * op, 1e-9), 5.0, 15.0);
    k.setup_s += rounds * 4 * (2 * op + 1e-4);
  }
  k.sample_s = sampling_s(in.cfg, op);
  return k;
}

// The cases' axes (params precision, api, shape, m, n, k and for the model shapes batch; names
// <precision>/<api>/square_<n> or <precision>/<api>/<shape>_b<batch>).
std::vector<std::string> all_precision_names() {
  std::vector<std::string> out;
  for (const auto& p : precisions()) out.push_back(p.name);
  return out;
}

AxisValue precision_value(const std::string& name) { return {{{"precision", name}}, name}; }

// Square n x n x n, the size outermost, then the precision (the api is added by the caller).
Axes square_axes(const std::vector<int64_t>& sizes, const std::vector<std::string>& precs) {
  std::vector<AxisValue> shapes, ps;
  for (int64_t n : sizes) shapes.push_back({{{"shape", "square"}, {"m", n}, {"n", n}, {"k", n}}, "square_" + std::to_string(n)});
  for (const auto& p : precs) ps.push_back(precision_value(p));
  Axes a;
  a.add_values("shape", shapes).add_values("precision", ps);
  return a.name("{precision}/{api}/{shape}");
}

// A model's layers at batch b (m = b): mlp K=4096, N=16384; classifier K=2048, N=1000; cuBLASLt.
// The batch outermost, then the precision and the shape, or (shape_first) the shape first.
Axes batch_axes(const std::vector<int64_t>& batches, const std::vector<std::string>& precs,
                const std::vector<std::string>& kinds, bool shape_first) {
  std::vector<AxisValue> bs, ps, ks;
  for (int64_t b : batches) {
    std::string label = "b";  // appended, not "b" + ...: GCC 12 warns wrongly on that (-Wrestrict)
    bs.push_back({{{"m", b}, {"batch", b}}, label.append(std::to_string(b))});
  }
  for (const auto& p : precs) ps.push_back(precision_value(p));
  for (const auto& k : kinds)
    ks.push_back({k == "mlp" ? json{{"shape", k}, {"n", 16384}, {"k", 4096}} : json{{"shape", k}, {"n", 1000}, {"k", 2048}}, k});
  Axes a;
  a.add_values("batch", bs);
  if (shape_first) a.add_values("shape", ks).add_values("precision", ps);
  else a.add_values("precision", ps).add_values("shape", ks);
  return a.add_string("api", {"cublaslt"}).name("{precision}/{api}/{shape}_{batch}");
}

class GemmFamily : public Family {
 public:
  std::string name() const override { return "gemm"; }
  std::string description() const override {
    return "cuBLAS/cuBLASLt matrix multiply: FP64, FP32, TF32, FP16 (FP32 or FP16 accumulate), BF16, INT8, FP8";
  }

  std::vector<Case> cases(Suite suite) const override {
    std::vector<Case> out;
    const size_t samples = suite == Suite::quick ? 24 : 64;
    auto fill = [samples](const AxisPoint& pt, Case& c) {
      const gemm::Precision* p = &precision(pt.str("precision"));
      const Shape s{pt.str("shape"), pt.int64("m"), pt.int64("n"), pt.int64("k"), pt.has("batch") ? pt.int64("batch") : 0};
      c.available = [p](const GpuInfo& g) {
        if (g.cc() < p->min_cc)
          return Availability::no(std::string(p->name) + " needs " + p->needs + "; this GPU has compute capability " +
                                  g.cc_string());
        return Availability::yes();
      };
      c.run = [p, api = pt.str("api"), s, samples](CaseContext& ctx) { gemm::run_gemm(ctx, *p, api, s, samples); };
      c.cost = [p, api = pt.str("api"), s](const CostInput& in) { return gemm_cost(in, *p, api, s); };
      c.l2 = L2Mode::hot;
    };
    if (suite == Suite::quick) {
      append_cases(out, square_axes({1024, 4096, 8192}, all_precision_names()).add_string("api", {"cublaslt"}).cases("gemm", fill));
      append_cases(out, square_axes({8192}, {"fp32", "tf32", "fp16", "bf16"}).add_string("api", {"cublas"}).cases("gemm", fill));
      append_cases(out, batch_axes({64}, {"bf16", "fp32"}, {"mlp", "classifier"}, true)
                            .where([](const AxisPoint& p) { return p.str("shape") == "mlp" || p.str("precision") == "fp32"; })
                            .cases("gemm", fill));
      return out;
    }
    std::vector<int64_t> sizes, batches;
    for (int64_t sz = 512; sz <= 16384; sz *= 2) sizes.push_back(sz);
    for (int64_t b = 1; b <= 1024; b *= 2) batches.push_back(b);
    append_cases(out, square_axes(sizes, all_precision_names())
                          .add_string("api", {"cublaslt", "cublas"})
                          .where([](const AxisPoint& p) { return p.str("api") == "cublaslt" || !precision(p.str("precision")).lt_only; })
                          .cases("gemm", fill));
    append_cases(out, batch_axes(batches, all_precision_names(), {"mlp", "classifier"}, false).cases("gemm", fill));
    return out;
  }
  std::vector<ValidationCheck> validation_checks() const override { return gemm_checks(); }
};

const Registrar registrar(std::make_unique<GemmFamily>());
NB_REGISTER_METRICS("gemm", {gemm::kTflops, gemm::kTops});

// The evidence for the FP16-versus-FP32 verdict (bench/precision.hpp): at the largest square size
// where both ran, the best API's FP16 and INT8 rates against FP32. The most practical evidence
// (preference 0), placed after the peak kernels' FP16 rows.
std::vector<PrecisionRow> gemm_evidence(const json& records, const GpuBrief& g, std::vector<std::string>&) {
  std::set<int64_t> sizes;
  for (const auto& r : records)
    if (r["family"] == "gemm" && r["params"].value("shape", "") == "square") sizes.insert(r["params"]["m"].get<int64_t>());
  for (auto it = sizes.rbegin(); it != sizes.rend(); ++it) {
    const int64_t n = *it;
    auto rate = [&](const char* prec) {
      return best_metric(records, g, {gemm::kTflops.name(), gemm::kTops.name()}, [&](const json& r) {
        return r["family"] == "gemm" && r["params"]["precision"] == prec && r["params"]["shape"] == "square" &&
               r["params"]["m"].get<int64_t>() == n;
      });
    };
    const double f32 = rate("fp32"), f16 = rate("fp16");
    if (!std::isfinite(f32) || !std::isfinite(f16)) continue;
    const std::string at = "gemm " + std::to_string(n) + "^3: ";
    std::vector<PrecisionRow> rows = {{at + "fp16 / fp32", "gemm", "fp16", f32, f16}};
    if (const double i8 = rate("int8"); std::isfinite(i8)) rows.push_back({at + "int8 / fp32", "int8", "int8", f32, i8});
    return rows;
  }
  return {};
}

const PrecisionEvidenceRegistrar precision_evidence({"gemm", 20, 0, true, true, gemm_evidence});

}  // namespace

// The peak key a GEMM precision's percent of peak is taken against on GPU `g`, for the tests that
// drive it with recorded GPUs (tests/test_p40.cpp).
std::string gemm_peak_key(const std::string& precision_name, const GpuInfo& g) {
  return gemm::peak_key(gemm::precision(precision_name), g);
}

}  // namespace nb
