// Batch norm's reductions, each one launch with its finalize (see train_bn_kernels.cuh): the
// forward's statistics and the backward's sums. Every block reduces its share into one partial per
// channel and chunk; the last block of a column to finish (an atomic ticket) combines the column's
// partials in FP64 with all its threads and writes the per-channel results; with one chunk an
// NCHW block is its channel's only one and finalizes it from its own summary, without partials.
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
// last (then every other block's partials are visible to it). One chunk: every block is. Only
// thread 0 fences, around its ticket, the barriers ordering the block's other threads' partials
// before its fence and the other blocks' after it (as a grid-wide barrier does).
__device__ bool last_of_column(int chunks) {
  __shared__ bool last;
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0) {
    if (chunks > 1) __threadfence();  // the block's partials before the ticket
    last = chunks <= 1 || atomicInc(&g_tickets[blockIdx.x], unsigned(chunks - 1)) == unsigned(chunks - 1);
    if (last && chunks > 1) __threadfence();  // the column's partials after it
  }
  __syncthreads();
  return last;
}

// FP64 sums of K values per channel over the column's chunks: this thread takes chunks y, y + ny,
// ... in that order (fetch(g, f) loads chunk g's K partials, add(v, f) adds them), kColumnLoads
// chunks' loads issued before their adds, the last fewer than kColumnLoads as well (a thread may
// have tens of chunks: one load in flight at a time would make this finalize longer than the
// pass), then a tree over y (threads idx and idx + off nx). The totals are in the thread with
// y == 0; every thread of the block calls it.
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
    if (g < chunks) {  // the last chunks (fewer than kColumnLoads): their loads issued together too
      float f[kColumnLoads][K];
#pragma unroll
      for (int r = 0; r < kColumnLoads; ++r)
        if (g + r * ny < chunks) fetch(g + r * ny, f[r]);
#pragma unroll
      for (int r = 0; r < kColumnLoads; ++r)
        if (g + r * ny < chunks) add(v, f[r]);
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

// Channel ch's outputs from its (count, mean, M2): the saved statistics, the running averages and
// the coefficient table (mean, scale, shift after the scale).
__device__ void fwd_finalize(const Ws& ws, int64_t ch, double n, double mean, double m2, const FwdFinal& a) {
  // Every read before the first write (the compiler cannot move a read past a write through
  // another pointer: four dependent round trips otherwise).
  const float gamma = a.gamma[ch], beta = a.beta[ch];
  float run_mean = a.running_mean[ch], run_var = a.running_var[ch], save_mean, save_inv, coef[3];
  bn_forward_finalize(n, mean, m2, gamma, beta, a.eps, a.factor, run_mean, run_var, save_mean, save_inv, coef);
  a.running_mean[ch] = run_mean, a.running_var[ch] = run_var, a.save_mean[ch] = save_mean, a.save_inv[ch] = save_inv;
  for (int j = 0; j < 3; ++j) ws.coef[size_t(j) * ws.cs + ch] = coef[j];
}

// The finalize's reads of channel ch (gamma, beta, the running averages) requested into the L2 when
// a block starts, so that the block which finalizes, after its pass, does not wait on device memory
// for them (a hint: no register held, nothing waits on it).
__device__ __forceinline__ void prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }
__device__ __forceinline__ void prefetch_final(const FwdFinal& a, int64_t ch) {
  prefetch_l2(a.gamma + ch), prefetch_l2(a.beta + ch), prefetch_l2(a.running_mean + ch), prefetch_l2(a.running_var + ch);
}

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
  fwd_finalize(ws, ch, v[0], mean, m2, a);
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
  // The finalize: the column's blockDim.x W channels at once, thread t channel t % cols of the
  // column and every lanes-th chunk from t / cols (the channels' partials loaded together, not W
  // finalizes one after another).
  const int cols = int(blockDim.x) * W, lanes = int(blockDim.x * blockDim.y) / cols;
  const int64_t ch = int64_t(blockIdx.x) * cols + t % cols;
  if (t < cols && ch < c) prefetch_final(fin, ch);
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
  fwd_column(ws, chunks, c, ch, ch < c, t / cols, lanes, cols, t, fin);
}

