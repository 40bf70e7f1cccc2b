// cuDNN convolution plumbing shared by the families that run convolutions (conv: one layer or the
// network's convolutions; train and train_dp: the whole ResNet-50 training step): the library
// handles of each GPU and the choices of the session (kept by the Session), precisions,
// descriptors of one convolution, the algorithm choice of each pass and running a pass.
// Uses cuDNN's convolution API (cudnnFind*AlgorithmEx / cudnnConvolution*), which every cuDNN 9
// carries, from 9.0..9.10 (the last with Pascal) to today's.
#pragma once
#include <cublas_v2.h>
#include <cudnn.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/benchmark.hpp"
#include "kernels/common/kernels.cuh"
#include "base/resources.hpp"

namespace nb::cudnn {

void check(cudnnStatus_t s, const char* expr, const char* file, int line);
#define NB_CUDNN(expr) ::nb::cudnn::check((expr), #expr, __FILE__, __LINE__)

// The library handles of one GPU: cuDNN's, made with the GPU current, and a cuBLAS handle made
// on first use (the training step's FC; whoever uses it sets its stream and workspace).
// Destroyed with the Session, with their GPU current.
class Handles {
 public:
  explicit Handles(int device);
  ~Handles();
  Handles(const Handles&) = delete;
  Handles& operator=(const Handles&) = delete;
  cudnnHandle_t cudnn() const { return cudnn_; }
  cublasHandle_t cublas();

 private:
  int device_;
  cudnnHandle_t cudnn_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  std::mutex mu_;
};

struct ChoiceMemo;

// What the convolutions of a case borrow from the Session: the handles of a GPU, the choices
// made so far, the algorithm cache (--algo-cache) and the search workspace's cap
// (NODEBENCH_CUDNN_WORKSPACE_MIB in bytes).
struct Libraries {
  Handles* handles = nullptr;
  ChoiceMemo* memo = nullptr;
  AlgoCache* cache = nullptr;
  size_t workspace_cap = 0;
  // NODEBENCH_CUDNN_SEARCH: seeded (default) starts a layer's search from its choice at the
  // nearest batch already chosen in the session; full runs cuDNN's whole search every time.
  bool seeded_search = true;
  cudnnHandle_t cudnn() const { return handles->cudnn(); }
};
// Those of `device` (any GPU of the case: train_dp drives several): the handles are kept in the
// session's store, one per device.
Libraries libraries(CaseContext& ctx, int device);
// The same from a store, a cache and settings of one's own (the GPU tests of the training step).
Libraries libraries(ResourceStore& session, AlgoCache& cache, const Settings& settings, int device);

// The precision of a convolution: storage type, math type (FMA only for FP32, tensor cores allowed
// for TF32 and FP16; FP16 accumulates in FP32), element size, and the compute capability it needs.
struct Prec {
  const char* name;
  cudnnDataType_t data;
  cudnnMathType_t math;
  size_t elem;
  kernels::FillType fill;
  int min_cc;
};
const Prec& prec_by_name(const std::string& name);  // fp32, tf32, fp16; throws nb::Error otherwise
const std::vector<const Prec*>& all_precs();        // fp32, tf32, fp16
Availability prec_available(const Prec& p, const GpuInfo& g);

// One convolution: input n x c x h x w, k filters of r x s over c/groups channels.
struct ConvShape {
  int64_t n = 1;
  int c = 1, h = 1, w = 1, k = 1, r = 1, s = 1, stride = 1, pad = 0, groups = 1;
  // A square input hw x hw and a square filter r x r.
  static ConvShape square(int64_t n, int c, int hw, int k, int r, int stride, int pad, int groups = 1) {
    return {n, c, hw, hw, k, r, r, stride, pad, groups};
  }
};

enum class Pass { fwd, bwd_data, bwd_filter };
const char* pass_name(Pass p);

// The descriptors of one convolution (no buffers). Not copyable.
class ConvDesc {
 public:
  ConvDesc(const ConvShape& shape, const Prec& prec, bool nhwc);
  ~ConvDesc();
  ConvDesc(const ConvDesc&) = delete;
  ConvDesc& operator=(const ConvDesc&) = delete;

  const ConvShape& shape() const { return shape_; }
  const Prec& prec() const { return prec_; }
  bool nhwc() const { return fmt_ == CUDNN_TENSOR_NHWC; }
  int out_h() const { return out_h_; }
  int out_w() const { return out_w_; }
  size_t x_elems() const { return size_t(shape_.n) * shape_.c * shape_.h * shape_.w; }
  size_t y_elems() const { return size_t(shape_.n) * shape_.k * out_h_ * out_w_; }
  size_t w_elems() const { return size_t(shape_.k) * (shape_.c / shape_.groups) * shape_.r * shape_.s; }
  // Multiply-adds x 2 of one pass (every pass does the same number).
  double flops() const { return 2.0 * double(y_elems()) * (shape_.c / shape_.groups) * shape_.r * shape_.s; }
  // A key for the algorithm choice: shape, layout and precision.
  std::string key() const;

  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;

