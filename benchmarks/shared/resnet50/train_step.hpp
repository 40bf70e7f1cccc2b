// One ResNet-50 v1.5 training step on cuDNN and cuBLAS (family train): forward and backward of
// every layer (convolutions with the repeatable algorithm choice of cudnn_conv, batch norm in
// training mode with its ReLU and residual add fused where it can be (train_fusion.hpp: cuDNN's
// fused calls for FP16 NHWC, the step's own kernels elsewhere, or unfused), max pool, global
// average pool, the FC by cublasGemmEx, softmax cross-entropy) and one multi-tensor SGD momentum
// update of every parameter on FP32 master weights.
// Mixed precision (fp16): FP16 activations and compute weights, FP32 master weights, dynamic loss
// scaling (a step with non-finite gradients is skipped and halves the scale). Every buffer of the step comes from one tracking arena, so its peak is measured.
#pragma once
#include <array>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <cublas_v2.h>
#include <nlohmann/json.hpp>

#include "shared/cudnn/cudnn_conv.hpp"
#include "resnet50_net.hpp"
#include "train_fusion.hpp"

namespace nb::train {

struct BnRun;  // train_bn_layer.hpp
}  // namespace nb::train
namespace nb::resnet50 {
struct StepPlan;  // step_memory.hpp
}
namespace nb::train {

// The layer kinds the step's time is split into (metrics time_<kind>_ms). `bn` is batch norm with
// whatever is fused into it (bn_act: the ReLU and the residual add on the fused paths);
// `elementwise` is what runs apart (the ReLU, add + ReLU and ReLU-gradient kernels of the unfused
// path).
enum class Kind : int { conv, bn, elementwise, pool, fc, loss, update };
constexpr int kKinds = 7;
const char* kind_name(Kind k);  // conv, bn, elementwise, pool, fc, loss, update

// cuBLAS's workspace, set on the step's handle from the arena (32 MiB: cuBLAS's advice for Hopper).
constexpr size_t kCublasWorkspace = size_t(32) << 20;

struct StepConfig {
  const cudnn::Prec* prec = nullptr;
  bool nhwc = false;  // the layout the step's activations and convolutions run in (details.conv_layout)
  // The images are fed NCHW while the step runs NHWC (nhwc true; step_runs_nhwc in train_fusion.hpp):
  // each step converts them into an NHWC buffer of its memory plan first (its time in the step,
  // in the profile's `conv` kind with the stem). The images' buffer stays NCHW, as a user feeds it.
  bool images_nchw = false;
  int64_t batch = 1;
  float lr = 0.02f, momentum = 0.9f, weight_decay = 5e-5f;
  float loss_scale = 1.f;  // the initial loss scale (default_loss_scale); fp16 adapts it, others keep it
  uint64_t data_seed = 0;  // added to the seeds of the images and labels (each GPU of train_dp its own batch)
  Fusion fusion = Fusion::on;  // NODEBENCH_TRAIN_FUSION (train_fusion.hpp)
  kernels::BnGridTuning bn_grid;  // the own batch-norm reductions' grid (bn_grid_setting, train_fusion.hpp)
  // Whether buffers not needed at the same time share memory (step_memory.hpp); false gives every
  // one its own, for the GPU test that the planned step computes what the unplanned one does.
  bool share_memory = true;
};
// cfg.nhwc and cfg.images_nchw for images in `input_nhwc` layout and a step that runs in NHWC or not.
inline void set_layouts(StepConfig& cfg, bool input_nhwc, bool runs_nhwc) {
  cfg.nhwc = runs_nhwc;
  cfg.images_nchw = runs_nhwc && !input_nhwc;
}
// details.conv_layout: "nhwc" or "nchw".
inline const char* conv_layout_name(const StepConfig& cfg) { return cfg.nhwc ? "nhwc" : "nchw"; }

// Called by backward once the weight gradients of params()[first, end) are written (enqueued on
// the stream): after the FC, after each bottleneck block, after the stem. Ranges come in
// decreasing order and together cover every parameter once.
using GradHook = std::function<void(size_t first, size_t end)>;
// The gradient buffers (train_dp all-reduces them): the compute segment in the storage type
// (FP16 under mixed precision, else FP32) and the FP32 segment, each params()' offsets apart.
struct GradBuffers {
  void* a = nullptr;
  bool a_half = false;
  size_t n_a = 0;
  float* b = nullptr;
  size_t n_b = 0;
};
float default_loss_scale(const cudnn::Prec& p);  // 1024 for fp16, 1 otherwise
// fp16: good steps in a row after which the loss scale doubles (as automatic mixed precision).
constexpr int kScaleGrowthInterval = 2000;

// An allocation the device could not make.
struct OutOfMemory {
  std::string what;
  size_t bytes = 0, free_bytes = 0;
  std::string message() const;
};

// Tracked device allocations: the current total, its high-water mark and the bytes of each kind
// (parameters, images, statistics, the planned region, the cuBLAS workspace, other).
class Arena {
 public:
  void* alloc(size_t bytes, const std::string& what, const std::string& kind = "other");  // throws OutOfMemory
  size_t current() const { return current_; }
  size_t peak() const { return peak_; }
  const std::map<std::string, size_t>& by_kind() const { return kinds_; }

