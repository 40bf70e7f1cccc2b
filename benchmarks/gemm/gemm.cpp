// GEMM family: cuBLAS (cublasGemmEx) and cuBLASLt (cublasLtMatmul) in every precision the GPU
// has. C[m,n] = A[m,k] B[k,n], stored column-major as C = A^T B with A kept k x m ("TN"), the
// layout every cuBLASLt precision accepts (FP8 requires it). Inputs are random, generated on
// the GPU; after timing, sampled output entries are checked against float64 dot products.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>

#include <cublasLt.h>
#include <cublas_v2.h>

#include "bench/analysis.hpp"
#include "bench/algo_choice.hpp"
#include "bench/benchmark.hpp"
#include "base/json_fields.hpp"
#include "bench/validate_values.hpp"
#include "base/cublas_check.hpp"
#include "kernels/common/kernels.cuh"
#include "base/resources.hpp"
#include "base/verify.hpp"

namespace nb {
namespace {

using nlohmann::json;

struct Precision {
  const char* name;
  cudaDataType_t ab, c;
  cublasComputeType_t compute;
  cudaDataType_t scale;
  size_t ab_size, c_size;
  kernels::FillType fill;
  int min_cc;            // major*10+minor
  const char* needs;     // what the GPU lacks when cc < min_cc
  bool lt_only;
  bool integer;
};

const std::vector<Precision>& precisions() {
  static const std::vector<Precision> p = {
      {"fp64", CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F, CUDA_R_64F, 8, 8, kernels::FillType::f64, 0, "", false, false},
      {"fp32", CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, CUDA_R_32F, 4, 4, kernels::FillType::f32, 0, "", false, false},
      {"tf32", CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F, 4, 4, kernels::FillType::f32, 80,
       "TF32 tensor cores (compute capability 8.0 or newer)", false, false},
      {"fp16", CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F, 2, 2, kernels::FillType::f16, 0, "", false, false},
      {"fp16acc16", CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_16F, CUDA_R_16F, 2, 2, kernels::FillType::f16, 0, "", false, false},
      {"bf16", CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F, 2, 2, kernels::FillType::bf16, 80,
       "BF16 arithmetic (compute capability 8.0 or newer)", false, false},
      {"int8", CUDA_R_8I, CUDA_R_32I, CUBLAS_COMPUTE_32I, CUDA_R_32I, 1, 4, kernels::FillType::i8, 61,
       "INT8 dot products (DP4A, compute capability 6.1 or newer)", false, true},
      {"fp8", CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F, 1, 2, kernels::FillType::fp8_e4m3, 89,
       "FP8 tensor cores (compute capability 8.9 or newer)", true, false},
  };
  return p;
}

const Precision& precision(const std::string& name) {
  for (const auto& p : precisions())
    if (name == p.name) return p;
  throw Error("unknown GEMM precision " + name);
}

const char* compute_name(cublasComputeType_t c) {
  switch (c) {
    case CUBLAS_COMPUTE_64F: return "fp64";
    case CUBLAS_COMPUTE_16F: return "fp16";
    case CUBLAS_COMPUTE_32I: return "int32";
    case CUBLAS_COMPUTE_32F_FAST_TF32: return "tf32";
    default: return "fp32";
  }
}

// The peak from the data and compute types (peak_key_for); FP64 falls back to the non-tensor
// figure where the profile has no FP64 tensor rate.
std::string peak_key(const Precision& p, const GpuInfo& g) {
  const std::string n = p.name;
  const std::string data = n == "fp16acc16" ? "fp16" : n;
  std::string key = peak_key_for(data, compute_name(p.compute), g.cc());
  if (key == "fp64_tensor_tflops" && !g.peak(key)) key = "fp64_tflops";
  return key;
}

// One cuBLAS and one cuBLASLt handle per device, made on first use and kept for the process
// (destroying them at exit, after the CUDA runtime may have shut down, is not safe).
struct Handles {
  cublasHandle_t blas = nullptr;
  cublasLtHandle_t lt = nullptr;
  DeviceBuffer workspace;
};
constexpr size_t kWorkspaceBytes = size_t(64) << 20;

Handles& handles_for(int device) {
  static std::mutex mu;
  static std::map<int, Handles*> all;
  std::lock_guard<std::mutex> lock(mu);
  auto it = all.find(device);
  if (it != all.end()) return *it->second;
  auto* h = new Handles;
  NB_CUBLAS(cublasCreate(&h->blas));
  NB_CUBLAS(cublasLtCreate(&h->lt));
  h->workspace = DeviceBuffer(kWorkspaceBytes);
  all[device] = h;
  return *h;
}

union Scalar {
  double d;
  float f;
  uint16_t h;
  int32_t i;
};

void set_scalar(Scalar& s, cudaDataType_t t, double v) {
  std::memset(&s, 0, sizeof s);
  switch (t) {
    case CUDA_R_64F: s.d = v; break;
    case CUDA_R_32F: s.f = float(v); break;
    case CUDA_R_16F: s.h = v == 1.0 ? 0x3C00 : 0x0000; break;  // only 1 and 0 are used
    case CUDA_R_32I: s.i = int32_t(v); break;
    default: throw Error("unsupported scale type");
  }
}

// RAII for the cuBLASLt descriptors.
struct LtDesc {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  LtDesc() = default;
  LtDesc(const LtDesc&) = delete;
  LtDesc& operator=(const LtDesc&) = delete;
  ~LtDesc() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

json algo_json(const cublasLtMatmulAlgo_t& algo, const cublasLtMatmulHeuristicResult_t& r) {
  auto get = [&](cublasLtMatmulAlgoConfigAttributes_t attr) -> int64_t {
    // Ask for the attribute's size first: cuBLASLt rejects a buffer of the wrong size.
    size_t size = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, nullptr, 0, &size) != CUBLAS_STATUS_SUCCESS ||
        size == 0 || size > 8)
      return -1;
    unsigned char buf[8] = {};
    if (cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, buf, size, &size) != CUBLAS_STATUS_SUCCESS) return -1;
    if (size == 2) { uint16_t v; std::memcpy(&v, buf, 2); return v; }
    if (size == 4) { int32_t v; std::memcpy(&v, buf, 4); return v; }
    int64_t v;
    std::memcpy(&v, buf, 8);
    return v;
  };
  return {{"id", get(CUBLASLT_ALGO_CONFIG_ID)},
          {"tile", get(CUBLASLT_ALGO_CONFIG_TILE_ID)},
          {"stages", get(CUBLASLT_ALGO_CONFIG_STAGES_ID)},
          {"split_k", get(CUBLASLT_ALGO_CONFIG_SPLITK_NUM)},
          {"reduction_scheme", get(CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME)},
          {"cta_swizzling", get(CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING)},
          {"custom_option", get(CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION)},
          {"workspace_bytes", r.workspaceSize},
          {"waves", r.wavesCount}};
}

