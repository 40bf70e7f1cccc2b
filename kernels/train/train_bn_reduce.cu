// Batch norm's reductions, each one launch with its finalize (see train_bn_kernels.cuh): the
// forward's statistics and the backward's sums. Every block reduces its share into one partial per
// channel and chunk; the last block of a column to finish (an atomic ticket) combines the column's
// partials in FP64 with all its threads and writes the per-channel results.
#include <type_traits>

#include "train_bn_device.cuh"

namespace nb::kernels::bn {
namespace {

using vec::load;
using vec::store;

// One ticket per block column. atomicInc wraps to 0 at chunks - 1, so each launch leaves them at
// 0 for the next (zero-initialised with the module). The step's reductions run one after another
// on a device, never two at once.
__device__ unsigned g_tickets[kBnMaxColumns];

// Called by every thread after the block wrote its partials: whether this block is its column's
// last (then every other block's partials are visible to it). One chunk: every block is.
__device__ bool last_of_column(int chunks) {
  __shared__ bool last;
  if (chunks > 1) __threadfence();  // this thread's partials before the ticket
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0) {
    if (chunks > 1) __threadfence();  // the block's partials (ordered before it by the barrier) before the ticket
    last = chunks <= 1 || atomicInc(&g_tickets[blockIdx.x], unsigned(chunks - 1)) == unsigned(chunks - 1);
  }
  __syncthreads();
  if (last && chunks > 1) __threadfence();
  return last;
}

// FP64 sums of K values per channel over the column's chunks: this thread takes chunks y, y + ny,
// ... in that order (fetch(g, f) loads chunk g's K partials, add(v, f) adds them), kColumnLoads
// chunks' loads issued before their adds (a thread may have tens of chunks: one load in flight at a
// time would make this finalize longer than the pass), then a tree over y (threads idx and
// idx + off nx). The totals are in the thread with y == 0; every thread of the block calls it.
constexpr int kColumnLoads = 4;
template <int K, class Fetch, class Add>
__device__ void column_sums(int chunks, int y, int ny, int nx, int idx, bool valid, const Fetch& fetch, const Add& add,
                            double (&v)[K]) {
  __shared__ double sd[K][kVecThreads];
#pragma unroll
  for (int k = 0; k < K; ++k) v[k] = 0;
  if (valid) {
    int g = y;
    for (; g + (kColumnLoads - 1) * ny < chunks; g += kColumnLoads * ny) {
      float f[kColumnLoads][K];
#pragma unroll
      for (int r = 0; r < kColumnLoads; ++r) fetch(g + r * ny, f[r]);
#pragma unroll
      for (int r = 0; r < kColumnLoads; ++r) add(v, f[r]);
    }
    for (; g < chunks; g += ny) {
      float f[K];
      fetch(g, f);
      add(v, f);
    }
  }
#pragma unroll
  for (int k = 0; k < K; ++k) sd[k][idx] = v[k];
  __syncthreads();
  for (int off = ny / 2; off > 0; off >>= 1) {
    if (y < off)
#pragma unroll
      for (int k = 0; k < K; ++k) sd[k][idx] += sd[k][idx + off * nx];
    __syncthreads();
  }
#pragma unroll
  for (int k = 0; k < K; ++k) v[k] = sd[k][idx];
  __syncthreads();  // sd is read again by the next call
}

__device__ __forceinline__ float part(const float* p, int g, int c, int64_t ch) { return __ldcg(p + size_t(g) * c + ch); }

// The forward's finalize of channel ch from its chunks' (count, mean, M2), as shifted sums.
__device__ void fwd_column(const Ws& ws, int chunks, int c, int64_t ch, bool valid, int y, int ny, int nx, int idx,
                           const FwdFinal& a) {
  const double k = valid ? double(part(ws.p1, 0, c, ch)) : 0.0;
  double v[3];
  column_sums<3>(
      chunks, y, ny, nx, idx, valid,
      [&](int g, float(&f)[3]) { f[0] = part(ws.p0, g, c, ch), f[1] = part(ws.p1, g, c, ch), f[2] = part(ws.p2, g, c, ch); },
      [&](double(&s)[3], const float(&f)[3]) { bn_shifted_add(s, k, f[0], f[1], f[2]); }, v);
  if (y != 0 || !valid) return;
  double mean = 0, m2 = 0;
  bn_shifted_result(v, k, mean, m2);
  float coef[3];
  bn_forward_finalize(v[0], mean, m2, a.gamma[ch], a.beta[ch], a.eps, a.factor, a.running_mean[ch],
                      a.running_var[ch], a.save_mean[ch], a.save_inv[ch], coef);
  for (int j = 0; j < 3; ++j) ws.coef[size_t(j) * ws.cs + ch] = coef[j];  // mean, scale, shift after the scale
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
__global__ void __launch_bounds__(kVecThreads) stats_nhwc_k(const S* x, int64_t rows, int c, Ws ws, int chunks, FwdFinal fin) {
  constexpr int U = bn_stats_unroll(W);
  __shared__ float sh_n[kVecThreads], sh_m[kVecThreads * W], sh_q[kVecThreads * W];
  const int cvs = c / W, cv = blockIdx.x * blockDim.x + threadIdx.x;
  const int t = threadIdx.y * blockDim.x + threadIdx.x;
  Shifted<W> acc;
  if (cv < cvs) {
    const int64_t step = int64_t(gridDim.y) * blockDim.y;
    for (int64_t r = blockIdx.y * int64_t(blockDim.y) + threadIdx.y; r < rows; r += U * step) {
      float v[U][W];
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (r + u * step < rows) load<W>(x, uint64_t(r + u * step) * c + uint64_t(cv) * W, v[u]);
#pragma unroll
      for (int u = 0; u < U; ++u)
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
        chan_combine(na, sh_m[t * W + j], sh_q[t * W + j], nb, sh_m[u * W + j], sh_q[u * W + j]);
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
  if (!last_of_column(chunks)) return;
  for (int j = 0; j < W; ++j)
    fwd_column(ws, chunks, c, int64_t(cv) * W + j, cv < cvs, int(threadIdx.y), int(blockDim.y), int(blockDim.x), t, fin);
}

// A block's 256 one-channel summaries combined into thread 0's.
__device__ void block_chan(float* sh_n, float* sh_m, float* sh_q) {
  const unsigned t = threadIdx.x;
  __syncthreads();
  for (unsigned off = blockDim.x / 2; off > 0; off >>= 1) {
    if (t < off) chan_combine(sh_n[t], sh_m[t], sh_q[t], sh_n[t + off], sh_m[t + off], sh_q[t + off]);
    __syncthreads();
  }
}

// NCHW: the items of channel blockIdx.x (its n planes in width-W vectors), the plane of an item
// found by a FastDiv by the items per plane.
template <class S, int W>
__global__ void __launch_bounds__(kVecThreads) stats_nchw_k(const S* x, int64_t items, int c, int64_t hw, FastDiv per_plane, Ws ws, int chunks,
                             FwdFinal fin) {
  constexpr int U = bn_stats_unroll(W);
  __shared__ float sh_n[kVecThreads], sh_m[kVecThreads], sh_q[kVecThreads];
  const int ch = blockIdx.x;
  Shifted<W> acc;
  const int64_t step = int64_t(gridDim.y) * blockDim.x;
  for (int64_t j = blockIdx.y * int64_t(blockDim.x) + threadIdx.x; j < items; j += U * step) {
    float v[U][W];
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (j + u * step < items)
        load<W>(x, nchw_item_offset(uint64_t(j + u * step), uint64_t(ch), uint64_t(c), uint64_t(hw), W, per_plane), v[u]);
#pragma unroll
    for (int u = 0; u < U; ++u)
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
  if (!last_of_column(chunks)) return;
  fwd_column(ws, chunks, c, ch, true, int(threadIdx.x), int(blockDim.x), 1, int(threadIdx.x), fin);
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

// What the sums kernels read besides the tensors: the mask's coefficients (gamma, beta: kMaskFromX
// only), dz (where the masked gradient g goes, the residual's gradient, or null), the finalize's
// outputs and the element count of a channel.
template <class S>
struct SumArgs {
  const float *save_mean, *save_inv, *gamma, *beta;
  S* dz;
  const float* gamma_all;  // gamma for the finalize (every mask)
  const float* beta_fwd;   // the forward's shift for the coefficient table (kMaskFromX), else null
  float *dgamma, *dbeta;
  double count;
};

// The backward's finalize of channel ch: dgamma, dbeta and dx's coefficients, then the forward's
// mean, scale and shift (a ReLU mask recomputed from x).
template <class S>
__device__ void bwd_column(const Ws& ws, int chunks, int c, int64_t ch, bool valid, int y, int ny, int nx, int idx,
                           const SumArgs<S>& a) {
  double v[2];
  column_sums<2>(
      chunks, y, ny, nx, idx, valid, [&](int g, float(&f)[2]) { f[0] = part(ws.p0, g, c, ch), f[1] = part(ws.p1, g, c, ch); },
      [&](double(&s)[2], const float(&f)[2]) { s[0] += f[0], s[1] += f[1]; }, v);
  if (y != 0 || !valid) return;
  float dx[4];
  bn_backward_coefficients(v[0], v[1], a.count, a.gamma_all[ch], a.save_mean[ch], a.save_inv[ch], a.dgamma[ch],
                           a.dbeta[ch], dx);
  const float coef[kBnCoefs] = {dx[0], dx[1], dx[2], dx[3], a.save_mean[ch], bn_scale(a.gamma_all[ch], a.save_inv[ch]),
                                a.beta_fwd ? a.beta_fwd[ch] : 0.f};
  for (int j = 0; j < kBnCoefs; ++j) ws.coef[size_t(j) * ws.cs + ch] = coef[j];
}

template <class S, int W, int M>
__global__ void __launch_bounds__(kVecThreads) sums_nhwc_k(const S* x, const S* y, const S* dy, SumArgs<S> a, int64_t rows, int c, Ws ws, int chunks) {
  constexpr int U = bn_stats_unroll(W) / 2;
  __shared__ float sh_g[kVecThreads * W], sh_gx[kVecThreads * W];
  const int cvs = c / W, cv = blockIdx.x * blockDim.x + threadIdx.x;
  const int t = threadIdx.y * blockDim.x + threadIdx.x;
  float sg[W] = {}, sgx[W] = {};
  ChanCoefs<W> cc;
#pragma unroll
  for (int j = 0; j < W; ++j) cc.load(j, int64_t(cv) * W + j, cv < cvs, a.save_mean, a.save_inv, a.gamma, a.beta);
  if (cv < cvs) {
    const int64_t step = int64_t(gridDim.y) * blockDim.y;
    for (int64_t r = blockIdx.y * int64_t(blockDim.y) + threadIdx.y; r < rows; r += U * step) {
      float xv[U][W], dv[U][W], yv[U][W];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        if (r + u * step >= rows) continue;
        const uint64_t i = uint64_t(r + u * step) * c + uint64_t(cv) * W;
        load<W>(x, i, xv[u]);
        load<W>(dy, i, dv[u]);
        if (M == kMaskFromY) load<W>(y, i, yv[u]);
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
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
  if (!last_of_column(chunks)) return;
  for (int j = 0; j < W; ++j)
    bwd_column(ws, chunks, c, int64_t(cv) * W + j, cv < cvs, int(threadIdx.y), int(blockDim.y), int(blockDim.x), t, a);
}

template <class S, int W, int M>
__global__ void __launch_bounds__(kVecThreads)
    sums_nchw_k(const S* x, const S* y, const S* dy, SumArgs<S> a, int64_t items, int c, int64_t hw,
                            FastDiv per_plane, Ws ws, int chunks) {
  constexpr int U = bn_stats_unroll(W) / 2;
  __shared__ float sh_g[kVecThreads], sh_gx[kVecThreads];
  const int ch = blockIdx.x;
  float sg = 0.f, sgx = 0.f;
  ChanCoefs<W> cc;
#pragma unroll
  for (int j = 0; j < W; ++j) cc.load(j, ch, true, a.save_mean, a.save_inv, a.gamma, a.beta);
  const int64_t step = int64_t(gridDim.y) * blockDim.x;
  for (int64_t j = blockIdx.y * int64_t(blockDim.x) + threadIdx.x; j < items; j += U * step) {
    float xv[U][W], dv[U][W], yv[U][W];
    uint64_t at[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (j + u * step >= items) continue;
      at[u] = nchw_item_offset(uint64_t(j + u * step), uint64_t(ch), uint64_t(c), uint64_t(hw), W, per_plane);
      load<W>(x, at[u], xv[u]);
      load<W>(dy, at[u], dv[u]);
      if (M == kMaskFromY) load<W>(y, at[u], yv[u]);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
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
  if (!last_of_column(chunks)) return;
  bwd_column(ws, chunks, c, ch, true, int(threadIdx.x), int(blockDim.x), 1, int(threadIdx.x), a);
}

FastDiv per_plane_div(const BnShape& sh, const BnGeometry& g) {
  return make_fast_div(uint64_t(sh.hw / (g.width < 1 ? 1 : g.width)));
}

}  // namespace

void launch_stats(cudaStream_t s, const BnShape& sh, const BnGeometry& g, const void* xp, const Ws& ws,
                  const FwdFinal& fin) {
  const dim3 grid(unsigned(g.blocks_x), unsigned(g.chunks)), block(unsigned(g.threads_x), unsigned(g.threads_y));
  const int c = int(sh.c);
  vec::with_type_and_width(sh.half, g.width, [&](auto tag, auto w) {
    using S = decltype(tag);
    constexpr int W = decltype(w)::value;
    const S* x = static_cast<const S*>(xp);
    if (sh.nhwc) stats_nhwc_k<S, W><<<grid, block, 0, s>>>(x, g.rows, c, ws, g.chunks, fin);
    else stats_nchw_k<S, W><<<grid, block, 0, s>>>(x, g.items, c, sh.hw, per_plane_div(sh, g), ws, g.chunks, fin);
  });
}

void launch_sums(cudaStream_t s, const BnShape& sh, const BnGeometry& g, const BwdSums& a, const Ws& ws) {
  const dim3 grid(unsigned(g.blocks_x), unsigned(g.chunks)), block(unsigned(g.threads_x), unsigned(g.threads_y));
  const int c = int(sh.c);
  const bool from_x = a.mask == kMaskFromX;
  vec::with_type_and_width(sh.half, g.width, [&](auto tag, auto w) {
    using S = decltype(tag);
    constexpr int W = decltype(w)::value;
    const S *x = static_cast<const S*>(a.x), *y = static_cast<const S*>(a.y), *dy = static_cast<const S*>(a.dy);
    const SumArgs<S> sa{a.save_mean, a.save_inv, from_x ? a.gamma : nullptr, from_x ? a.beta : nullptr,
                        static_cast<S*>(a.dz), a.gamma, from_x ? a.beta : nullptr, a.dgamma, a.dbeta,
                        double(sh.n) * double(sh.hw)};
    auto sums = [&](auto mode) {
      constexpr int M = decltype(mode)::value;
      if (sh.nhwc) sums_nhwc_k<S, W, M><<<grid, block, 0, s>>>(x, y, dy, sa, g.rows, c, ws, g.chunks);
      else sums_nchw_k<S, W, M><<<grid, block, 0, s>>>(x, y, dy, sa, g.items, c, sh.hw, per_plane_div(sh, g), ws, g.chunks);
    };
    if (a.mask == kMaskFromY) sums(std::integral_constant<int, kMaskFromY>{});
    else if (from_x) sums(std::integral_constant<int, kMaskFromX>{});
    else sums(std::integral_constant<int, kNoMask>{});
  });
}

}  // namespace nb::kernels::bn
