// Batch normalisation in training mode with its neighbours fused (family train): the step's own
// kernels for the precisions and layouts cuDNN's fused batch norm does not take (cuDNN fuses
// BN+ReLU and BN+add+ReLU only for FP16 NHWC in its persistent mode: FP32/TF32, NCHW and GPUs
// where that call returns CUDNN_STATUS_NOT_SUPPORTED run these). Plain C++ header (no CUDA syntax).
//
// Forward, two launches per layer: per-channel statistics of x in one pass (each thread sums
// x - k and (x - k)^2 in FP32 with k its first value, the threads' partial count, mean and sum of
// squared deviations combined with Chan et al.'s parallel formula, so a mean far from zero loses
// nothing to cancellation), finalized in the same launch: the last block of each column (an
// atomic ticket) combines the column's chunks in FP64 (shifted sums around the first chunk's
// mean), and an NCHW column of one chunk finalizes from its block's own summary, into cuDNN's
// saved mean and inverse standard deviation, the running averages and each channel's scale and
// shift; then one elementwise pass y = act(scale x + shift [+ residual]): BN apply, the
// residual add and the ReLU read x once and write y once.
// Backward, two launches: per-channel sums of g and g * xhat in one pass (g = dy masked by the
// ReLU: by its output y > 0 after a residual add, by that output recomputed from x otherwise, so
// a batch norm + ReLU reads no y; xhat the normalised x), writing g to dz, the residual branch's
// gradient, in the same pass, finalized in the same launch (dgamma, dbeta, the coefficients of
// dx); and one pass dx = A g + B x + C, reading g back from dz where it was written (x and dz: no
// dy, no y). The reductions' tickets are per device: two reductions must not run at once on one
// device (the step issues them on one stream).
// Every elementwise pass moves 16 bytes a thread and step when the pointers are aligned to it (in
// both layouts and for any c and hw: a vector may cross a channel plane; a scalar tail); the
// reductions move W elements of one channel (NCHW: W divides hw) or W channels (NHWC: W divides
// c) a load, W from channel_vec_width. The per-channel coefficients of the elementwise passes are
// arrays over the channels (an NHWC vector loads its W channels' as one access; an NCHW vector
// inside one plane loads its channel's once). bn_traffic.hpp counts the bytes each pass must move.
// Storage FP32 or FP16, arithmetic FP32 (FP64 in the finalize), so they run on sm_61 as on newer GPUs.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cuda_runtime_api.h>

#include "train_vec.hpp"

namespace nb::kernels {

// Which passes a launch runs (a benchmark times them apart; the step runs both): the reduction
// with its finalize (one launch), the elementwise pass (which reads the finalize's coefficients from the
// workspace, and backward the dz the reduction wrote: run it after a reduction on the same ones).
constexpr unsigned kBnReducePass = 1, kBnApplyPass = 2, kBnAllPasses = 3;

struct BnShape {
  int64_t n = 0, c = 0, hw = 0;  // images, channels, positions per image
  bool nhwc = false, half = false;
};

struct BnForward {
  const void* x = nullptr;
  const void* residual = nullptr;  // added before the activation (null: none)
  void* y = nullptr;               // may not alias x or residual
  bool relu = false;
  const float *gamma = nullptr, *beta = nullptr;
  float *running_mean = nullptr, *running_var = nullptr;  // running_var from the unbiased variance
  float *save_mean = nullptr, *save_inv_std = nullptr;    // as cuDNN's resultSaveMean/InvVariance
  double factor = 0.1, eps = 1e-5;                        // running = (1 - factor) running + factor batch
  void* ws = nullptr;                                     // bn_workspace_bytes(geometry, c)
  unsigned passes = kBnAllPasses;
};
void launch_bn_forward(cudaStream_t s, const BnShape& sh, const BnGeometry& g, const BnForward& a);

struct BnBackward {
  const void* x = nullptr;   // the forward's input
  const void* y = nullptr;   // the forward's output when it ended in a ReLU (the mask), else null
  // A forward that ended in a ReLU (no add): the mask y > 0 recomputed from x, as the forward
  // computed y (its mean, scale bn_scale(gamma, save_inv) and shift beta, one fused multiply-add,
  // rounded to the storage type), so it is the mask y would give, without reading y. y null.
  bool relu_from_x = false;
  const float* beta = nullptr;  // relu_from_x only
  const void* dy = nullptr;  // gradient at y
  void* dx = nullptr;        // may not alias the inputs
  void* dz = nullptr;        // gradient at the residual (the masked dy), or null
  const float *gamma = nullptr, *save_mean = nullptr, *save_inv_std = nullptr;
  float *dgamma = nullptr, *dbeta = nullptr;  // overwritten
  void* ws = nullptr;
  unsigned passes = kBnAllPasses;
};
void launch_bn_backward(cudaStream_t s, const BnShape& sh, const BnGeometry& g, const BnBackward& a);

}  // namespace nb::kernels
