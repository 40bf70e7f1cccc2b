// Internal to the train family: the step's per-layer state and its buffers (train_step.cpp
// builds and runs them; train_step_io.cpp reads them back for the checks).
#pragma once
#include <array>
#include <memory>
#include <vector>

#include "kernels/train/train_bn_kernels.cuh"
#include "kernels/train/train_kernels.cuh"
#include "step_memory.hpp"
#include "train_bn_layer.hpp"
#include "train_step.hpp"

namespace nb::train {

// A device buffer of `bytes`, or OutOfMemory naming `what` (the step's buffers outside and inside
// its arena).
DeviceBuffer device_or_oom(size_t bytes, const std::string& what);

// One convolution with its batch norm: descriptors, algorithms, and the buffers it reads/writes.
struct TrainStep::Layer {
  const resnet50::ConvSpec* spec = nullptr;
  std::unique_ptr<cudnn::ConvDesc> d;
  cudnn::AlgoChoice fwd, bwd_data, bwd_filter;
  bool data_grad = true;  // false for the first convolution
  // Where the layer's tensors are: in the step's planned region (step_memory.hpp; x of the stem:
  // the images). out: where the batch norm with its activation writes (the ReLU'd output, the
  // block output, the projection's scratch). The gradients: at out (g_out), at y (g_y), at x (g_in;
  // conv1's: the block input's), at the add's other input (g_res, conv3's dz).
  void* x = nullptr;
  void* y = nullptr;
  void* out = nullptr;
  void* add_scratch = nullptr;  // unfused batch norm + add: its output before the add
  void *g_out = nullptr, *g_y = nullptr, *g_in = nullptr, *g_res = nullptr;
  // Each operation's workspace (bytes: the algorithm's for the convolutions, need's for batch norm).
  void *ws_conv_fwd = nullptr, *ws_bn_fwd = nullptr, *ws_bn_bwd = nullptr, *ws_conv_bwd = nullptr;
  void* w = nullptr;      // compute weights
  void* dw = nullptr;     // weight gradient (storage type)
  size_t w_off = 0;       // in the compute segment
  cudnnTensorDescriptor_t bn = nullptr;
  float *gamma = nullptr, *beta = nullptr, *dgamma = nullptr, *dbeta = nullptr;
  float *run_mean = nullptr, *run_var = nullptr, *save_mean = nullptr, *save_inv = nullptr;
  void* bn_reserve = nullptr;  // batch norm's reserve space: written by forward, read by backward
  BnNeeds bn_need;             // its workspaces and reserve space on its path
  bool relu_from_x = false;    // its backward recomputes the ReLU's mask from its input: out is not kept
  BnAct act = BnAct::relu;     // what follows the batch norm (train_fusion.hpp)
  BnChoice bn_choice;          // the path it runs, and why
  kernels::BnShape shape;      // for the step's own batch-norm kernels
  kernels::BnGeometry geo;
};

struct TrainStep::Impl {
  cudnnHandle_t h = nullptr;
  cublasHandle_t cb = nullptr;
  std::vector<Layer> layers;
  std::vector<void*> block_out;  // per block
  void* image = nullptr;
  void* pool_out = nullptr;
  uint8_t* pool_arg = nullptr;  // the max pool's argmax: the step's own max pool (fused paths), else cuDNN's
  kernels::PoolDims pool_dims;
  cudnnPoolingDescriptor_t pool = nullptr;
  cudnnTensorDescriptor_t pool_desc = nullptr;
  void* pooled = nullptr;    // [N, 2048]
  void* g_pooled = nullptr;  // its gradient
  void* g_last = nullptr;    // the gradient at the last block's output
  resnet50::StepPlan plan;   // where the region's buffers are (step_memory.hpp)
  void* region = nullptr;
  float* logits = nullptr;
  void* dlogits = nullptr;
  int32_t* labels = nullptr;
  float* loss = nullptr;
  void* cublas_ws = nullptr;
  cudaGraphExec_t graph_exec = nullptr;  // the whole step, once capture_graph succeeded
  // Parameters: compute segment (storage type copy when fp16, else the master itself) and FP32.
  size_t n_a = 0, n_b = 0;
  float *master_a = nullptr, *mom_a = nullptr, *master_b = nullptr, *mom_b = nullptr, *grad_b = nullptr;
  void *compute_a = nullptr, *grad_a = nullptr;
  size_t fc_w_off = 0, fc_b_off = 0;
  cudnnBatchNormMode_t bn_mode = CUDNN_BATCHNORM_SPATIAL;
  cudnnActivationDescriptor_t relu = nullptr;  // for cuDNN's fused batch norm
  int sms = 1;                                 // multiprocessors: the batch-norm kernels' grid
  kernels::MtTable update_table;               // the multi-tensor update over both parameter segments

  // Loss scaling state (device): the scale, and found (non-finite gradients this step), good
  // (steps in a row without), skipped (steps skipped so far).
  float* scale = nullptr;
  int* ls_flags = nullptr;  // [0] found, [1] good, [2] skipped
  // Profiling.
  bool profiling = false;
  std::vector<Event> events;
  std::vector<Kind> kinds;
  size_t n_events = 0;
};

}  // namespace nb::train