// Chan's combination over a warp by shuffles: lane 0 ends with the warp's summary.
__device__ __forceinline__ void warp_chan(float& n, float& m, float& q) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    const float nb = __shfl_down_sync(0xffffffffu, n, off), mb = __shfl_down_sync(0xffffffffu, m, off),
                qb = __shfl_down_sync(0xffffffffu, q, off);
    chan_combine(n, m, q, nb, mb, qb);
  }
}

// A block's one-channel summaries combined into thread 0's: each warp's by shuffles, then the
// warps' in warp 0 (one barrier instead of a shared-memory tree's eight). blockDim.x: a multiple of
// 32, at most 1024; every thread calls it.
__device__ void block_chan(float& n, float& m, float& q) {
  __shared__ float sn[32], sm[32], sq[32];
  const unsigned lane = threadIdx.x & 31u, w = threadIdx.x >> 5, warps = blockDim.x >> 5;
  warp_chan(n, m, q);
  if (lane == 0) sn[w] = n, sm[w] = m, sq[w] = q;
  __syncthreads();
  if (w != 0) return;
  n = lane < warps ? sn[lane] : 0.f, m = lane < warps ? sm[lane] : 0.f, q = lane < warps ? sq[lane] : 0.f;
  warp_chan(n, m, q);
}

// The same for two sums (the backward's), into thread 0's.
__device__ void block_sum2(float& a, float& b) {
  __shared__ float sa[32], sb[32];
  const unsigned lane = threadIdx.x & 31u, w = threadIdx.x >> 5, warps = blockDim.x >> 5;
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) a += __shfl_down_sync(0xffffffffu, a, off), b += __shfl_down_sync(0xffffffffu, b, off);
  if (lane == 0) sa[w] = a, sb[w] = b;
  __syncthreads();
  if (w != 0) return;
  a = lane < warps ? sa[lane] : 0.f, b = lane < warps ? sb[lane] : 0.f;
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) a += __shfl_down_sync(0xffffffffu, a, off), b += __shfl_down_sync(0xffffffffu, b, off);
}

// NCHW: the items of channel blockIdx.x (its n planes in width-W vectors), a thread's first item's
// plane found by a FastDiv by the items per plane, the next ones walked (NchwWalk).
template <class S, int W>
__global__ void __launch_bounds__(kVecThreads)
    stats_nchw_k(const S* x, int64_t items, int c, int64_t hw, FastDiv per_plane, NchwStride stride, Ws ws, int chunks,
                 FwdFinal fin) {
  constexpr int U = bn_stats_unroll(W);
  const int ch = blockIdx.x;
  if (threadIdx.x == 0) prefetch_final(fin, ch);
  Shifted<W> acc;
  const int64_t step = int64_t(gridDim.y) * blockDim.x, j0 = blockIdx.y * int64_t(blockDim.x) + threadIdx.x;
  NchwWalk at;
  at.start(uint64_t(j0), uint64_t(ch), uint64_t(c), uint64_t(hw), W, per_plane);
  for (int64_t j = j0; j < items; j += U * step) {
    float v[U][W];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (j + u * step < items) load<W>(x, at.off, v[u]);
      at.advance(stride);
    }
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (j + u * step < items) acc.add(v[u], true);
  }
  float n = float(acc.cnt) * W, m = 0.f, q = 0.f;
  acc.summary(0, n, m, q);
  block_chan(n, m, q);
  if (chunks == 1) {  // the channel's only block: its summary is the channel's, no partials to combine
    if (threadIdx.x == 0) fwd_finalize(ws, ch, n, m, q, fin);
    return;
  }
  if (threadIdx.x == 0) {
    const size_t i = size_t(blockIdx.y) * c + ch;
    ws.p0[i] = n, ws.p1[i] = m, ws.p2[i] = q;
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

// Channel ch's outputs from its sums sum(g), sum(g xhat): dgamma, dbeta and the coefficient table.
template <class S>
__device__ void bwd_finalize(const Ws& ws, int64_t ch, double sg, double sgx, const SumArgs<S>& a) {
  const float gamma = a.gamma_all[ch], mean = a.save_mean[ch], inv = a.save_inv[ch],
              beta = a.beta_fwd ? a.beta_fwd[ch] : 0.f;  // every read before the first write
  float dx[4], dgamma, dbeta;
  bn_backward_coefficients(sg, sgx, a.count, gamma, mean, inv, dgamma, dbeta, dx);
  a.dgamma[ch] = dgamma, a.dbeta[ch] = dbeta;
  const float coef[kBnCoefs] = {dx[0], dx[1], dx[2], dx[3], mean, bn_scale(gamma, inv), beta};
  for (int j = 0; j < kBnCoefs; ++j) ws.coef[size_t(j) * ws.cs + ch] = coef[j];
}

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
  bwd_finalize(ws, ch, v[0], v[1], a);
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
  // The column's blockDim.x W channels finalized at once, as the statistics' (stats_nhwc_k).
  const int cols = int(blockDim.x) * W, lanes = int(blockDim.x * blockDim.y) / cols;
  const int64_t ch = int64_t(blockIdx.x) * cols + t % cols;
  bwd_column(ws, chunks, c, ch, ch < c, t / cols, lanes, cols, t, a);
}

