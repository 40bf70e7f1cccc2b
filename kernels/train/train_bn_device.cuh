// Internal to the batch-norm kernels (train_bn_kernels.cu: the elementwise passes and the launch
// functions; train_bn_reduce.cu: the reductions with their finalize): the workspace's layout, the
// arithmetic both round the same way, and the reductions' launchers.
#pragma once
#include <cuda_fp16.h>

#include "train_bn_kernels.cuh"
#include "train_vec.cuh"

namespace nb::kernels::bn {

// The workspace (bn_workspace_bytes): the coefficient table at the first kBnWsAlign-byte
// boundary, kBnCoefs arrays of `cs` floats (coefficient j of channel ch at coef[j cs + ch]), then 3
// partial arrays of chunks x c floats.
struct Ws {
  float *coef, *p0, *p1, *p2;
  uint32_t cs;
  Ws(void* ws, int chunks, int64_t c) {
    const uintptr_t a = (reinterpret_cast<uintptr_t>(ws) + (kBnWsAlign - 1)) & ~uintptr_t(kBnWsAlign - 1);
    coef = reinterpret_cast<float*>(a);
    cs = uint32_t(bn_coef_stride(c));
    p0 = coef + size_t(kBnCoefs) * cs;
    p1 = p0 + size_t(chunks) * size_t(c);
    p2 = p1 + size_t(chunks) * size_t(c);
  }
};

// The batch norm's output before the add and the ReLU: one fused multiply-add, written out so
// that the forward and a backward recomputing it (relu_from_x) round it the same way.
__device__ __forceinline__ float bn_pre(float x, float mean, float scale, float shift) {
  return __fmaf_rn(x - mean, scale, shift);
}
// Whether the ReLU passed this element: its output, rounded to the storage type as the forward
// stored it, above zero.
__device__ __forceinline__ bool relu_passed(float v, bool half) {
  return (half ? vec::to_f(vec::from_f<uint16_t>(v)) : v) > 0.f;
}

// The ReLU's mask backward: none (M 0), from the kept output y (M 1), recomputed from x (M 2).
constexpr int kNoMask = 0, kMaskFromY = 1, kMaskFromX = 2;

// What the forward's finalize writes besides the coefficient table.
struct FwdFinal {
  const float *gamma, *beta;
  float *running_mean, *running_var, *save_mean, *save_inv;
  double factor, eps;
};
// The statistics pass with its finalize, one launch (train_bn_reduce.cu).
void launch_stats(cudaStream_t s, const BnShape& sh, const BnGeometry& g, const void* x, const Ws& ws,
                  const FwdFinal& fin);

// The backward's first pass with its finalize, one launch: sum(g), sum(g xhat) per channel, dz = g
// when dz is set (g = dy masked by M), then dgamma, dbeta and the coefficients of dx.
struct BwdSums {
  const void *x, *y, *dy;
  void* dz;
  int mask;                                          // kNoMask, kMaskFromY or kMaskFromX
  const float *gamma, *beta, *save_mean, *save_inv;  // beta: kMaskFromX only
  float *dgamma, *dbeta;
};
void launch_sums(cudaStream_t s, const BnShape& sh, const BnGeometry& g, const BwdSums& a, const Ws& ws);

}  // namespace nb::kernels::bn
