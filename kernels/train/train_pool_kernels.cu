// The training step's max pool, forward with the argmax and backward from it (see
// train_kernels.cuh). FP32 arithmetic on FP32 or FP16 storage, nothing beyond sm_61.
#include <cuda_fp16.h>

#include <initializer_list>
#include <type_traits>

#include "train_kernels.cuh"
#include "train_vec.cuh"

namespace nb::kernels {
namespace {

using vec::load;
using vec::store;

// Element (image, row, column, channel) of an n x c x h x w tensor in either layout.
template <bool NHWC>
__device__ __forceinline__ uint64_t at(int64_t img, int64_t row, int64_t col, int64_t ch, int64_t c, int64_t h, int64_t w) {
  return NHWC ? ((uint64_t(img) * h + row) * w + col) * c + ch : ((uint64_t(img) * c + ch) * h + row) * w + col;
}

// Index t of the n x c x rows x cols x (W-channel vectors in NHWC) grid into its coordinates.
template <bool NHWC, int W>
__device__ __forceinline__ void split(uint64_t t, int64_t c, int64_t rows, int64_t cols, int64_t& img, int64_t& row,
                                      int64_t& col, int64_t& ch) {
  if (NHWC) {
    const int64_t cvs = c / W;
    ch = int64_t(t % cvs) * W, t /= cvs;
    col = int64_t(t % cols), t /= cols;
    row = int64_t(t % rows), img = int64_t(t / rows);
  } else {
    col = int64_t(t % cols), t /= cols;
    row = int64_t(t % rows), t /= rows;
    ch = int64_t(t % c), img = int64_t(t / c);
  }
}

template <class S, int W, bool NHWC>
__global__ void maxpool_k(const S* x, S* y, uint8_t* arg, PoolDims d) {
  const uint64_t total = uint64_t(d.n) * d.c / W * d.oh * d.ow;
  for (uint64_t t = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; t < total; t += uint64_t(gridDim.x) * blockDim.x) {
    int64_t img, orow, ocol, ch;
    split<NHWC, W>(t, d.c, d.oh, d.ow, img, orow, ocol, ch);
    float best[W];
    vec::Pack<uint8_t, W> where;
#pragma unroll
    for (int l = 0; l < W; ++l) best[l] = -INFINITY, where.v[l] = 0;
    for (int r = 0; r < d.k; ++r) {
      const int64_t row = orow * d.s - d.p + r;
      if (row < 0 || row >= d.h) continue;
      for (int q = 0; q < d.k; ++q) {
        const int64_t col = ocol * d.s - d.p + q;
        if (col < 0 || col >= d.w) continue;
        float v[W];
        load<W>(x, at<NHWC>(img, row, col, ch, d.c, d.h, d.w), v);
#pragma unroll
        for (int l = 0; l < W; ++l)
          if (v[l] > best[l]) best[l] = v[l], where.v[l] = uint8_t(r * d.k + q);  // the first maximum
      }
    }
    const uint64_t o = at<NHWC>(img, orow, ocol, ch, d.c, d.oh, d.ow);
    store<W>(y, o, best);
    *reinterpret_cast<vec::Pack<uint8_t, W>*>(arg + o) = where;
  }
}

template <class S, int W, bool NHWC>
__global__ void maxpool_bwd_k(const S* dy, const uint8_t* arg, S* dx, PoolDims d) {
  const uint64_t total = uint64_t(d.n) * d.c / W * d.h * d.w;
  for (uint64_t t = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; t < total; t += uint64_t(gridDim.x) * blockDim.x) {
    int64_t img, row, col, ch;
    split<NHWC, W>(t, d.c, d.h, d.w, img, row, col, ch);
    int r0, r1, c0, c1;
    pool_cover(int(row), d.k, d.s, d.p, d.oh, r0, r1);
    pool_cover(int(col), d.k, d.s, d.p, d.ow, c0, c1);
    float acc[W] = {};
    for (int orow = r0; orow <= r1; ++orow)
      for (int ocol = c0; ocol <= c1; ++ocol) {
        const uint64_t o = at<NHWC>(img, orow, ocol, ch, d.c, d.oh, d.ow);
        const uint8_t code = uint8_t((row - (int64_t(orow) * d.s - d.p)) * d.k + (col - (int64_t(ocol) * d.s - d.p)));
        const vec::Pack<uint8_t, W> a = *reinterpret_cast<const vec::Pack<uint8_t, W>*>(arg + o);
        float g[W];
        load<W>(dy, o, g);
#pragma unroll
        for (int l = 0; l < W; ++l) acc[l] += a.v[l] == code ? g[l] : 0.f;
      }
    store<W>(dx, at<NHWC>(img, row, col, ch, d.c, d.h, d.w), acc);
  }
}

// NHWC: the full 16 bytes of channels when they divide the channels and every pointer is
// aligned to them; NCHW (and otherwise): one element.
template <class F>
void pool_launch(bool nhwc, bool half, int c, std::initializer_list<const void*> ptrs, F&& f) {
  const int elem = half ? 2 : 4;
  int w = nhwc ? channel_vec_width(true, c, 1, elem) : 1;
  for (const void* p : ptrs) w = vec::aligned_to(p, size_t(w) * size_t(elem)) ? w : 1;
  if (w != vec_width(elem)) w = 1;
  vec::with_type_and_width(half, w, [&](auto tag, auto wd) {
    if (nhwc) f(tag, wd, std::true_type{});
    else f(tag, vec::Width<1>{}, std::false_type{});
  });
}

}  // namespace

void launch_maxpool(cudaStream_t s, const void* x, void* y, uint8_t* argmax, const PoolDims& d, bool nhwc, bool half) {
  pool_launch(nhwc, half, d.c, {x, y, argmax}, [&](auto tag, auto wd, auto layout) {
    using S = decltype(tag);
    constexpr int W = decltype(wd)::value;
    const uint64_t work = uint64_t(d.n) * d.c / W * d.oh * d.ow;
    maxpool_k<S, W, decltype(layout)::value><<<vec::grid_for(work), kVecThreads, 0, s>>>(
        static_cast<const S*>(x), static_cast<S*>(y), argmax, d);
  });
}

void launch_maxpool_backward(cudaStream_t s, const void* dy, const uint8_t* argmax, void* dx, const PoolDims& d, bool nhwc,
                             bool half) {
  pool_launch(nhwc, half, d.c, {dy, dx, argmax}, [&](auto tag, auto wd, auto layout) {
    using S = decltype(tag);
    constexpr int W = decltype(wd)::value;
    const uint64_t work = uint64_t(d.n) * d.c / W * d.h * d.w;
    maxpool_bwd_k<S, W, decltype(layout)::value><<<vec::grid_for(work), kVecThreads, 0, s>>>(
        static_cast<const S*>(dy), argmax, static_cast<S*>(dx), d);
  });
}

}  // namespace nb::kernels