 private:
  std::vector<DeviceBuffer> bufs_;
  std::map<std::string, size_t> kinds_;
  size_t current_ = 0, peak_ = 0;
};

// A parameter tensor: in the compute segment (conv and FC weights, storage type) or the FP32
// segment (batch-norm gamma/beta, FC bias).
struct ParamRef {
  std::string name;
  bool fp32_segment = false;
  size_t offset = 0, count = 0;
};

class TrainStep {
 public:
  // `libs`: the GPU's cuDNN and cuBLAS handles and the session's algorithm choices
  // (cudnn::libraries); the step sets the cuBLAS handle's stream and workspace.
  TrainStep(const StepConfig& cfg, const cudnn::Libraries& libs, int device, const std::string& gpu_model,
            cudaStream_t stream);
  ~TrainStep();
  TrainStep(const TrainStep&) = delete;
  TrainStep& operator=(const TrainStep&) = delete;

  // Allocates every buffer (throws OutOfMemory), chooses each convolution pass's algorithm (a
  // search workspace outside the arena, freed after), and initialises weights, images and labels.
  void setup();

  void forward(cudaStream_t s);
  void backward(cudaStream_t s, const GradHook& on_grads_ready = {});
  void update(cudaStream_t s);
  void step(cudaStream_t s) { forward(s); backward(s); update(s); }
  // Captures step() into a CUDA graph (nothing runs). False, with the reason, when the capture or
  // the instantiation fails; the step then stays eager. Call after setup().
  bool capture_graph(std::string& why);
  bool has_graph() const;
  // One step: the graph when captured (one launch, whatever the host's cost of issuing the ~1000
  // library calls and kernels of a step), else step().
  void run(cudaStream_t s);
  // Host seconds to issue one eager step (queued behind a blocking kernel, so the GPU's speed
  // does not enter), the median of `reps`; and seconds per eager step issued back to back for at
  // least `min_s` (at least 3 steps): what a loop issuing the calls one by one sustains.
  double host_issue_s(int reps);
  double eager_step_s(double min_s);
  float read_loss();  // the loss of the last forward (synchronises)
  // The current loss scale (the one of the last backward until update adapts it) and the steps
  // skipped so far for non-finite gradients (fp16; synchronise).
  float loss_scale();
  int skipped_steps();

  // Runs `steps` steps with events between the operations: ms per step of each kind (median).
  std::array<double, kKinds> profile(int steps);
  // Whether a profiled step could not be queued in full before the blocking kernel gave up (its
  // per-kind times then include the host's issue cost).
  bool profile_host_bound() const { return profile_host_bound_; }

  // Sampled-point checks of the last forward: the first convolution and the FC against float64
  // dot products of their stored inputs. Adds to `failures`, sets `first` to the first failure.
  nlohmann::json verify_samples(size_t samples, size_t& failures, std::string& first);

