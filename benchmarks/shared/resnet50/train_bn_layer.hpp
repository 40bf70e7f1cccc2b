// One batch norm of the training step with what follows it (ReLU, residual add + ReLU, or
// nothing), forward in training mode and backward, on the path chosen for it (train_fusion.hpp):
// cuDNN's fused *Ex calls, the step's own kernels, or unfused (cuDNN's batch norm, then separate
// ReLU / add kernels). The step runs every batch norm through these functions (train_step_bn.cpp),
// and the GPU test of single layers (tests/test_train_bn_layer_gpu.cpp) calls the same ones on
// its own buffers, so what it checks against a float64 reference is exactly what the step runs.
#pragma once
#include <cstddef>
#include <functional>

#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "kernels/train/train_bn_kernels.cuh"
#include "train_fusion.hpp"

namespace nb::train {

// As frameworks: epsilon 1e-5, the running averages' momentum 0.1 (running = 0.9 running + 0.1 batch).
constexpr double kBnEps = 1e-5, kBnFactor = 0.1;

// NHWC: the persistent mode of the *Ex calls is the one with cuDNN's fast NHWC kernels (as
// frameworks choose for channels-last training); the plain calls with an NHWC descriptor run a
// generic kernel about 40x slower. NCHW: the spatial mode (the persistent one is for NHWC).
inline cudnnBatchNormMode_t bn_mode_for(bool nhwc) {
  return nhwc ? CUDNN_BATCHNORM_SPATIAL_PERSISTENT : CUDNN_BATCHNORM_SPATIAL;
}
// The cuDNN ops of an activation kind on the cudnn path (BN, BN_ACTIVATION, BN_ADD_ACTIVATION).
cudnnBatchNormOps_t fused_ops(BnAct a);
const char* ops_name(cudnnBatchNormOps_t o);

// Everything one batch norm runs with: its path, descriptors, geometry and buffers.
struct BnRun {
  BnAct act = BnAct::relu;
  BnPath path = BnPath::unfused;
  bool half = false;
  cudnnHandle_t h = nullptr;
  cudnnBatchNormMode_t mode = CUDNN_BATCHNORM_SPATIAL;
  cudnnActivationDescriptor_t relu = nullptr;  // the ReLU of cuDNN's fused calls (NaN not propagated)
  cudnnTensorDescriptor_t y_desc = nullptr;    // x, y, dy, dx, z, dz: one shape
  cudnnTensorDescriptor_t bn_desc = nullptr;   // cudnnDeriveBNTensorDescriptor of y_desc
  size_t elems = 0;
  kernels::BnShape shape;  // the step's own kernels
  kernels::BnGeometry geo;
  const void* x = nullptr;  // the input (the convolution's output), kept for backward
  void* out = nullptr;      // the output after the activation; backward reads it as the ReLU's mask
  float *gamma = nullptr, *beta = nullptr, *dgamma = nullptr, *dbeta = nullptr;
  float *run_mean = nullptr, *run_var = nullptr, *save_mean = nullptr, *save_inv = nullptr;
  void* reserve = nullptr;  // cuDNN's reserve space: written forward, read backward
  size_t reserve_bytes = 0;
  void* ws = nullptr;       // workspace of this call (cuDNN's, or the own kernels' bn_workspace_bytes)
  size_t ws_bytes = 0;
  void* scratch = nullptr;  // unfused batch norm + add: the batch norm's output before the add (elems)
  // out need not be kept from forward to backward (the own kernels, act relu: their backward
  // recomputes every ReLU's mask from x, this flag set or not, and reads no out).
  bool relu_from_x = false;
};

// Called after each part that runs (profiling): false after the batch norm (with whatever is fused
// into it), true after an activation that runs apart (the unfused path's ReLU / add kernels).
using BnMark = std::function<void(bool elementwise)>;

// cuDNN's *Ex batch norm with `ops`, its status returned (the step's setup check needs it unthrown).
cudnnStatus_t bn_cudnn_forward(const BnRun& r, cudnnBatchNormOps_t ops, const void* residual, void* out, cudaStream_t s);
// dgamma, dbeta and dx overwritten. The fused ops read the forward's output (r.out) for the
// ReLU's gradient; BN_ADD_ACTIVATION also writes dz, the gradient at the add's other input.
cudnnStatus_t bn_cudnn_backward(const BnRun& r, cudnnBatchNormOps_t ops, const void* dy, void* dx, void* dz,
                                cudaStream_t s);
// cuDNN's forward and backward workspace and its reserve space for `ops` on this layer.
cudnnStatus_t bn_cudnn_sizes(const BnRun& r, cudnnBatchNormOps_t ops, size_t& fwd_ws, size_t& bwd_ws, size_t& reserve);
// What a layer's batch norm needs on its path: the workspace of its forward and of its backward
// and the reserve space. The own kernels' workspace (bn_workspace_bytes) is in both on every path:
// a layer on the cudnn path falls back to the kernels when cuDNN does not run it, which the step
// finds out after its memory is laid out. `status`: cuDNN's answer to the size queries (cudnn
// and unfused paths); on failure the sizes are the own kernels'.
struct BnNeeds {
  size_t fwd_ws = 0, bwd_ws = 0, reserve = 0;
  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
};
BnNeeds bn_needs(const BnRun& r);
// The ReLU of cuDNN's fused calls: NaN not propagated, as the step's own ReLU (fmaxf). The caller
// destroys it (cudnnDestroyActivationDescriptor).
cudnnActivationDescriptor_t create_bn_relu();

// Batch norm of r.x with its activation into r.out (residual: the add's other input, add_relu only).
void bn_forward(const BnRun& r, const void* residual, cudaStream_t s, const BnMark& mark = {});
// Backward from dy (the gradient at r.out) into dx. add_relu: dz receives the gradient at the add
// (the residual branch's) on every path. The unfused ReLU layer masks dy in place.
void bn_backward(const BnRun& r, void* dy, void* dx, void* dz, cudaStream_t s, const BnMark& mark = {});

}  // namespace nb::train
