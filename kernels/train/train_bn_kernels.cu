// Batch norm in training mode with the ReLU and the residual add fused (see train_bn_kernels.cuh).
#include <cuda_fp16.h>

#include <initializer_list>
#include <type_traits>

#include "train_bn_device.cuh"

namespace nb::kernels {
namespace {

using namespace bn_detail;
using vec::load;
using vec::store;
constexpr unsigned kFinThreads = 128;  // the finalize: one warp per channel
// Loads in flight per thread in the reductions: each iteration issues kStatsUnroll (forward: one
// tensor) or kSumsUnroll (backward: two or three tensors) independent loads before it adds them.
constexpr int kStatsUnroll = 4, kSumsUnroll = 2;

template <class F>
__device__ __forceinline__ void chan(F& na, F& ma, F& qa, F nb, F mb, F qb) {
  chan_combine(na, ma, qa, nb, mb, qb);
}

// ---- forward statistics: per block and channel (count, mean, M2) -------------------------------
// Each thread sums x - k and (x - k)^2 with k its first value (a shift that keeps the sums small
// whatever the mean), then the block combines the threads' summaries by Chan's formula.
template <int W>
struct Shifted {
  float k[W] = {}, s[W] = {}, q[W] = {};
  int cnt = 0;
  __device__ void add(const float (&v)[W], bool one_channel) {
#pragma unroll
    for (int j = 0; j < W; ++j) {
      if (cnt == 0) k[j] = one_channel ? v[0] : v[j];
      const float d = v[j] - k[one_channel ? 0 : j];
      s[one_channel ? 0 : j] += d;
      q[one_channel ? 0 : j] += d * d;
    }
    ++cnt;
  }
  __device__ void summary(int lane, float n, float& mean, float& m2) const {
    mean = n > 0.f ? k[lane] + s[lane] / n : 0.f;
    m2 = n > 0.f ? fmaxf(q[lane] - s[lane] * s[lane] / n, 0.f) : 0.f;
  }
};

template <class S, int W>
__global__ void stats_nhwc_k(const S* x, int64_t rows, int c, Ws ws) {
  __shared__ float sh_n[kVecThreads], sh_m[kVecThreads * W], sh_q[kVecThreads * W];
  const int cvs = c / W, cv = blockIdx.x * blockDim.x + threadIdx.x;
  const int t = threadIdx.y * blockDim.x + threadIdx.x;
  Shifted<W> acc;
  if (cv < cvs) {
    const int64_t step = int64_t(gridDim.y) * blockDim.y;
    for (int64_t r = blockIdx.y * int64_t(blockDim.y) + threadIdx.y; r < rows; r += kStatsUnroll * step) {
      float v[kStatsUnroll][W];
#pragma unroll
      for (int u = 0; u < kStatsUnroll; ++u)
        if (r + u * step < rows) load<W>(x, uint64_t(r + u * step) * c + uint64_t(cv) * W, v[u]);
#pragma unroll
      for (int u = 0; u < kStatsUnroll; ++u)
        if (r + u * step < rows) acc.add(v[u], false);
    }
  }
  sh_n[t] = float(acc.cnt);
#pragma unroll
  for (int j = 0; j < W; ++j) acc.summary(j, float(acc.cnt), sh_m[t * W + j], sh_q[t * W + j]);
  __syncthreads();
  for (unsigned off = blockDim.y / 2; off > 0; off >>= 1) {
    if (threadIdx.y < off) {
      const int u = t + int(off * blockDim.x);
      const float nb = sh_n[u];
#pragma unroll
      for (int j = 0; j < W; ++j) {
        float na = sh_n[t];
        chan(na, sh_m[t * W + j], sh_q[t * W + j], nb, sh_m[u * W + j], sh_q[u * W + j]);
      }
      sh_n[t] += nb;
    }
    __syncthreads();
  }
  if (threadIdx.y == 0 && cv < cvs) {
#pragma unroll
    for (int j = 0; j < W; ++j) {
      const size_t i = size_t(blockIdx.y) * c + size_t(cv) * W + j;
      ws.p0[i] = sh_n[t], ws.p1[i] = sh_m[t * W + j], ws.p2[i] = sh_q[t * W + j];
    }
  }
}

// A block's 256 one-channel summaries combined into thread 0's.
__device__ void block_chan(float* sh_n, float* sh_m, float* sh_q) {
  const unsigned t = threadIdx.x;
  __syncthreads();
  for (unsigned off = blockDim.x / 2; off > 0; off >>= 1) {
    if (t < off) chan(sh_n[t], sh_m[t], sh_q[t], sh_n[t + off], sh_m[t + off], sh_q[t + off]);
    __syncthreads();
  }
}

// NCHW: the items of channel blockIdx.x (its n planes in width-W vectors), the plane of an item
// found by a FastDiv by the items per plane.
template <class S, int W>
__global__ void stats_nchw_k(const S* x, int64_t items, int c, int64_t hw, FastDiv per_plane, Ws ws) {
  __shared__ float sh_n[kVecThreads], sh_m[kVecThreads], sh_q[kVecThreads];
  const int ch = blockIdx.x;
  Shifted<W> acc;
  const int64_t step = int64_t(gridDim.y) * blockDim.x;
  for (int64_t j = blockIdx.y * int64_t(blockDim.x) + threadIdx.x; j < items; j += kStatsUnroll * step) {
    float v[kStatsUnroll][W];
#pragma unroll
    for (int u = 0; u < kStatsUnroll; ++u)
      if (j + u * step < items)
        load<W>(x, nchw_item_offset(uint64_t(j + u * step), uint64_t(ch), uint64_t(c), uint64_t(hw), W, per_plane), v[u]);
#pragma unroll
    for (int u = 0; u < kStatsUnroll; ++u)
      if (j + u * step < items) acc.add(v[u], true);
  }
  const float n = float(acc.cnt) * W;
  sh_n[threadIdx.x] = n;
  acc.summary(0, n, sh_m[threadIdx.x], sh_q[threadIdx.x]);
  block_chan(sh_n, sh_m, sh_q);
  if (threadIdx.x == 0) {
    const size_t i = size_t(blockIdx.y) * c + ch;
    ws.p0[i] = sh_n[0], ws.p1[i] = sh_m[0], ws.p2[i] = sh_q[0];
  }
}

// ---- finalize: one warp per channel combines the chunks in FP64 --------------------------------
struct FwdFinal {
  const float *gamma, *beta;
  float *running_mean, *running_var, *save_mean, *save_inv;
  double factor, eps;
};
__global__ void fwd_finalize_k(Ws ws, int chunks, int c, FwdFinal a) {
  const int ch = int((blockIdx.x * blockDim.x + threadIdx.x) / 32), lane = int(threadIdx.x % 32);
  if (ch >= c) return;  // whole warps leave together (c warps, blockDim a multiple of 32)
  double n = 0, m = 0, q = 0;
  for (int g = lane; g < chunks; g += 32) {
    const size_t i = size_t(g) * c + ch;
    chan<double>(n, m, q, ws.p0[i], ws.p1[i], ws.p2[i]);
  }
  for (int off = 16; off > 0; off >>= 1) {
    const double nb = __shfl_down_sync(0xffffffffu, n, off), mb = __shfl_down_sync(0xffffffffu, m, off),
                 qb = __shfl_down_sync(0xffffffffu, q, off);
    chan<double>(n, m, q, nb, mb, qb);
  }
  if (lane) return;
  float coef[3];
  bn_forward_finalize(n, m, q, a.gamma[ch], a.beta[ch], a.eps, a.factor, a.running_mean[ch], a.running_var[ch],
                      a.save_mean[ch], a.save_inv[ch], coef);
  for (int j = 0; j < 3; ++j) ws.coef[size_t(j) * ws.cs + ch] = coef[j];  // mean, scale, shift after the scale
}

// ---- backward: per block and channel sum(g), sum(g xhat) ---------------------------------------

// Per channel of a thread's lanes: the saved mean and inverse standard deviation and, for a mask
// recomputed from x, the forward's scale and shift.
template <int W>
struct ChanCoefs {
  float mean[W], inv[W], scale[W], shift[W];
  __device__ void load(int j, int64_t ch, bool ok, const float* save_mean, const float* save_inv, const float* gamma,
                       const float* beta) {
    mean[j] = ok ? save_mean[ch] : 0.f;
    inv[j] = ok ? save_inv[ch] : 0.f;
    scale[j] = ok && gamma ? bn_scale(gamma[ch], save_inv[ch]) : 0.f;
    shift[j] = ok && beta ? beta[ch] : 0.f;
  }
};

template <int W, int M, bool HALF>
__device__ __forceinline__ void grad_terms(const float (&x)[W], const float (&dy)[W], const float (&y)[W],
                                           const ChanCoefs<W>& cc, float (&g)[W], float (&gx)[W]) {
#pragma unroll
  for (int j = 0; j < W; ++j) {
    const bool pass = M == kMaskFromY   ? y[j] > 0.f
                      : M == kMaskFromX ? relu_passed(bn_pre(x[j], cc.mean[j], cc.scale[j], cc.shift[j]), HALF)
                                        : true;
    g[j] = pass ? dy[j] : 0.f;
    gx[j] = g[j] * (x[j] - cc.mean[j]) * cc.inv[j];
  }
}

// What the sums kernels read besides the tensors, and dz: where the masked gradient g goes (the
// residual's gradient; the backward's second pass reads it back instead of dy and y), or null.
template <class S>
struct SumArgs {
  const float *save_mean, *save_inv, *gamma, *beta;  // gamma, beta: kMaskFromX only
  S* dz;
};

template <class S, int W, int M>
__global__ void sums_nhwc_k(const S* x, const S* y, const S* dy, SumArgs<S> a, int64_t rows, int c, Ws ws) {
  __shared__ float sh_g[kVecThreads * W], sh_gx[kVecThreads * W];
  const int cvs = c / W, cv = blockIdx.x * blockDim.x + threadIdx.x;
  const int t = threadIdx.y * blockDim.x + threadIdx.x;
  float sg[W] = {}, sgx[W] = {};
  ChanCoefs<W> cc;
#pragma unroll
  for (int j = 0; j < W; ++j) cc.load(j, int64_t(cv) * W + j, cv < cvs, a.save_mean, a.save_inv, a.gamma, a.beta);
  if (cv < cvs) {
    const int64_t step = int64_t(gridDim.y) * blockDim.y;
    for (int64_t r = blockIdx.y * int64_t(blockDim.y) + threadIdx.y; r < rows; r += kSumsUnroll * step) {
      float xv[kSumsUnroll][W], dv[kSumsUnroll][W], yv[kSumsUnroll][W];
#pragma unroll
      for (int u = 0; u < kSumsUnroll; ++u) {
        if (r + u * step >= rows) continue;
        const uint64_t i = uint64_t(r + u * step) * c + uint64_t(cv) * W;
        load<W>(x, i, xv[u]);
        load<W>(dy, i, dv[u]);
        if (M == kMaskFromY) load<W>(y, i, yv[u]);
      }
#pragma unroll
      for (int u = 0; u < kSumsUnroll; ++u) {
        if (r + u * step >= rows) continue;
        float g[W], gx[W];
        grad_terms<W, M, sizeof(S) == 2>(xv[u], dv[u], yv[u], cc, g, gx);
#pragma unroll
        for (int j = 0; j < W; ++j) sg[j] += g[j], sgx[j] += gx[j];
        if (a.dz) store<W>(a.dz, uint64_t(r + u * step) * c + uint64_t(cv) * W, g);
      }
    }
  }
#pragma unroll
  for (int j = 0; j < W; ++j) sh_g[t * W + j] = sg[j], sh_gx[t * W + j] = sgx[j];
  __syncthreads();
  for (unsigned off = blockDim.y / 2; off > 0; off >>= 1) {
    if (threadIdx.y < off) {
      const int u = t + int(off * blockDim.x);
#pragma unroll
      for (int j = 0; j < W; ++j) sh_g[t * W + j] += sh_g[u * W + j], sh_gx[t * W + j] += sh_gx[u * W + j];
    }
    __syncthreads();
  }
  if (threadIdx.y == 0 && cv < cvs) {
#pragma unroll
    for (int j = 0; j < W; ++j) {
      const size_t i = size_t(blockIdx.y) * c + size_t(cv) * W + j;
      ws.p0[i] = sh_g[t * W + j], ws.p1[i] = sh_gx[t * W + j];
    }
  }
}

template <class S, int W, int M>
__global__ void sums_nchw_k(const S* x, const S* y, const S* dy, SumArgs<S> a, int64_t items, int c, int64_t hw,
                            FastDiv per_plane, Ws ws) {
  __shared__ float sh_g[kVecThreads], sh_gx[kVecThreads];
  const int ch = blockIdx.x;
  float sg = 0.f, sgx = 0.f;
  ChanCoefs<W> cc;
#pragma unroll
  for (int j = 0; j < W; ++j) cc.load(j, ch, true, a.save_mean, a.save_inv, a.gamma, a.beta);
  const int64_t step = int64_t(gridDim.y) * blockDim.x;
  for (int64_t j = blockIdx.y * int64_t(blockDim.x) + threadIdx.x; j < items; j += kSumsUnroll * step) {
    float xv[kSumsUnroll][W], dv[kSumsUnroll][W], yv[kSumsUnroll][W];
    uint64_t at[kSumsUnroll];
#pragma unroll
    for (int u = 0; u < kSumsUnroll; ++u) {
      if (j + u * step >= items) continue;
      at[u] = nchw_item_offset(uint64_t(j + u * step), uint64_t(ch), uint64_t(c), uint64_t(hw), W, per_plane);
      load<W>(x, at[u], xv[u]);
      load<W>(dy, at[u], dv[u]);
      if (M == kMaskFromY) load<W>(y, at[u], yv[u]);
    }
#pragma unroll
    for (int u = 0; u < kSumsUnroll; ++u) {
      if (j + u * step >= items) continue;
      float g[W], gx[W];
      grad_terms<W, M, sizeof(S) == 2>(xv[u], dv[u], yv[u], cc, g, gx);
#pragma unroll
      for (int k = 0; k < W; ++k) sg += g[k], sgx += gx[k];
      if (a.dz) store<W>(a.dz, at[u], g);
    }
  }
  sh_g[threadIdx.x] = sg, sh_gx[threadIdx.x] = sgx;
  __syncthreads();
  for (unsigned off = blockDim.x / 2; off > 0; off >>= 1) {
    if (threadIdx.x < off) sh_g[threadIdx.x] += sh_g[threadIdx.x + off], sh_gx[threadIdx.x] += sh_gx[threadIdx.x + off];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    const size_t i = size_t(blockIdx.y) * c + ch;
    ws.p0[i] = sh_g[0], ws.p1[i] = sh_gx[0];
  }
}

// dgamma, dbeta and dx's coefficients per channel (bn_backward_coefficients, M = n hw elements).
struct BwdFinal {
  const float *gamma, *beta, *save_mean, *save_inv;  // beta: relu_from_x only (else null)
  float *dgamma, *dbeta;
  double count;
};
__global__ void bwd_finalize_k(Ws ws, int chunks, int c, BwdFinal a) {
  const int ch = int((blockIdx.x * blockDim.x + threadIdx.x) / 32), lane = int(threadIdx.x % 32);
  if (ch >= c) return;
  double sg = 0, sgx = 0;
  for (int g = lane; g < chunks; g += 32) sg += ws.p0[size_t(g) * c + ch], sgx += ws.p1[size_t(g) * c + ch];
  for (int off = 16; off > 0; off >>= 1)
    sg += __shfl_down_sync(0xffffffffu, sg, off), sgx += __shfl_down_sync(0xffffffffu, sgx, off);
  if (lane) return;
  float dx[4];
  bn_backward_coefficients(sg, sgx, a.count, a.gamma[ch], a.save_mean[ch], a.save_inv[ch], a.dgamma[ch], a.dbeta[ch],
                           dx);
  // dx's coefficients, then the forward's mean, scale and shift (a ReLU mask recomputed from x).
  const float coef[kBnCoefs] = {dx[0], dx[1], dx[2], dx[3], a.save_mean[ch], bn_scale(a.gamma[ch], a.save_inv[ch]),
                                a.beta ? a.beta[ch] : 0.f};
  for (int j = 0; j < kBnCoefs; ++j) ws.coef[size_t(j) * ws.cs + ch] = coef[j];
}


unsigned finalize_blocks(int64_t c) { return unsigned((c * 32 + kFinThreads - 1) / kFinThreads); }

// The geometry for these pointers: one element a step when one is not aligned to the vector
// (every buffer of the step is 256-byte aligned; this keeps another caller correct).
BnGeometry geometry_for(const BnShape& sh, const BnGeometry& g, std::initializer_list<const void*> ptrs) {
  bool ok = true;
  for (const void* p : ptrs) ok = ok && vec::aligned_to(p, size_t(g.width) * (sh.half ? 2 : 4));
  return ok ? g : bn_narrow(g, sh.c);
}

FastDiv per_plane_div(const BnShape& sh, const BnGeometry& g) {
  return make_fast_div(uint64_t(sh.hw / (g.width < 1 ? 1 : g.width)));
}

}  // namespace

void launch_bn_forward(cudaStream_t s, const BnShape& sh, const BnGeometry& g0, const BnForward& a) {
  const BnGeometry g = geometry_for(sh, g0, {a.x});
  const Ws ws(a.ws, g.chunks, sh.c);
  const int c = int(sh.c);
  if (a.passes & kBnReducePass) {
    const dim3 grid(unsigned(g.blocks_x), unsigned(g.chunks)), block(unsigned(g.threads_x), unsigned(g.threads_y));
    vec::with_type_and_width(sh.half, g.width, [&](auto tag, auto w) {
      using S = decltype(tag);
      constexpr int W = decltype(w)::value;
      const S* x = static_cast<const S*>(a.x);
      if (sh.nhwc) stats_nhwc_k<S, W><<<grid, block, 0, s>>>(x, g.rows, c, ws);
      else stats_nchw_k<S, W><<<grid, block, 0, s>>>(x, g.items, c, sh.hw, per_plane_div(sh, g), ws);
    });
    const FwdFinal fin{a.gamma, a.beta, a.running_mean, a.running_var, a.save_mean, a.save_inv_std, a.factor, a.eps};
    fwd_finalize_k<<<finalize_blocks(sh.c), kFinThreads, 0, s>>>(ws, g.chunks, c, fin);
  }
  if (a.passes & kBnApplyPass) forward_apply(s, sh, a, ws);
}

void launch_bn_backward(cudaStream_t s, const BnShape& sh, const BnGeometry& g0, const BnBackward& a) {
  const BnGeometry g = geometry_for(sh, g0, {a.x, a.y, a.dy, a.dz});
  const Ws ws(a.ws, g.chunks, sh.c);
  const int c = int(sh.c);
  const bool from_x = !a.y && a.relu_from_x;
  if (a.passes & kBnReducePass) {
    const dim3 grid(unsigned(g.blocks_x), unsigned(g.chunks)), block(unsigned(g.threads_x), unsigned(g.threads_y));
    vec::with_type_and_width(sh.half, g.width, [&](auto tag, auto w) {
      using S = decltype(tag);
      constexpr int W = decltype(w)::value;
      const S *x = static_cast<const S*>(a.x), *y = static_cast<const S*>(a.y), *dy = static_cast<const S*>(a.dy);
      const SumArgs<S> sa{a.save_mean, a.save_inv_std, from_x ? a.gamma : nullptr, from_x ? a.beta : nullptr,
                          static_cast<S*>(a.dz)};
      auto sums = [&](auto mode) {
        constexpr int M = decltype(mode)::value;
        if (sh.nhwc) sums_nhwc_k<S, W, M><<<grid, block, 0, s>>>(x, y, dy, sa, g.rows, c, ws);
        else sums_nchw_k<S, W, M><<<grid, block, 0, s>>>(x, y, dy, sa, g.items, c, sh.hw, per_plane_div(sh, g), ws);
      };
      if (a.y) sums(std::integral_constant<int, kMaskFromY>{});
      else if (from_x) sums(std::integral_constant<int, kMaskFromX>{});
      else sums(std::integral_constant<int, kNoMask>{});
    });
    const BwdFinal fin{a.gamma, from_x ? a.beta : nullptr, a.save_mean, a.save_inv_std, a.dgamma, a.dbeta,
                       double(sh.n) * double(sh.hw)};
    bwd_finalize_k<<<finalize_blocks(sh.c), kFinThreads, 0, s>>>(ws, g.chunks, c, fin);
  }
  if (a.passes & kBnApplyPass) backward_apply(s, sh, a, from_x, ws);
}

}  // namespace nb::kernels