  // For the gradient check: the parameters, their (unscaled, between backward and update) gradients and the
  // master weights (set_param also updates the compute copy).
  const std::vector<ParamRef>& params() const { return params_; }
  GradBuffers grad_buffers() const;
  // The optimizer's state as (device pointer, bytes): master weights, momentum, the FP16 compute
  // copy, the loss-scaling state. train_dp broadcasts it to make every GPU's step identical.
  std::vector<std::pair<void*, size_t>> state_buffers() const;
  std::vector<float> gradients(const ParamRef& p);
  float param(const ParamRef& p, size_t i);
  void set_param(const ParamRef& p, size_t i, float v);
  // For the fused-versus-unfused test, which judges differences by how far rounding-sized changes
  // move this network: every master weight w becomes f(w, i) (i: its index over the compute
  // segment, then the FP32 segment; the compute copy follows), and every element v of the images
  // (as stored: FP32 or FP16 values) becomes g(v, i), stored in the storage type.
  void map_weights(const std::function<float(float, size_t)>& f);
  void map_images(const std::function<double(double, size_t)>& g);

  // The loss's inputs and output of the last forward, for a host reference: logits (FP32), the FC
  // bias, the labels, the loss and dlogits (unscaled to FP32 from the storage type, still scaled).
  struct LossView {
    std::vector<float> logits, bias, dlogits;
    std::vector<int32_t> labels;
    float loss = 0;
  };
  LossView loss_view();

  // Batch norm layer `layer` (in params() order of the convolutions): running mean, running
  // variance, saved mean, saved inverse standard deviation (4 x channels, FP32; synchronises).
  std::vector<float> bn_statistics(size_t layer);
  // details.fusion: which path each batch norm took (train_fusion.hpp).
  nlohmann::json fusion_details() const;
  // details.bn_traffic: the bytes the batch norms on the step's own kernels must move per pass
  // (kernels/train/bn_traffic.hpp), summed over those layers, and how many layers that is.
  nlohmann::json bn_traffic() const;

  size_t peak_bytes() const { return arena_.peak(); }
  // The largest workspace of one operation (a convolution pass or a batch norm), batch norm's
  // reserve spaces and cuBLAS's workspace.
  size_t workspace_bytes() const;
  // details.memory_plan_bytes: the arena's bytes by kind (their sum is peak_bytes), the planned
  // region's total, the most it needs at one operation and what it holds there by kind, and what
  // each kind would take with every buffer apart (step_memory.hpp).
  nlohmann::json memory_details() const;
  nlohmann::json algorithms() const;
  const StepConfig& config() const { return cfg_; }

 private:
  struct Layer;
  struct Impl;
  bool profile_host_bound_ = false;
  void mark(Kind k, cudaStream_t s);
  // Batch norm of L with its activation into L.out (residual: the add's other input). Backward
  // from dy at L.out into dx; add_relu: dz receives the residual branch's gradient (every path).
  void bn_fwd(Layer& L, const void* residual, cudaStream_t s);
  void bn_bwd(Layer& L, void* dy, void* dx, void* dz, cudaStream_t s);
  BnRun bn_run(const Layer& L, bool forward) const;     // what train_bn_layer runs L with
  void bn_prepare(Layer& L);                            // the path and what it needs (setup)
  void bn_check_cudnn(Layer& L, const void* residual);  // one fused call each way; falls back when not supported
  // setup's parts (train_step_setup.cpp).
  void setup_params();
  void setup_layers();
  void plan_memory();
  void choose_algorithms();
  void bind(const resnet50::StepPlan& plan, void* base);
  void init_values();
  void make_update_table();
  void conv_fwd(Layer& L, cudaStream_t s);
  void conv_bwd(Layer& L, const void* dy, void* dx, float beta, cudaStream_t s);

  StepConfig cfg_;
  cudnn::Libraries libs_;
  int device_;
  std::string gpu_model_;
  cudaStream_t stream_;
  const resnet50::Net& net_;
  bool half_ = false;
  size_t elem_ = 4;
  Arena arena_;
  std::unique_ptr<Impl> impl_;
  std::vector<ParamRef> params_;
};

}  // namespace nb::train
