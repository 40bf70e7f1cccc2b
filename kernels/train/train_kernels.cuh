// Launch functions of the training step's own kernels (family train): ReLU and residual add,
// global average pooling, softmax cross-entropy, the FC bias gradient, the multi-tensor SGD
// momentum update, initialisation (batch norm with its fusions: train_bn_kernels.cuh). Plain C++ header (no CUDA syntax). Storage is FP32 or FP16 (`half` true); the
// arithmetic is FP32 in every kernel, so they run on sm_61 as on newer GPUs.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cuda_runtime_api.h>

#if defined(__CUDACC__)
#define NB_TRAIN_HD __host__ __device__
#else
#define NB_TRAIN_HD
#endif

namespace nb::kernels {

// The SGD learning rate of the step at a batch: the linear scaling rule (0.1 per 256 images,
// Goyal et al. 2017), capped at 0.02. Without the scaling, small batches diverge on the fixed batch
// the step is verified on (FP16 NHWC b32 on an H200 at 0.02: loss 7.1 -> 3.4 -> 8.9 in 20 steps).
inline float sgd_lr_for_batch(int64_t batch) {
  const double scaled = 0.1 * double(batch < 1 ? 1 : batch) / 256.0;
  return float(scaled < 0.02 ? scaled : 0.02);
}

// The dynamic loss-scaling rule (host and device; launch_update_loss_scale runs it on the device):
// after a step with non-finite gradients the scale halves (not below 1), the good-step count
// restarts and the skip is counted; after `interval` good steps in a row the scale doubles (up to
// 2^24).
NB_TRAIN_HD inline void next_loss_scale(float& scale, bool found, int& good, int& skipped, int interval) {
  if (found) {
    scale = scale * 0.5f < 1.f ? 1.f : scale * 0.5f;
    good = 0;
    skipped += 1;
  } else if (++good >= interval) {
    scale = scale * 2.f > 16777216.f ? 16777216.f : scale * 2.f;
    good = 0;
  }
}

// The elementwise and pooling kernels below move 16 bytes a thread per step (float4, or 8 FP16
// as a uint4) over a grid-stride loop with a scalar tail, and fall back to one element a step
// when a pointer is not 16-byte aligned (every buffer of the step is; sub-ranges of train_dp's
// buckets start on a parameter, 64 elements apart).
// y = max(x, 0) (x and y may alias).
void launch_relu(cudaStream_t s, const void* x, void* y, size_t n, bool half);
// dx = y > 0 ? dy : 0, with y the ReLU's output (dy and dx may alias).
void launch_relu_backward(cudaStream_t s, const void* y, const void* dy, void* dx, size_t n, bool half);
// y = max(a + b, 0): the residual add and the block's ReLU.
void launch_add_relu(cudaStream_t s, const void* a, const void* b, void* y, size_t n, bool half);
// Global average pool of x (n images, c channels, hw spatial positions, NCHW or NHWC) into y[n][c].
void launch_avgpool(cudaStream_t s, const void* x, void* y, int n, int c, int hw, bool nhwc, bool half);
// dx = dy[n][c] / hw at every position.
void launch_avgpool_backward(cudaStream_t s, const void* dy, void* dx, int n, int c, int hw, bool nhwc, bool half);
// y (NHWC) = x (NCHW), n images of c channels and hw positions: the images of a step that runs in
// NHWC fed as NCHW. One output element a thread and step (writes in order, the c reads of a
// position from c planes); x and y may not alias.
void launch_nchw_to_nhwc(cudaStream_t s, const void* x, void* y, int64_t n, int64_t c, int64_t hw, bool half);
// Max pool forward (window k, stride s, padding p; the step's 3x3 stride 2 pad 1), with the
// position of each output's maximum in its window (r k + q, the first maximum in row order) in
// argmax (one byte an output, the output's layout); backward from it without atomics: each
// input element gathers the gradients of the outputs whose window covers it and picked it.
// NHWC moves 16 bytes of channels a thread (8 bytes of argmax); NCHW one element.
struct PoolDims {
  int n = 0, c = 0, h = 0, w = 0, oh = 0, ow = 0, k = 3, s = 2, p = 1;
};
void launch_maxpool(cudaStream_t s, const void* x, void* y, uint8_t* argmax, const PoolDims& d, bool nhwc, bool half);
void launch_maxpool_backward(cudaStream_t s, const void* dy, const uint8_t* argmax, void* dx, const PoolDims& d, bool nhwc,
                             bool half);
// Softmax cross-entropy over rows of `classes` logits (FP32) plus bias (FP32): adds the mean loss
// over the n rows to *loss (FP32, zero it first) and writes dlogits = *scale * (softmax - onehot) / n
// (scale: the loss scale, in device memory).
void launch_softmax_xent(cudaStream_t s, const float* logits, const float* bias, const int32_t* labels, void* dlogits,
                         float* loss, int n, int classes, const float* scale, bool half);
// db[j] = sum over rows of dlogits[i][j] (FP32 result).
void launch_bias_grad(cudaStream_t s, const void* dlogits, float* db, int n, int classes, bool half);

// The multi-tensor SGD update: one launch over a table of chunks (mt_chunks in train_vec.hpp) of
// up to kMtMaxTensors parameter tensors. Per element, on FP32 master weights w, momentum v and
// gradients g (storage type, multiplied by the loss scale *scale, device memory):
// v = mu v + (g / *scale + wd w); w -= lr v; when `copy` is set, copy = w in FP16 (the compute
// weights of mixed precision), written in the same pass. Nothing changes when *skip is non-zero
// (the step's gradients overflowed). A chunk whose pointers are not aligned to its vectors
// (mt_chunk_vectorizable) runs one element a step, so any pointer and count is right.
constexpr int kMtMaxTensors = 4;
struct MtTensor {
  float* w = nullptr;
  float* v = nullptr;
  const void* g = nullptr;
  bool g_half = false;
  void* copy = nullptr;  // FP16 copy of w, or null
  size_t n = 0;
};
struct MtTable {
  MtTensor t[kMtMaxTensors];
  int tensors = 0;
  const void* chunks = nullptr;  // device array of MtChunk (train_vec.hpp)
  unsigned n_chunks = 0;
};
void launch_mt_sgd(cudaStream_t s, const MtTable& t, float lr, float mu, float wd, const float* scale, const int* skip);
// *found = 1 when any gradient of the table's tensors is infinite or NaN; otherwise unchanged
// (the loss-scaling check before the update, one launch over the same chunks).
void launch_mt_find_nonfinite(cudaStream_t s, const MtTable& t, int* found);
// Dynamic loss scaling after a step (one thread): next_loss_scale on the device state. *found is
// left as it is.
void launch_update_loss_scale(cudaStream_t s, float* scale, const int* found, int* good, int* skipped, int interval);
// w[i] = scale * u(seed, i), u uniform in [-1, 1): the initial weights.
void launch_init_uniform(cudaStream_t s, float* w, size_t n, float scale, uint64_t seed);
void launch_fill_value(cudaStream_t s, float* w, size_t n, float value);
// dst (FP32 or FP16) = src (FP32).
void launch_cast_from_float(cudaStream_t s, const float* src, void* dst, size_t n, bool half);
// labels[i] = hash(seed, i) % classes.
void launch_labels(cudaStream_t s, int32_t* labels, int n, int classes, uint64_t seed);
// Gradient accumulation (train_dp): dst[i] = (dst[i] + src[i]) * scale, both FP16 or both FP32.
void launch_accumulate(cudaStream_t s, void* dst, const void* src, size_t n, bool half, float scale);

}  // namespace nb::kernels