// Host copy of n elements at element offset `off`, decoded to double.
std::vector<double> fetch(const void* dev, cudaDataType_t t, size_t elem_size, size_t off, size_t n) {
  std::vector<unsigned char> raw(n * elem_size);
  NB_CUDA(cudaMemcpy(raw.data(), static_cast<const unsigned char*>(dev) + off * elem_size, raw.size(),
                     cudaMemcpyDeviceToHost));
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i) {
    const unsigned char* p = raw.data() + i * elem_size;
    switch (t) {
      case CUDA_R_64F: { double v; std::memcpy(&v, p, 8); out[i] = v; break; }
      case CUDA_R_32F: { float v; std::memcpy(&v, p, 4); out[i] = v; break; }
      case CUDA_R_16F: { uint16_t v; std::memcpy(&v, p, 2); out[i] = half_to_double(v); break; }
      case CUDA_R_16BF: { uint16_t v; std::memcpy(&v, p, 2); out[i] = bf16_to_double(v); break; }
      case CUDA_R_8I: out[i] = double(static_cast<int8_t>(*p)); break;
      case CUDA_R_32I: { int32_t v; std::memcpy(&v, p, 4); out[i] = double(v); break; }
      case CUDA_R_8F_E4M3: out[i] = fp8_e4m3_to_double(*p); break;
      default: throw Error("fetch: unsupported type");
    }
  }
  return out;
}

