// Device helpers of the training step's kernels: loads and stores of W elements at once (16 bytes
// for the full width, one LDG.128/STG.128) converted to FP32, and one grid-stride map kernel over
// vectors with a scalar tail. Storage is FP32 (`float`) or FP16 held as its bits (`uint16_t`):
// the conversions are plain cvt instructions, so nothing here needs more than sm_61.
#pragma once
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "train_vec.hpp"

namespace nb::kernels::vec {

__device__ __forceinline__ float to_f(float x) { return x; }
__device__ __forceinline__ float to_f(uint16_t x) { return __half2float(__ushort_as_half(x)); }
template <class S>
__device__ __forceinline__ S from_f(float x);
template <>
__device__ __forceinline__ float from_f<float>(float x) { return x; }
template <>
__device__ __forceinline__ uint16_t from_f<uint16_t>(float x) { return __half_as_ushort(__float2half_rn(x)); }

// W elements of S, aligned to their size: copied as one access of W * sizeof(S) bytes.
template <class S, int W>
struct alignas(sizeof(S) * W) Pack {
  S v[W];
};

template <int W, class S>
__device__ __forceinline__ void load(const S* p, uint64_t i, float (&f)[W]) {
  const Pack<S, W> pk = *reinterpret_cast<const Pack<S, W>*>(p + i);
#pragma unroll
  for (int k = 0; k < W; ++k) f[k] = to_f(pk.v[k]);
}
template <int W, class S>
__device__ __forceinline__ void store(S* p, uint64_t i, const float (&f)[W]) {
  Pack<S, W> pk;
#pragma unroll
  for (int k = 0; k < W; ++k) pk.v[k] = from_f<S>(f[k]);
  *reinterpret_cast<Pack<S, W>*>(p + i) = pk;
}

// Up to 3 inputs and 2 outputs of one storage type.
template <class S, int NIN, int NOUT>
struct Ptrs {
  const S* in[NIN];
  S* out[NOUT];
};

// out[k][.] = op over in[.][.], `W` elements per step for the vectors, then the scalar tail
// (op.apply<1>) for the n % W elements left. op.apply<L>(i0, in, out) gets the index of the first
// of its L elements.
template <class S, int W, int NIN, int NOUT, class Op>
__global__ void map_k(Ptrs<S, NIN, NOUT> p, uint64_t n, Op op) {
  const VecSplit sp = vec_split(n, W);
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  const uint64_t t0 = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x;
  for (uint64_t v = t0; v < sp.vectors; v += stride) {
    float in[NIN][W], out[NOUT][W];
#pragma unroll
    for (int k = 0; k < NIN; ++k) load<W>(p.in[k], v * W, in[k]);
    op.template apply<W>(v * W, in, out);
#pragma unroll
    for (int k = 0; k < NOUT; ++k) store<W>(p.out[k], v * W, out[k]);
  }
  for (uint64_t i = sp.tail_begin + t0; i < n; i += stride) {
    float in[NIN][1], out[NOUT][1];
#pragma unroll
    for (int k = 0; k < NIN; ++k) load<1>(p.in[k], i, in[k]);
    op.template apply<1>(i, in, out);
#pragma unroll
    for (int k = 0; k < NOUT; ++k) store<1>(p.out[k], i, out[k]);
  }
}

// Blocks of a grid-stride launch over `work` items: enough to fill any current GPU, few enough
// that each thread loops a few times.
inline unsigned grid_for(uint64_t work) {
  const uint64_t b = (work + kVecThreads - 1) / kVecThreads;
  return unsigned(b < 1 ? 1 : b > 8192 ? 8192 : b);
}

inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & uintptr_t(kVecBytes - 1)) == 0; }
inline bool aligned_to(const void* p, size_t bytes) { return bytes <= 1 || (reinterpret_cast<uintptr_t>(p) % bytes) == 0; }

template <int W>
using Width = std::integral_constant<int, W>;
// Calls f(S{}, Width<W>{}) for the storage type (FP16 bits or FP32) and the width (1, 2, 4 or 8
// elements, at most 16 bytes; any other width runs as 1).
template <class F>
void with_type_and_width(bool half, int width, F&& f) {
  auto pick = [&](auto tag) {
    using S = decltype(tag);
    if (width == 8 && sizeof(S) * 8 <= size_t(kVecBytes)) f(tag, Width<(sizeof(S) * 8 <= 16 ? 8 : 1)>{});
    else if (width == 4) f(tag, Width<4>{});
    else if (width == 2) f(tag, Width<2>{});
    else f(tag, Width<1>{});
  };
  if (half) pick(uint16_t{});
  else pick(float{});
}

}  // namespace nb::kernels::vec