 private:
  void release();
  ConvShape shape_;
  const Prec& prec_;
  cudnnTensorFormat_t fmt_;
  int out_h_ = 0, out_w_ = 0;
};

// The operands of the passes: fwd reads x, w and writes y; bwd_data reads w, dy and writes dx;
// bwd_filter reads x, dy and writes dw.
struct ConvBuffers {
  void* x = nullptr;
  void* w = nullptr;
  void* y = nullptr;
  void* dy = nullptr;
  void* dx = nullptr;
  void* dw = nullptr;
};

// The algorithm chosen for one pass.
struct AlgoChoice {
  int algo = -1;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  size_t workspace = 0;
  int candidates = 0;      // how many cuDNN's search returned
  float find_ms = 0;       // cuDNN's own time of the chosen one
  double trial_us = 0;     // our median over the trial rounds (0 when not timed again)
  bool from_cache = false; // reused: an earlier choice of this process, or the algorithm cache file
  // search (cuDNN's whole search), seeded (the candidates of the same layer's choice at the nearest
  // batch and cuDNN's two best by heuristics), process (an earlier choice of this process),
  // file (--algo-cache)
  std::string source = "search";
  int64_t seeded_from = 0;  // seeded: the batch whose choice seeded it
  int rounds = 0;          // interleaved timing rounds of the search (0 when reused)
  nlohmann::json trials = nlohmann::json::array();  // every candidate: algo, math, samples, median, or why rejected
};

// A candidate as a choice timed it (the seeds of the same layer's choice at another batch).
struct TimedAlgo {
  int algo = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  double median_s = 0;
};

// The session's algorithm choices, per (GPU model, cuDNN version, descriptor key, pass): a choice
// made once is reused by every later case of the session (source "process"). `seeds`: per (GPU
// model, cuDNN version, descriptor key without the batch, pass), the candidates each batch's
// choice timed, from which the same layer's choice at another batch starts.
struct ChoiceMemo {
  std::mutex mu;
  std::map<std::string, AlgoChoice> choices;
  std::map<std::string, std::map<int64_t, std::vector<TimedAlgo>>> seeds;
};

// The candidates a seeded search starts from (pure, unit-tested): of the timed candidates of the
// batch nearest to `batch` (by the ratio of the batches; the smaller one on a tie), those within
// `band` times the fastest median. Empty when there is no seed. `from` gets the seed's batch.
std::vector<TimedAlgo> seed_candidates(const std::map<int64_t, std::vector<TimedAlgo>>& seeds, int64_t batch,
                                       double band, int64_t& from);
// A descriptor key without its batch ("n32_c64_..." -> "c64_...").
std::string batchless_key(const std::string& key);
// A seeded search's bound on a heuristic candidate's first run: 4x the seed's fastest median scaled
// from its batch to this one, at least 1 ms; 0 (no bound) without a seed time.
double seeded_first_run_bound(double seed_fastest_s, int64_t batch, int64_t from);
bool first_run_too_slow(double first_run_s, double bound_s);

// The workspace the algorithm search may use: the cap (NODEBENCH_CUDNN_WORKSPACE_MIB, else 4 GiB),
// and never more than a quarter of the free memory.
size_t find_workspace_limit(const Libraries& libs);

// Chooses the algorithm of one pass by measurement (cuDNN's search, then every candidate that runs
// timed again warm here and chosen by nb::choose_by_timing), with the operands the pass reads and
// writes (contents are overwritten by the trial runs) and a search workspace. The choice is kept
// in the session's memo per (GPU model, cuDNN version, descriptor key, pass) and reused, and put
// in the algorithm cache, whose entry for the key is used instead of a search when it still runs.
AlgoChoice choose_algo(const Libraries& libs, ConvDesc& d, Pass pass, const ConvBuffers& b, DeviceBuffer& ws,
                       cudaStream_t stream, const std::string& gpu_model);

// Whether `algo` of `pass` computes the convolution through a transform (FFT or Winograd), which
// does fewer multiplications than the direct convolution: its rate counted in the direct
// convolution's work is an effective one, and may exceed the unit's peak.
bool transforms_arithmetic(Pass pass, int algo);

// One pass with a given algorithm; the status is returned, not thrown, so that a candidate that
// cuDNN's search listed but that does not run here can be set aside.
cudnnStatus_t try_pass(cudnnHandle_t h, ConvDesc& c, Pass pass, int algo, const ConvBuffers& b, void* ws,
                       size_t ws_bytes, float alpha = 1.f, float beta = 0.f);

// Runs one pass with the chosen algorithm: out = alpha * op(...) + beta * out. The descriptor's
// math type is set each time (an algorithm run under another pass's math type fails).
void run_pass(cudnnHandle_t h, ConvDesc& d, Pass pass, const AlgoChoice& ch, const ConvBuffers& b, void* ws,
              cudaStream_t s, float alpha = 1.f, float beta = 0.f);

}  // namespace nb::cudnn
