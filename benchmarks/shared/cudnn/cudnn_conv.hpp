// cuDNN convolution plumbing shared by the families that run convolutions (conv: one layer or the
// network's convolutions; train: the whole ResNet-50 training step): the cuDNN handle per GPU,
// precisions, descriptors of one convolution, the algorithm choice of each pass and running a pass.
// Uses cuDNN's convolution API (cudnnFind*AlgorithmEx / cudnnConvolution*), which every cuDNN 9
// carries, from 9.0..9.10 (the last with Pascal) to today's.
#pragma once
#include <cudnn.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/benchmark.hpp"
#include "kernels/common/kernels.cuh"
#include "base/resources.hpp"

namespace nb::cudnn {

void check(cudnnStatus_t s, const char* expr, const char* file, int line);
#define NB_CUDNN(expr) ::nb::cudnn::check((expr), #expr, __FILE__, __LINE__)

// One cuDNN handle per device, kept for the process.
cudnnHandle_t handle_for(int device);

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
  std::string source = "search";  // search, process (an earlier choice of this process), file (--algo-cache)
  int rounds = 0;          // interleaved timing rounds of the search (0 when reused)
  nlohmann::json trials = nlohmann::json::array();  // every candidate: algo, math, samples, median, or why rejected
};

// The workspace the algorithm search may use: NODEBENCH_CUDNN_WORKSPACE_MIB, else 4 GiB, and never
// more than a quarter of the free memory.
size_t find_workspace_limit();

// Chooses the algorithm of one pass by measurement (cuDNN's search, then every candidate that runs
// timed again warm here and chosen by nb::choose_by_timing), with the operands the pass reads and
// writes (contents are overwritten by the trial runs) and a search workspace. The choice is kept
// for the process per (GPU model, cuDNN version, descriptor key, pass) and reused, and put in
// nb::global_algo_cache(), whose entry for the key is used instead of a search when it still runs.
AlgoChoice choose_algo(cudnnHandle_t h, ConvDesc& d, Pass pass, const ConvBuffers& b, DeviceBuffer& ws,
                       cudaStream_t stream, const std::string& gpu_model);

// Runs one pass with the chosen algorithm: out = alpha * op(...) + beta * out. The descriptor's
// math type is set each time (an algorithm run under another pass's math type fails).
void run_pass(cudnnHandle_t h, ConvDesc& d, Pass pass, const AlgoChoice& ch, const ConvBuffers& b, void* ws,
              cudaStream_t s, float alpha = 1.f, float beta = 0.f);

}  // namespace nb::cudnn
