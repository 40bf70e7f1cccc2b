#include "cudnn_conv.hpp"
#include "bench/measure.hpp"

#include <algorithm>
#include <map>
#include <mutex>

#include "base/cublas_check.hpp"
#include "bench/settings.hpp"
#include "bench/algo_choice.hpp"
#include "base/stats.hpp"
#include "base/text.hpp"

namespace nb::cudnn {

using nlohmann::json;

void check(cudnnStatus_t s, const char* expr, const char* file, int line) {
  if (s == CUDNN_STATUS_SUCCESS) return;
  throw LibraryError(int(s), std::string(cudnnGetErrorString(s)) + " in `" + expr + "` at " + file + ":" +
                                 std::to_string(line));
}

Handles::Handles(int device) : device_(device) {
  DeviceGuard g(device);
  NB_CUDNN(cudnnCreate(&cudnn_));
}

Handles::~Handles() {
  int previous = 0;
  const bool had = cudaGetDevice(&previous) == cudaSuccess;
  (void)cudaSetDevice(device_);
  if (cublas_) (void)cublasDestroy(cublas_);
  if (cudnn_) (void)cudnnDestroy(cudnn_);
  if (had) (void)cudaSetDevice(previous);
}

cublasHandle_t Handles::cublas() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!cublas_) {
    DeviceGuard g(device_);
    NB_CUBLAS(cublasCreate(&cublas_));
  }
  return cublas_;
}

namespace {

// Every GPU's handles, in the session's store (a case of several GPUs needs each one's).
class HandlesByDevice {
 public:
  Handles& on(int device) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& h = all_[device];
    if (!h) h = std::make_unique<Handles>(device);
    return *h;
  }

 private:
  std::mutex mu_;
  std::map<int, std::unique_ptr<Handles>> all_;
};

}  // namespace

Libraries libraries(ResourceStore& session, AlgoCache& cache, const Settings& settings, int device) {
  Libraries l;
  l.handles = &session.get<HandlesByDevice>().on(device);
  l.memo = &session.get<ChoiceMemo>();
  l.cache = &cache;
  l.workspace_cap = size_t(settings.integer("NODEBENCH_CUDNN_WORKSPACE_MIB")) << 20;
  l.seeded_search = settings.choice("NODEBENCH_CUDNN_SEARCH") == "seeded";
  return l;
}

Libraries libraries(CaseContext& ctx, int device) {
  return libraries(ctx.session_resources(), ctx.algo_cache(), ctx.settings(), device);
}

namespace {

// 1 TiB of workspace is more than any GPU has; the cap keeps the shift to bytes from wrapping.
const SettingRegistrar kWorkspace({"NODEBENCH_CUDNN_WORKSPACE_MIB", SettingKind::integer, "cudnn_workspace_mib", 4096,
                                   1 << 20, false, "conv algorithm search workspace in MiB (default 4096)", "cudnn"});
const SettingRegistrar kSearch({"NODEBENCH_CUDNN_SEARCH", SettingKind::choice, "cudnn_search", "seeded", 0, false,
                                "=seeded|full a convolution's algorithm search: seeded (default) times the candidates "
                                "of the same layer's choice at the nearest batch of the run and cuDNN's two best by "
                                "heuristics; full runs cuDNN's whole search (cudnnFind) at every batch",
                                "cudnn", false, false, nullptr, "", {"seeded", "full"}});

const Prec kPrecs[] = {
    {"fp32", CUDNN_DATA_FLOAT, CUDNN_FMA_MATH, 4, kernels::FillType::f32, 0},
    {"tf32", CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH, 4, kernels::FillType::f32, 80},
    {"fp16", CUDNN_DATA_HALF, CUDNN_TENSOR_OP_MATH, 2, kernels::FillType::f16, 0},
};
}  // namespace

const std::vector<const Prec*>& all_precs() {
  static const std::vector<const Prec*> all = {&kPrecs[0], &kPrecs[1], &kPrecs[2]};
  return all;
}

const Prec& prec_by_name(const std::string& n) {
  for (const auto& p : kPrecs)
    if (n == p.name) return p;
  throw Error("unknown conv precision " + n);
}

Availability prec_available(const Prec& p, const GpuInfo& g) {
  if (g.cc() < p.min_cc)
    return Availability::no(std::string(p.name) + " needs TF32 tensor cores (compute capability 8.0 or newer); this GPU has " +
                            g.cc_string());
  return Availability::yes();
}

const char* pass_name(Pass p) { return p == Pass::fwd ? "fwd" : p == Pass::bwd_data ? "bwd_data" : "bwd_filter"; }