struct Shape {
  std::string kind;  // square, mlp, classifier
  int64_t m, n, k;
  int64_t batch;     // 0 for square
};

void run_gemm(CaseContext& ctx, const Precision& p, const std::string& api, const Shape& s, size_t verify_samples) {
  const GpuInfo& gpu = ctx.gpu();
  const int64_t m = s.m, n = s.n, k = s.k;
  const size_t a_bytes = size_t(k) * m * p.ab_size, b_bytes = size_t(k) * n * p.ab_size,
               c_bytes = size_t(m) * n * p.c_size;
  size_t free_b = 0, total_b = 0;
  NB_CUDA(cudaMemGetInfo(&free_b, &total_b));
  const size_t need = a_bytes + b_bytes + c_bytes;
  if (double(need) > 0.9 * double(free_b)) {
    std::ostringstream os;
    os << "out of memory: does not fit: needs " << need << " bytes for A, B and C, " << free_b << " bytes free";
    ctx.skip(os.str());
  }
  Handles& h = handles_for(gpu.index);
  DeviceBuffer A(a_bytes), B(b_bytes), C(c_bytes);
  cudaStream_t stream = ctx.stream();
  kernels::launch_fill_random(stream, A.get(), size_t(k) * m, p.fill, 0x5eed0001ull + uint64_t(m));
  NB_CUDA_LAUNCH();
  kernels::launch_fill_random(stream, B.get(), size_t(k) * n, p.fill, 0x5eed0002ull + uint64_t(n));
  NB_CUDA_LAUNCH();
  NB_CUDA(cudaStreamSynchronize(stream));

  Scalar alpha, beta;
  set_scalar(alpha, p.scale, 1.0);
  set_scalar(beta, p.scale, 0.0);

  std::function<void(cudaStream_t)> launch;
  LtDesc d;
  cublasLtMatmulAlgo_t chosen{};
  if (api == "cublas") {
    NB_CUBLAS(cublasSetStream(h.blas, stream));
    NB_CUBLAS(cublasSetMathMode(h.blas, CUBLAS_DEFAULT_MATH));
    launch = [&, m, n, k](cudaStream_t) {
      NB_CUBLAS(cublasGemmEx(h.blas, CUBLAS_OP_T, CUBLAS_OP_N, int(m), int(n), int(k), &alpha, A.get(), p.ab, int(k),
                             B.get(), p.ab, int(k), &beta, C.get(), p.c, int(m), p.compute, CUBLAS_GEMM_DEFAULT));
    };
    ctx.details()["algorithm"] = {{"api", "cublasGemmEx"}, {"algo", "CUBLAS_GEMM_DEFAULT"}};
  } else {
    NB_CUBLAS(cublasLtMatmulDescCreate(&d.op, p.compute, p.scale));
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    NB_CUBLAS(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    NB_CUBLAS(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    NB_CUBLAS(cublasLtMatrixLayoutCreate(&d.a, p.ab, uint64_t(k), uint64_t(m), k));
    NB_CUBLAS(cublasLtMatrixLayoutCreate(&d.b, p.ab, uint64_t(k), uint64_t(n), k));
    NB_CUBLAS(cublasLtMatrixLayoutCreate(&d.c, p.c, uint64_t(m), uint64_t(n), m));
    NB_CUBLAS(cublasLtMatmulPreferenceCreate(&d.pref));
    const uint64_t ws = h.workspace.bytes();
    NB_CUBLAS(cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    cublasLtMatmulHeuristicResult_t res[8] = {};
    int returned = 0;
    const cublasStatus_t hs =
        cublasLtMatmulAlgoGetHeuristic(h.lt, d.op, d.a, d.b, d.c, d.c, d.pref, 8, res, &returned);
    if (hs != CUBLAS_STATUS_SUCCESS || returned == 0) {
      ctx.skip(std::string("cuBLASLt offers no algorithm for ") + p.name + " " + std::to_string(m) + "x" +
               std::to_string(n) + "x" + std::to_string(k) + " on this GPU (" + cublasGetStatusName(hs) + ")");
    }
    auto lt_launch = [&, stream](const cublasLtMatmulAlgo_t& algo, cudaStream_t st) {
      NB_CUBLAS(cublasLtMatmul(h.lt, d.op, &alpha, A.get(), d.a, B.get(), d.b, &beta, C.get(), d.c, C.get(), d.c,
                               &algo, h.workspace.get(), h.workspace.bytes(), st));
      (void)stream;
    };
    // Autotune among the heuristic's first four (nb::choose_by_timing: interleaved rounds, so that
    // clock drift under the power cap hits every candidate alike, median with a tie margin; a full
    // tie goes to the heuristic's higher rank). Long GEMMs (a run over 20 ms) take the heuristic's
    // first choice, which is deterministic. A choice is kept in the algorithm cache by rank, with
    // the algorithm's config id to check that the heuristic still lists it there.
    const AlgoCacheKey ckey{"cublasLt-" + std::to_string(cublasLtGetVersion()), gpu.name,
                            std::string(p.name) + "_" + std::to_string(m) + "x" + std::to_string(n) + "x" +
                                std::to_string(k) + "_tn",
                            "ws" + std::to_string(ws)};
    auto config_id = [&](int i) { return algo_json(res[i].algo, res[i]).value("id", int64_t(-1)); };
    int best = 0;
    int tried = 0;
    json timed = json::array();
    std::string source = "search";
    int rounds = 0;
    bool hit_from_file = false;
    const std::optional<AlgoCacheEntry> hit = global_algo_cache().get(ckey, &hit_from_file);
    if (hit && hit->algo >= 0 && hit->algo < std::min(returned, 4) && res[hit->algo].state == CUBLAS_STATUS_SUCCESS &&
        config_id(hit->algo) == hit->extra) {
      best = hit->algo;
      source = hit_from_file ? "file" : "process";
    } else {
      std::vector<AlgoCandidate> cand;
      for (int i = 0; i < std::min(returned, 4); ++i)
        if (res[i].state == CUBLAS_STATUS_SUCCESS)
          cand.push_back({i, res[i].workspaceSize, "heuristic rank " + std::to_string(i)});
      Event e0, e1;
      e0.record(stream);
      lt_launch(res[cand.empty() ? 0 : cand[0].id].algo, stream);
      e1.record(stream);
      NB_CUDA(cudaEventSynchronize(e1.get()));
      double best_s = e1.seconds_since(e0);
      if (cand.size() > 1 && best_s < 0.02) {
        constexpr int kBurst = 3;
        auto time_one = [&](const AlgoCandidate& c) {
          lt_launch(res[c.id].algo, stream);  // untimed: warm
          e0.record(stream);
          for (int i = 0; i < kBurst; ++i) lt_launch(res[c.id].algo, stream);
          e1.record(stream);
          NB_CUDA(cudaEventSynchronize(e1.get()));
          return e1.seconds_since(e0) / kBurst;
        };
        const ChoiceOutcome out = choose_by_timing(cand, time_one);
        best = out.best().cand.id;
        best_s = out.best().median_s;
        timed = timings_to_json(out);
        rounds = out.rounds;
        tried = int(cand.size());
      } else if (!cand.empty()) {
        best = cand[0].id;
        tried = 1;
      }
      global_algo_cache().put(ckey, {best, config_id(best), uint64_t(res[best].workspaceSize), best_s, ""});
    }
    chosen = res[best].algo;
    json a = algo_json(chosen, res[best]);
    a["api"] = "cublasLtMatmul";
    a["heuristic_candidates"] = returned;
    a["autotuned_among"] = tried;
    a["heuristic_rank"] = best;
    a["candidates"] = timed;
    a["rounds"] = rounds;
    a["from_cache"] = source != "search";
    a["source"] = source;
    if (source != "search") a["cached_median_us"] = hit->median_s * 1e6;
    ctx.details()["algorithm"] = a;
    launch = [&, lt_launch](cudaStream_t st) { lt_launch(chosen, st); };
  }

  ctx.measure(launch);
  const double work = 2.0 * double(m) * double(n) * double(k) / 1e12;
  ctx.set_throughput(p.integer ? "tops" : "tflops", work, peak_key(p, gpu));

  // Verification: poison C, run once more, check sampled entries against float64.
  NB_CUDA(cudaMemsetAsync(C.get(), 0xFF, c_bytes, stream));
  launch(stream);
  NB_CUDA(cudaStreamSynchronize(stream));
  const GemmTolerance tol = gemm_tolerance(p.name);
  const auto pos = sample_positions(m, n, verify_samples, 0xC0FFEEull);
  std::map<int64_t, std::vector<double>> rows, cols;
  size_t failures = 0;
  double worst = 0;
  std::string worst_text;
  for (const auto& [i, j] : pos) {
    auto& a = rows[i];
    if (a.empty()) a = fetch(A.get(), p.ab, p.ab_size, size_t(i) * size_t(k), size_t(k));
    auto& b = cols[j];
    if (b.empty()) b = fetch(B.get(), p.ab, p.ab_size, size_t(j) * size_t(k), size_t(k));
    const double got = fetch(C.get(), p.c, p.c_size, size_t(i) + size_t(j) * size_t(m), 1)[0];
    const DotCheck c = check_dot(a, b, got, tol);
    if (!c.ok) ++failures;
    if (c.ratio > worst || (!c.ok && worst_text.empty())) {
      worst = c.ratio;
      std::ostringstream os;
      os << "C[" << i << "," << j << "] = " << c.got << ", float64 reference " << c.ref << ", error " << c.error
         << ", bound " << c.bound;
      worst_text = os.str();
    }
  }
  ctx.details()["verification"] = {{"samples", pos.size()},
                                   {"failures", failures},
                                   {"max_error_ratio", std::isfinite(worst) ? json(worst) : json(nullptr)},
                                   {"worst", worst_text},
                                   {"reference", "float64 dot products on the host of the stored inputs"}};
  if (failures > 0) {
    std::ostringstream os;
    os << failures << " of " << pos.size() << " sampled entries outside the " << p.name << " error bound; worst: " << worst_text;
    ctx.wrong(os.str());
  }
}

// What `nodebench validate` judges of this family: FP32 SGEMM at 8192 against the GPU's peak.
std::vector<ValidationCheck> gemm_checks() {
  static const std::string kCase = "gemm/fp32/cublas/square_8192";
  ValidationCheck c = gpu_check(
      "gemm.fp32", kCase,
      "SGEMM runs below what this GPU should reach: look at gpu.throttle, gpu.thermal and gpu.processes above; "
      "check the power limit and clocks (nvidia-smi -q -d PERFORMANCE,POWER,CLOCK; nvidia-smi -rgc resets locked "
      "clocks); make sure the device profile matches this GPU (its peak assumes the boost clock).",
      2);
  c.runs_case = [](const Case& k) { return k.id() == kCase; };
  c.judges = [](const json& r) { return jf::str_or(r, "id") == kCase; };
  c.value = [](const json& r, const CheckInput&, std::string& how) { return percent_of_peak_value(r, how); };
  return {c};
}

class GemmFamily : public Family {
 public:
  std::string name() const override { return "gemm"; }
  std::string description() const override {
    return "cuBLAS/cuBLASLt matrix multiply: FP64, FP32, TF32, FP16 (FP32 or FP16 accumulate), BF16, INT8, FP8";
  }

  std::vector<Case> cases(Suite suite) const override {
    std::vector<Case> out;
    auto add = [&](const Precision& p, const std::string& api, const Shape& s) {
      Case c;
      c.family = "gemm";
      const std::string shape_name = s.kind == "square" ? "square_" + std::to_string(s.m) : s.kind + "_b" + std::to_string(s.batch);
      c.name = std::string(p.name) + "/" + api + "/" + shape_name;
      c.params = {{"precision", p.name}, {"api", api}, {"shape", s.kind}, {"m", s.m}, {"n", s.n}, {"k", s.k}};
      if (s.batch) c.params["batch"] = s.batch;
      const int min_cc = p.min_cc;
      const std::string needs = p.needs;
      const std::string pname = p.name;
      c.available = [min_cc, needs, pname](const GpuInfo& g) {
        if (g.cc() < min_cc)
          return Availability::no(pname + " needs " + needs + "; this GPU has compute capability " + g.cc_string());
        return Availability::yes();
      };
      const Precision* pp = &p;
      const size_t samples = suite == Suite::quick ? 24 : 64;
      c.run = [pp, api, s, samples](CaseContext& ctx) { run_gemm(ctx, *pp, api, s, samples); };
      c.l2 = L2Mode::hot;
      out.push_back(std::move(c));
    };
    if (suite == Suite::quick) {
      for (int64_t sz : {1024, 4096, 8192})
        for (const auto& p : precisions()) add(p, "cublaslt", {"square", sz, sz, sz, 0});
      for (const char* pn : {"fp32", "tf32", "fp16", "bf16"}) add(precision(pn), "cublas", {"square", 8192, 8192, 8192, 0});
      add(precision("bf16"), "cublaslt", {"mlp", 64, 16384, 4096, 64});
      add(precision("fp32"), "cublaslt", {"mlp", 64, 16384, 4096, 64});
      add(precision("fp32"), "cublaslt", {"classifier", 64, 1000, 2048, 64});
      return out;
    }
    for (int64_t sz = 512; sz <= 16384; sz *= 2)
      for (const auto& p : precisions()) {
        add(p, "cublaslt", {"square", sz, sz, sz, 0});
        if (!p.lt_only) add(p, "cublas", {"square", sz, sz, sz, 0});
      }
    for (int64_t b = 1; b <= 1024; b *= 2)
      for (const auto& p : precisions()) {
        add(p, "cublaslt", {"mlp", b, 16384, 4096, b});
        add(p, "cublaslt", {"classifier", b, 1000, 2048, b});
      }
    return out;
  }
  std::vector<ValidationCheck> validation_checks() const override { return gemm_checks(); }
};

const Registrar registrar(std::make_unique<GemmFamily>());

// The FP16-versus-FP32 verdict reads GEMM, peak and convolution records: declared here, with the
// GEMM family, the one every suite runs.
const AnalysisRegistrar fp16_analysis({
    "fp16_vs_fp32",
    [](const json& records) {
      for (const auto& r : records) {
        const std::string f = r.value("family", "");
        if (f == "gemm" || f == "peak" || f == "conv") return true;
      }
      return false;
    },
    [](const json& records, const AnalysisContext& ctx) {
      std::vector<GpuBrief> briefs;
      for (const GpuInfo* g : ctx.gpus) briefs.push_back({g->index, g->name, g->cc_major, g->cc_minor, "", -1});
      // Under MPI every rank's GPU, identified by host and rank as well as index.
      return fp16_vs_fp32(records, gpu_briefs(ctx.environment, briefs));
    },
    [](const json& a) { return fp16_verdict_lines(a); }});

}  // namespace

// The peak key a GEMM precision's percent of peak is taken against on GPU `g`, for the tests that
// drive it with recorded GPUs (tests/test_p40.cpp).
std::string gemm_peak_key(const std::string& precision_name, const GpuInfo& g) {
  return peak_key(precision(precision_name), g);
}

}  // namespace nb
