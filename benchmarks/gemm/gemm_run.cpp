// The gemm family's run of one case (see gemm_run.hpp): cuBLAS (cublasGemmEx) and cuBLASLt
// (cublasLtMatmul). C[m,n] = A[m,k] B[k,n], stored column-major as C = A^T B with A kept k x m
// ("TN"), the layout every cuBLASLt precision accepts (FP8 requires it). Inputs are random,
// generated on the GPU; after timing, sampled output entries are checked against float64 dot
// products.
#include "gemm_run.hpp"
#include "gemm_metrics.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <sstream>

#include "base/cublas_check.hpp"
#include "base/resources.hpp"
#include "base/verify.hpp"
#include "bench/algo_choice.hpp"
#include "node/profiles.hpp"

namespace nb::gemm {

using nlohmann::json;

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

namespace {

const char* compute_name(cublasComputeType_t c) {
  switch (c) {
    case CUBLAS_COMPUTE_64F: return "fp64";
    case CUBLAS_COMPUTE_16F: return "fp16";
    case CUBLAS_COMPUTE_32I: return "int32";
    case CUBLAS_COMPUTE_32F_FAST_TF32: return "tf32";
    default: return "fp32";
  }
}

}  // namespace

// The peak from the data and compute types (peak_key_for); FP64 falls back to the non-tensor
// figure where the profile has no FP64 tensor rate.
std::string peak_key(const Precision& p, const GpuInfo& g) {
  const std::string n = p.name;
  const std::string data = n == "fp16acc16" ? "fp16" : n;
  std::string key = peak_key_for(data, compute_name(p.compute), g.cc());
  if (key == "fp64_tensor_tflops" && !g.peak(key)) key = "fp64_tflops";
  return key;
}

namespace {

// One cuBLAS and one cuBLASLt handle per GPU with the cuBLASLt workspace, made on first use and
// kept by the Session (ctx.gpu_resources()), which destroys them while CUDA is still up.
class Handles {
 public:
  Handles() : workspace(kWorkspaceBytes) {
    NB_CUBLAS(cublasCreate(&blas));
    try {
      NB_CUBLAS(cublasLtCreate(&lt));
    } catch (...) {
      cublasDestroy(blas);
      throw;
    }
  }
  ~Handles() {
    if (lt) (void)cublasLtDestroy(lt);
    if (blas) (void)cublasDestroy(blas);
  }
  Handles(const Handles&) = delete;
  Handles& operator=(const Handles&) = delete;
  static constexpr size_t kWorkspaceBytes = size_t(64) << 20;
  cublasHandle_t blas = nullptr;
  cublasLtHandle_t lt = nullptr;
  DeviceBuffer workspace;
};

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

}  // namespace

namespace {

// The operands of one case, filled with random data on the GPU, and the scalars 1 and 0.
struct Operands {
  DeviceBuffer A, B, C;
  size_t c_bytes = 0;
  Scalar alpha{}, beta{};
};

void make_operands(CaseContext& ctx, const Precision& p, const Shape& s, Operands& o) {
  const int64_t m = s.m, n = s.n, k = s.k;
  const size_t a_bytes = size_t(k) * m * p.ab_size, b_bytes = size_t(k) * n * p.ab_size;
  o.c_bytes = size_t(m) * n * p.c_size;
  size_t free_b = 0, total_b = 0;
  NB_CUDA(cudaMemGetInfo(&free_b, &total_b));
  const size_t need = a_bytes + b_bytes + o.c_bytes;
  if (double(need) > 0.9 * double(free_b)) {
    std::ostringstream os;
    os << "out of memory: does not fit: needs " << need << " bytes for A, B and C, " << free_b << " bytes free";
    ctx.skip(os.str(), ReasonKind::oom);
  }
  o.A = DeviceBuffer(a_bytes);
  o.B = DeviceBuffer(b_bytes);
  o.C = DeviceBuffer(o.c_bytes);
  cudaStream_t stream = ctx.stream();
  kernels::launch_fill_random(stream, o.A.get(), size_t(k) * m, p.fill, 0x5eed0001ull + uint64_t(m));
  NB_CUDA_LAUNCH();
  kernels::launch_fill_random(stream, o.B.get(), size_t(k) * n, p.fill, 0x5eed0002ull + uint64_t(n));
  NB_CUDA_LAUNCH();
  NB_CUDA(cudaStreamSynchronize(stream));
  set_scalar(o.alpha, p.scale, 1.0);
  set_scalar(o.beta, p.scale, 0.0);
}

// cublasGemmEx with the default algorithm.
std::function<void(cudaStream_t)> cublas_launch(CaseContext& ctx, Handles& h, const Precision& p, const Shape& s,
                                                Operands& o) {
  NB_CUBLAS(cublasSetStream(h.blas, ctx.stream()));
  NB_CUBLAS(cublasSetMathMode(h.blas, CUBLAS_DEFAULT_MATH));
  ctx.details()["algorithm"] = {{"api", "cublasGemmEx"}, {"algo", "CUBLAS_GEMM_DEFAULT"}};
  const int m = int(s.m), n = int(s.n), k = int(s.k);
  return [&h, &p, &o, m, n, k](cudaStream_t) {
    NB_CUBLAS(cublasGemmEx(h.blas, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &o.alpha, o.A.get(), p.ab, k, o.B.get(), p.ab, k,
                           &o.beta, o.C.get(), p.c, m, p.compute, CUBLAS_GEMM_DEFAULT));
  };
}

// cublasLtMatmul: the descriptors, the heuristic's candidates and the chosen algorithm.
class LtMatmul {
 public:
  LtMatmul(CaseContext& ctx, Handles& h, const Precision& p, const Shape& s, Operands& o);
  void launch(const cublasLtMatmulAlgo_t& algo, cudaStream_t st) const {
    NB_CUBLAS(cublasLtMatmul(h_.lt, d_.op, &o_.alpha, o_.A.get(), d_.a, o_.B.get(), d_.b, &o_.beta, o_.C.get(), d_.c,
                             o_.C.get(), d_.c, &algo, h_.workspace.get(), h_.workspace.bytes(), st));
  }
  // Chooses the algorithm (from the algorithm cache, else by timing) and writes details.algorithm.
  void choose(CaseContext& ctx, const Precision& p, const Shape& s);
  const cublasLtMatmulAlgo_t& chosen() const { return res_[best_].algo; }