ConvDesc::ConvDesc(const ConvShape& shape, const Prec& prec, bool nhwc)
    : shape_(shape), prec_(prec), fmt_(nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW) {
  try {
    NB_CUDNN(cudnnCreateTensorDescriptor(&x));
    NB_CUDNN(cudnnCreateTensorDescriptor(&y));
    NB_CUDNN(cudnnCreateFilterDescriptor(&w));
    NB_CUDNN(cudnnCreateConvolutionDescriptor(&conv));
    NB_CUDNN(cudnnSetTensor4dDescriptor(x, fmt_, prec_.data, int(shape_.n), shape_.c, shape_.h, shape_.w));
    NB_CUDNN(cudnnSetFilter4dDescriptor(w, prec_.data, fmt_, shape_.k, shape_.c / shape_.groups, shape_.r, shape_.s));
    // FLOAT compute type for every precision: FP16 accumulates in FP32 (and runs on the FP32 units
    // below compute capability 7.0).
    NB_CUDNN(cudnnSetConvolution2dDescriptor(conv, shape_.pad, shape_.pad, shape_.stride, shape_.stride, 1, 1,
                                             CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    NB_CUDNN(cudnnSetConvolutionGroupCount(conv, shape_.groups));
    NB_CUDNN(cudnnSetConvolutionMathType(conv, prec_.math));
    int on = 0, oc = 0;
    NB_CUDNN(cudnnGetConvolution2dForwardOutputDim(conv, x, w, &on, &oc, &out_h_, &out_w_));
    NB_CUDNN(cudnnSetTensor4dDescriptor(y, fmt_, prec_.data, on, oc, out_h_, out_w_));
  } catch (...) {
    release();
    throw;
  }
}

ConvDesc::~ConvDesc() { release(); }

void ConvDesc::release() {
  if (conv) cudnnDestroyConvolutionDescriptor(conv);
  if (w) cudnnDestroyFilterDescriptor(w);
  if (y) cudnnDestroyTensorDescriptor(y);
  if (x) cudnnDestroyTensorDescriptor(x);
  conv = nullptr;
  w = nullptr;
  x = y = nullptr;
}

std::string ConvDesc::key() const {
  const ConvShape& s = shape_;
  return "n" + std::to_string(s.n) + "_c" + std::to_string(s.c) + "_" + std::to_string(s.h) + "x" + std::to_string(s.w) +
         "_k" + std::to_string(s.k) + "_" + std::to_string(s.r) + "x" + std::to_string(s.s) + "_s" +
         std::to_string(s.stride) + "_p" + std::to_string(s.pad) + "_g" + std::to_string(s.groups) + "_" + prec_.name +
         (nhwc() ? "_nhwc" : "_nchw");
}

// With 1 GiB, the H200 sweeps of 2026-11-29 lost the fast algorithms of the largest layers from
// batch 512 up (ResNet-50's first convolution's filter gradient at batch 1024 fell back to
// algorithm 0, 100x slower). 4 GiB is the default limit TensorFlow gives cuDNN.
size_t find_workspace_limit(const Libraries& libs) {
  size_t free_b = 0, total_b = 0;
  NB_CUDA(cudaMemGetInfo(&free_b, &total_b));
  return std::min<size_t>(libs.workspace_cap, free_b / 4);
}

cudnnStatus_t try_pass(cudnnHandle_t h, ConvDesc& c, Pass pass, int algo, const ConvBuffers& b, void* ws,
                       size_t ws_bytes, float alpha, float beta) {
  if (pass == Pass::fwd)
    return cudnnConvolutionForward(h, &alpha, c.x, b.x, c.w, b.w, c.conv, cudnnConvolutionFwdAlgo_t(algo), ws, ws_bytes,
                                   &beta, c.y, b.y);
  if (pass == Pass::bwd_data)
    return cudnnConvolutionBackwardData(h, &alpha, c.w, b.w, c.y, b.dy, c.conv, cudnnConvolutionBwdDataAlgo_t(algo), ws,
                                        ws_bytes, &beta, c.x, b.dx);
  return cudnnConvolutionBackwardFilter(h, &alpha, c.x, b.x, c.y, b.dy, c.conv, cudnnConvolutionBwdFilterAlgo_t(algo), ws,
                                        ws_bytes, &beta, c.w, b.dw);
}

bool transforms_arithmetic(Pass pass, int algo) {
  switch (pass) {
    case Pass::fwd:
      return algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT || algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING ||
             algo == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD || algo == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
    case Pass::bwd_data:
      return algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT || algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING ||
             algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD || algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
    case Pass::bwd_filter:
      return algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT || algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING ||
             algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD ||
             algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED;
  }
  return false;
}

void run_pass(cudnnHandle_t h, ConvDesc& c, Pass pass, const AlgoChoice& ch, const ConvBuffers& b, void* ws,
              cudaStream_t s, float alpha, float beta) {
  NB_CUDNN(cudnnSetStream(h, s));
  NB_CUDNN(cudnnSetConvolutionMathType(c.conv, ch.math));
  NB_CUDNN(try_pass(h, c, pass, ch.algo, b, ws, ch.workspace, alpha, beta));
}

}  // namespace nb::cudnn