template <class S, int W, int M>
__global__ void __launch_bounds__(kVecThreads)
    sums_nchw_k(const S* x, const S* y, const S* dy, SumArgs<S> a, int64_t items, int c, int64_t hw,
                            FastDiv per_plane, NchwStride stride, Ws ws, int chunks) {
  constexpr int U = bn_stats_unroll(W) / 2;
  const int ch = blockIdx.x;
  float sg = 0.f, sgx = 0.f;
  ChanCoefs<W> cc;
#pragma unroll
  for (int j = 0; j < W; ++j) cc.load(j, ch, true, a.save_mean, a.save_inv, a.gamma, a.beta);
  const int64_t step = int64_t(gridDim.y) * blockDim.x, j0 = blockIdx.y * int64_t(blockDim.x) + threadIdx.x;
  NchwWalk walk;
  walk.start(uint64_t(j0), uint64_t(ch), uint64_t(c), uint64_t(hw), W, per_plane);
  for (int64_t j = j0; j < items; j += U * step) {
    float xv[U][W], dv[U][W], yv[U][W];
    NchwWalk at = walk;  // the same items walked again for dz's stores
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (j + u * step < items) {
        load<W>(x, walk.off, xv[u]);
        load<W>(dy, walk.off, dv[u]);
        if (M == kMaskFromY) load<W>(y, walk.off, yv[u]);
      }
      walk.advance(stride);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (j + u * step < items) {
        float g[W], gx[W];
        grad_terms<W, M, sizeof(S) == 2>(xv[u], dv[u], yv[u], cc, g, gx);
#pragma unroll
        for (int k = 0; k < W; ++k) sg += g[k], sgx += gx[k];
        if (a.dz) store<W>(a.dz, at.off, g);
      }
      at.advance(stride);
    }
  }
  block_sum2(sg, sgx);
  if (chunks == 1) {  // the channel's only block: its sums are the channel's
    if (threadIdx.x == 0) bwd_finalize(ws, ch, sg, sgx, a);
    return;
  }
  if (threadIdx.x == 0) {
    const size_t i = size_t(blockIdx.y) * c + ch;
    ws.p0[i] = sg, ws.p1[i] = sgx;
  }
  if (!last_of_column(chunks)) return;
  bwd_column(ws, chunks, c, ch, true, int(threadIdx.x), int(blockDim.x), 1, int(threadIdx.x), a);
}

FastDiv per_plane_div(const BnShape& sh, const BnGeometry& g) {
  return make_fast_div(uint64_t(sh.hw / (g.width < 1 ? 1 : g.width)));
}
// The NCHW kernels' step between a thread's items: the grid's threads of a column.
NchwStride nchw_step(const BnShape& sh, const BnGeometry& g) {
  return nchw_stride(uint64_t(g.chunks) * uint64_t(g.threads_x), sh.c, sh.hw, g.width < 1 ? 1 : g.width);
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
    else
      stats_nchw_k<S, W><<<grid, block, 0, s>>>(x, g.items, c, sh.hw, per_plane_div(sh, g), nchw_step(sh, g), ws, g.chunks,
                                                 fin);
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
      else
        sums_nchw_k<S, W, M><<<grid, block, 0, s>>>(x, y, dy, sa, g.items, c, sh.hw, per_plane_div(sh, g), nchw_step(sh, g),
                                                    ws, g.chunks);
    };
    if (a.mask == kMaskFromY) sums(std::integral_constant<int, kMaskFromY>{});
    else if (from_x) sums(std::integral_constant<int, kMaskFromX>{});
    else sums(std::integral_constant<int, kNoMask>{});
  });
}

}  // namespace nb::kernels::bn