 private:
  int64_t config_id(int i) const { return algo_json(res_[i].algo, res_[i]).value("id", int64_t(-1)); }
  double time_candidates(cudaStream_t stream, json& timed, int& rounds, int& tried);
  Handles& h_;
  Operands& o_;
  LtDesc d_;
  cublasLtMatmulHeuristicResult_t res_[8] = {};
  int returned_ = 0, best_ = 0;
};

// The bytes of a compute type's accumulator.
size_t compute_bytes(cublasComputeType_t c) {
  switch (c) {
    case CUBLAS_COMPUTE_16F:
    case CUBLAS_COMPUTE_16F_PEDANTIC: return 2;
    case CUBLAS_COMPUTE_64F:
    case CUBLAS_COMPUTE_64F_PEDANTIC: return 8;
    default: return 4;  // 32F and its fast modes, 32I
  }
}

uint32_t reduction_schemes(const Precision& p) {
  if (p.c_size >= compute_bytes(p.compute)) return CUBLASLT_REDUCTION_SCHEME_MASK;
  return CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
}

LtMatmul::LtMatmul(CaseContext& ctx, Handles& h, const Precision& p, const Shape& s, Operands& o) : h_(h), o_(o) {
  const int64_t m = s.m, n = s.n, k = s.k;
  NB_CUBLAS(cublasLtMatmulDescCreate(&d_.op, p.compute, p.scale));
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  NB_CUBLAS(cublasLtMatmulDescSetAttribute(d_.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  NB_CUBLAS(cublasLtMatmulDescSetAttribute(d_.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  NB_CUBLAS(cublasLtMatrixLayoutCreate(&d_.a, p.ab, uint64_t(k), uint64_t(m), k));
  NB_CUBLAS(cublasLtMatrixLayoutCreate(&d_.b, p.ab, uint64_t(k), uint64_t(n), k));
  NB_CUBLAS(cublasLtMatrixLayoutCreate(&d_.c, p.c, uint64_t(m), uint64_t(n), m));
  NB_CUBLAS(cublasLtMatmulPreferenceCreate(&d_.pref));
  const uint64_t ws = h.workspace.bytes();
  NB_CUBLAS(cublasLtMatmulPreferenceSetAttribute(d_.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  // A split-K algorithm that reduces its partial sums "in place" or in the output type rounds them
  // to an output narrower than the compute type (FP16 or BF16 for FP32 accumulation): a different
  // precision than the case names. On an H200 cuBLASLt chose such an algorithm (split-K 16,
  // output-type reduction) for FP16 at M=2 and 4, K=2048, and its sampled entries missed the FP32-
  // accumulation bound by up to 11x. Only partial sums kept in the compute type are allowed then.
  const uint32_t schemes = reduction_schemes(p);
  NB_CUBLAS(cublasLtMatmulPreferenceSetAttribute(d_.pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &schemes,
                                                 sizeof schemes));
  const cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(h.lt, d_.op, d_.a, d_.b, d_.c, d_.c, d_.pref, 8, res_, &returned_);
  if (hs != CUBLAS_STATUS_SUCCESS || returned_ == 0)
    ctx.skip(std::string("cuBLASLt offers no algorithm for ") + p.name + " " + std::to_string(m) + "x" +
             std::to_string(n) + "x" + std::to_string(k) + " on this GPU (" + cublasGetStatusName(hs) + ")",
             ReasonKind::unsupported);
}

// Times the heuristic's first four that it says run (nb::choose_by_timing: interleaved rounds, so
// that clock drift under the power cap hits every candidate alike, median with a tie margin; a
// full tie goes to the heuristic's higher rank). Long GEMMs (a run over 20 ms) take the
// heuristic's first choice, which is deterministic. Returns the chosen one's seconds per run.
double LtMatmul::time_candidates(cudaStream_t stream, json& timed, int& rounds, int& tried) {
  std::vector<AlgoCandidate> cand;
  for (int i = 0; i < std::min(returned_, 4); ++i)
    if (res_[i].state == CUBLAS_STATUS_SUCCESS) cand.push_back({i, res_[i].workspaceSize, "heuristic rank " + std::to_string(i)});
  Event e0, e1;
  e0.record(stream);
  launch(res_[cand.empty() ? 0 : cand[0].id].algo, stream);
  e1.record(stream);
  NB_CUDA(cudaEventSynchronize(e1.get()));
  double best_s = e1.seconds_since(e0);
  if (cand.size() > 1 && best_s < 0.02) {
    constexpr int kBurst = 3;
    auto time_one = [&](const AlgoCandidate& c) {
      launch(res_[c.id].algo, stream);  // untimed: warm
      e0.record(stream);
      for (int i = 0; i < kBurst; ++i) launch(res_[c.id].algo, stream);
      e1.record(stream);
      NB_CUDA(cudaEventSynchronize(e1.get()));
      return e1.seconds_since(e0) / kBurst;
    };
    const ChoiceOutcome out = choose_by_timing(cand, time_one);
    best_ = out.best().cand.id;
    best_s = out.best().median_s;
    timed = timings_to_json(out);
    rounds = out.rounds;
    tried = int(cand.size());
  } else if (!cand.empty()) {
    best_ = cand[0].id;
    tried = 1;
  }
  return best_s;
}

// A choice is kept in the algorithm cache by rank, with the algorithm's config id to check that
// the heuristic still lists it there.
void LtMatmul::choose(CaseContext& ctx, const Precision& p, const Shape& s) {
  const AlgoCacheKey ckey{"cublasLt-" + std::to_string(cublasLtGetVersion()), ctx.gpu().name,
                          std::string(p.name) + "_" + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
                              std::to_string(s.k) + "_tn",
                          "ws" + std::to_string(h_.workspace.bytes())};
  int tried = 0, rounds = 0;
  json timed = json::array();
  std::string source = "search";
  bool hit_from_file = false;
  const std::optional<AlgoCacheEntry> hit = ctx.algo_cache().get(ckey, &hit_from_file);
  if (hit && hit->algo >= 0 && hit->algo < std::min(returned_, 4) && res_[hit->algo].state == CUBLAS_STATUS_SUCCESS &&
      config_id(hit->algo) == hit->extra) {
    best_ = hit->algo;
    source = hit_from_file ? "file" : "process";
  } else {
    const double best_s = time_candidates(ctx.stream(), timed, rounds, tried);
    ctx.algo_cache().put(ckey, {best_, config_id(best_), uint64_t(res_[best_].workspaceSize), best_s, ""});
  }
  json a = algo_json(chosen(), res_[best_]);
  a["api"] = "cublasLtMatmul";
  a["heuristic_candidates"] = returned_;
  a["reduction_schemes_allowed"] = reduction_schemes(p);  // cublasLtReductionScheme_t bits
  a["autotuned_among"] = tried;
  a["heuristic_rank"] = best_;
  a["candidates"] = timed;
  a["rounds"] = rounds;
  a["from_cache"] = source != "search";
  a["source"] = source;
  if (source != "search") a["cached_median_us"] = hit->median_s * 1e6;
  ctx.details()["algorithm"] = a;
}

// Verification: poison C, run once more, check sampled entries against float64.
void verify_gemm(CaseContext& ctx, const Precision& p, const Shape& s, Operands& o,
                 const std::function<void(cudaStream_t)>& launch, size_t verify_samples) {
  const int64_t m = s.m, n = s.n, k = s.k;
  cudaStream_t stream = ctx.stream();
  NB_CUDA(cudaMemsetAsync(o.C.get(), 0xFF, o.c_bytes, stream));
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
    if (a.empty()) a = fetch(o.A.get(), p.ab, p.ab_size, size_t(i) * size_t(k), size_t(k));
    auto& b = cols[j];
    if (b.empty()) b = fetch(o.B.get(), p.ab, p.ab_size, size_t(j) * size_t(k), size_t(k));
    const double got = fetch(o.C.get(), p.c, p.c_size, size_t(i) + size_t(j) * size_t(m), 1)[0];
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

}  // namespace

void run_gemm(CaseContext& ctx, const Precision& p, const std::string& api, const Shape& s, size_t verify_samples) {
  Operands o;
  make_operands(ctx, p, s, o);
  Handles& h = ctx.gpu_resources().get<Handles>();
  std::function<void(cudaStream_t)> launch;
  std::optional<LtMatmul> lt;
  if (api == "cublas") {
    launch = cublas_launch(ctx, h, p, s, o);
  } else {
    lt.emplace(ctx, h, p, s, o);
    lt->choose(ctx, p, s);
    launch = [&lt](cudaStream_t st) { lt->launch(lt->chosen(), st); };
  }
  ctx.measure(launch);
  const double work = 2.0 * double(s.m) * double(s.n) * double(s.k) / 1e12;
  ctx.set_throughput(p.integer ? kTops : kTflops, work, peak_key(p, ctx.gpu()));
  verify_gemm(ctx, p, s, o, launch, verify_samples);
}

}  // namespace nb::gemm
