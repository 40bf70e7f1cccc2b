// Batch norm in training mode with the ReLU and the residual add fused (see train_bn_kernels.cuh).
#include <cuda_fp16.h>

#include <initializer_list>
#include <type_traits>

#include "train_bn_kernels.cuh"
#include "train_vec.cuh"

namespace nb::kernels {
namespace {

using vec::load;
using vec::store;
constexpr unsigned kFinThreads = 128;  // the finalize: one warp per channel

template <class F>
__device__ __forceinline__ void chan(F& na, F& ma, F& qa, F nb, F mb, F qb) {
  chan_combine(na, ma, qa, nb, mb, qb);
}

// The workspace: 3 partial arrays of chunks x c floats, then kBnCoefs coefficient arrays of c floats.
struct Ws {
  float *p0, *p1, *p2, *coef;
  __host__ __device__ Ws(void* ws, int chunks, int64_t c) {
    p0 = static_cast<float*>(ws);
    p1 = p0 + size_t(chunks) * c;
    p2 = p1 + size_t(chunks) * c;
    coef = p2 + size_t(chunks) * c;
  }
};

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
__global__ void stats_nhwc_k(const S* x, int64_t rows, int c, Ws ws, int chunks) {
  __shared__ float sh_n[kVecThreads], sh_m[kVecThreads * W], sh_q[kVecThreads * W];
  const int cvs = c / W, cv = blockIdx.x * blockDim.x + threadIdx.x;
  const int t = threadIdx.y * blockDim.x + threadIdx.x;
  Shifted<W> acc;
  if (cv < cvs) {
    for (int64_t r = blockIdx.y * int64_t(blockDim.y) + threadIdx.y; r < rows; r += int64_t(gridDim.y) * blockDim.y) {
      float v[W];
      load<W>(x, uint64_t(r) * c + uint64_t(cv) * W, v);
      acc.add(v, false);
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

template <class S, int W>
__global__ void stats_nchw_k(const S* x, int64_t items, int c, int64_t hw, Ws ws, int chunks) {
  __shared__ float sh_n[kVecThreads], sh_m[kVecThreads], sh_q[kVecThreads];
  const int ch = blockIdx.x;
  Shifted<W> acc;
  for (int64_t j = blockIdx.y * int64_t(blockDim.x) + threadIdx.x; j < items; j += int64_t(gridDim.y) * blockDim.x) {
    float v[W];
    load<W>(x, nchw_item_offset(uint64_t(j), ch, c, hw, W), v);
    acc.add(v, true);
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
  for (int k = 0; k < 3; ++k) ws.coef[size_t(k) * c + ch] = coef[k];  // mean, scale, shift after the scale
}

// The batch norm's output before the add and the ReLU: one fused multiply-add, written out so
// that the forward and a backward recomputing it (relu_from_x) round it the same way.
__device__ __forceinline__ float bn_pre(float x, float mean, float scale, float shift) {
  return __fmaf_rn(x - mean, scale, shift);
}
// Whether the ReLU passed this element: its output, rounded to the storage type as the forward
// stored it, above zero.
template <bool HALF>
__device__ __forceinline__ bool relu_passed(float v) {
  return (HALF ? vec::to_f(vec::from_f<uint16_t>(v)) : v) > 0.f;
}

// y = act((x - mean) scale + beta [+ r]); lanes of an NHWC vector are consecutive channels.
template <bool NHWC, bool RELU, int NIN>
struct ApplyOp {
  const float* coef;
  int64_t c, hw;
  template <int L>
  __device__ void apply(uint64_t i0, const float (&in)[NIN][L], float (&out)[1][L]) const {
    const int64_t c0 = channel_of(i0, NHWC, c, hw);
#pragma unroll
    for (int k = 0; k < L; ++k) {
      const int64_t ch = NHWC ? c0 + k : c0;
      float v = bn_pre(in[0][k], coef[ch], coef[c + ch], coef[2 * c + ch]);
      if (NIN == 2) v += in[NIN - 1][k];
      out[0][k] = RELU ? fmaxf(v, 0.f) : v;
    }
  }
};

// ---- backward: per block and channel sum(g), sum(g xhat) ---------------------------------------
// The ReLU's mask: none (M 0), from the kept output y (M 1), recomputed from x (M 2).
constexpr int kNoMask = 0, kMaskFromY = 1, kMaskFromX = 2;

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
                      : M == kMaskFromX ? relu_passed<HALF>(bn_pre(x[j], cc.mean[j], cc.scale[j], cc.shift[j]))
                                        : true;
    g[j] = pass ? dy[j] : 0.f;
    gx[j] = g[j] * (x[j] - cc.mean[j]) * cc.inv[j];
  }
}

// What the sums kernels read besides the tensors.
struct SumArgs {
  const float *save_mean, *save_inv, *gamma, *beta;  // gamma, beta: kMaskFromX only
};

template <class S, int W, int M>
__global__ void sums_nhwc_k(const S* x, const S* y, const S* dy, SumArgs a, int64_t rows, int c, Ws ws) {
  __shared__ float sh_g[kVecThreads * W], sh_gx[kVecThreads * W];
  const int cvs = c / W, cv = blockIdx.x * blockDim.x + threadIdx.x;
  const int t = threadIdx.y * blockDim.x + threadIdx.x;
  float sg[W] = {}, sgx[W] = {};
  ChanCoefs<W> cc;
#pragma unroll
  for (int j = 0; j < W; ++j) cc.load(j, int64_t(cv) * W + j, cv < cvs, a.save_mean, a.save_inv, a.gamma, a.beta);
  if (cv < cvs) {
    for (int64_t r = blockIdx.y * int64_t(blockDim.y) + threadIdx.y; r < rows; r += int64_t(gridDim.y) * blockDim.y) {
      const uint64_t i = uint64_t(r) * c + uint64_t(cv) * W;
      float xv[W], dv[W], yv[W], g[W], gx[W];
      load<W>(x, i, xv);
      load<W>(dy, i, dv);
      if (M == kMaskFromY) load<W>(y, i, yv);
      grad_terms<W, M, sizeof(S) == 2>(xv, dv, yv, cc, g, gx);
#pragma unroll
      for (int j = 0; j < W; ++j) sg[j] += g[j], sgx[j] += gx[j];
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
__global__ void sums_nchw_k(const S* x, const S* y, const S* dy, SumArgs a, int64_t items, int c, int64_t hw, Ws ws) {
  __shared__ float sh_g[kVecThreads], sh_gx[kVecThreads];
  const int ch = blockIdx.x;
  float sg = 0.f, sgx = 0.f;
  ChanCoefs<W> cc;
#pragma unroll
  for (int j = 0; j < W; ++j) cc.load(j, ch, true, a.save_mean, a.save_inv, a.gamma, a.beta);
  for (int64_t j = blockIdx.y * int64_t(blockDim.x) + threadIdx.x; j < items; j += int64_t(gridDim.y) * blockDim.x) {
    const uint64_t i = nchw_item_offset(uint64_t(j), ch, c, hw, W);
    float xv[W], dv[W], yv[W], g[W], gx[W];
    load<W>(x, i, xv);
    load<W>(dy, i, dv);
    if (M == kMaskFromY) load<W>(y, i, yv);
    grad_terms<W, M, sizeof(S) == 2>(xv, dv, yv, cc, g, gx);
#pragma unroll
    for (int k = 0; k < W; ++k) sg += g[k], sgx += gx[k];
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
  float dx_coef[4];
  bn_backward_coefficients(sg, sgx, a.count, a.gamma[ch], a.save_mean[ch], a.save_inv[ch], a.dgamma[ch], a.dbeta[ch],
                           dx_coef);
  // Then the forward's mean, scale and shift, for a ReLU mask recomputed from x.
  const float coef[kBnCoefs] = {dx_coef[0], dx_coef[1], dx_coef[2], dx_coef[3], a.save_mean[ch],
                                bn_scale(a.gamma[ch], a.save_inv[ch]), a.beta ? a.beta[ch] : 0.f};
  for (int k = 0; k < kBnCoefs; ++k) ws.coef[size_t(k) * c + ch] = coef[k];
}

// in: x, dy[, y when M is kMaskFromY]; out: dx[, dz].
template <bool NHWC, int M, bool DZ, bool HALF>
struct BwdApplyOp {
  static constexpr int kIn = M == kMaskFromY ? 3 : 2;
  const float* coef;
  int64_t c, hw;
  template <int L>
  __device__ void apply(uint64_t i0, const float (&in)[kIn][L], float (&out)[DZ ? 2 : 1][L]) const {
    const int64_t c0 = channel_of(i0, NHWC, c, hw);
#pragma unroll
    for (int k = 0; k < L; ++k) {
      const int64_t ch = NHWC ? c0 + k : c0;
      const bool pass = M == kMaskFromY ? in[kIn - 1][k] > 0.f
                        : M == kMaskFromX
                            ? relu_passed<HALF>(bn_pre(in[0][k], coef[4 * c + ch], coef[5 * c + ch], coef[6 * c + ch]))
                            : true;
      const float g = pass ? in[1][k] : 0.f;
      out[0][k] = coef[ch] * g + coef[c + ch] * (in[0][k] - coef[2 * c + ch]) + coef[3 * c + ch];
      if (DZ) out[DZ ? 1 : 0][k] = g;
    }
  }
};

// The map kernel over the layer's elements with the widest width every pointer's alignment allows.
template <class Op, int NIN, int NOUT>
void launch_apply(cudaStream_t s, const BnShape& sh, int width, const void* const (&in)[NIN], void* const (&out)[NOUT],
                  const Op& op) {
  const size_t elem = sh.half ? 2 : 4;
  bool ok = true;
  for (const void* p : in) ok = ok && vec::aligned_to(p, size_t(width) * elem);
  for (const void* p : out) ok = ok && vec::aligned_to(p, size_t(width) * elem);
  const uint64_t n = uint64_t(sh.n) * sh.c * sh.hw;
  vec::with_type_and_width(sh.half, ok ? width : 1, [&](auto tag, auto w) {
    using S = decltype(tag);
    constexpr int W = decltype(w)::value;
    vec::Ptrs<S, NIN, NOUT> p{};
    for (int k = 0; k < NIN; ++k) p.in[k] = static_cast<const S*>(in[k]);
    for (int k = 0; k < NOUT; ++k) p.out[k] = static_cast<S*>(out[k]);
    vec::map_k<S, W, NIN, NOUT, Op><<<vec::grid_for(n / W + 1), kVecThreads, 0, s>>>(p, n, op);
  });
}

template <bool NHWC>
void forward_apply(cudaStream_t s, const BnShape& sh, int width, const BnForward& a, const float* coef) {
  if (a.residual) {
    const ApplyOp<NHWC, true, 2> op{coef, sh.c, sh.hw};  // the residual join always ends in a ReLU
    launch_apply(s, sh, width, {a.x, a.residual}, {a.y}, op);
  } else if (a.relu) {
    launch_apply(s, sh, width, {a.x}, {a.y}, ApplyOp<NHWC, true, 1>{coef, sh.c, sh.hw});
  } else {
    launch_apply(s, sh, width, {a.x}, {a.y}, ApplyOp<NHWC, false, 1>{coef, sh.c, sh.hw});
  }
}

template <bool NHWC, bool HALF>
void backward_apply(cudaStream_t s, const BnShape& sh, int width, const BnBackward& a, const float* coef) {
  if (a.y && a.dz)
    launch_apply(s, sh, width, {a.x, a.dy, a.y}, {a.dx, a.dz}, BwdApplyOp<NHWC, kMaskFromY, true, HALF>{coef, sh.c, sh.hw});
  else if (a.y)
    launch_apply(s, sh, width, {a.x, a.dy, a.y}, {a.dx}, BwdApplyOp<NHWC, kMaskFromY, false, HALF>{coef, sh.c, sh.hw});
  else if (a.relu_from_x)
    launch_apply(s, sh, width, {a.x, a.dy}, {a.dx}, BwdApplyOp<NHWC, kMaskFromX, false, HALF>{coef, sh.c, sh.hw});
  else
    launch_apply(s, sh, width, {a.x, a.dy}, {a.dx}, BwdApplyOp<NHWC, kNoMask, false, HALF>{coef, sh.c, sh.hw});
}

unsigned finalize_blocks(int64_t c) { return unsigned((c * 32 + kFinThreads - 1) / kFinThreads); }

// The geometry for these pointers: one element a step when one is not aligned to the vector
// (every buffer of the step is 256-byte aligned; this keeps another caller correct).
BnGeometry geometry_for(const BnShape& sh, const BnGeometry& g, std::initializer_list<const void*> ptrs) {
  bool ok = true;
  for (const void* p : ptrs) ok = ok && vec::aligned_to(p, size_t(g.width) * (sh.half ? 2 : 4));
  return ok ? g : bn_narrow(g, sh.c);
}

}  // namespace

void launch_bn_forward(cudaStream_t s, const BnShape& sh, const BnGeometry& g0, const BnForward& a) {
  const BnGeometry g = geometry_for(sh, g0, {a.x, a.residual, a.y});
  const Ws ws(a.ws, g.chunks, sh.c);
  const int c = int(sh.c);
  const dim3 grid(unsigned(g.blocks_x), unsigned(g.chunks)), block(unsigned(g.threads_x), unsigned(g.threads_y));
  vec::with_type_and_width(sh.half, g.width, [&](auto tag, auto w) {
    using S = decltype(tag);
    constexpr int W = decltype(w)::value;
    const S* x = static_cast<const S*>(a.x);
    if (sh.nhwc) stats_nhwc_k<S, W><<<grid, block, 0, s>>>(x, g.rows, c, ws, g.chunks);
    else stats_nchw_k<S, W><<<grid, block, 0, s>>>(x, g.items, c, sh.hw, ws, g.chunks);
  });
  const FwdFinal fin{a.gamma, a.beta, a.running_mean, a.running_var, a.save_mean, a.save_inv_std, a.factor, a.eps};
  fwd_finalize_k<<<finalize_blocks(sh.c), kFinThreads, 0, s>>>(ws, g.chunks, c, fin);
  if (sh.nhwc) forward_apply<true>(s, sh, g.width, a, ws.coef);
  else forward_apply<false>(s, sh, g.width, a, ws.coef);
}

void launch_bn_backward(cudaStream_t s, const BnShape& sh, const BnGeometry& g0, const BnBackward& a) {
  const BnGeometry g = geometry_for(sh, g0, {a.x, a.y, a.dy, a.dx, a.dz});
  const Ws ws(a.ws, g.chunks, sh.c);
  const int c = int(sh.c);
  const dim3 grid(unsigned(g.blocks_x), unsigned(g.chunks)), block(unsigned(g.threads_x), unsigned(g.threads_y));
  const bool from_x = !a.y && a.relu_from_x;
  const SumArgs sa{a.save_mean, a.save_inv_std, from_x ? a.gamma : nullptr, from_x ? a.beta : nullptr};
  vec::with_type_and_width(sh.half, g.width, [&](auto tag, auto w) {
    using S = decltype(tag);
    constexpr int W = decltype(w)::value;
    const S *x = static_cast<const S*>(a.x), *y = static_cast<const S*>(a.y), *dy = static_cast<const S*>(a.dy);
    auto sums = [&](auto mode) {
      constexpr int M = decltype(mode)::value;
      if (sh.nhwc) sums_nhwc_k<S, W, M><<<grid, block, 0, s>>>(x, y, dy, sa, g.rows, c, ws);
      else sums_nchw_k<S, W, M><<<grid, block, 0, s>>>(x, y, dy, sa, g.items, c, sh.hw, ws);
    };
    if (a.y) sums(std::integral_constant<int, kMaskFromY>{});
    else if (from_x) sums(std::integral_constant<int, kMaskFromX>{});
    else sums(std::integral_constant<int, kNoMask>{});
  });
  const BwdFinal fin{a.gamma, from_x ? a.beta : nullptr, a.save_mean, a.save_inv_std, a.dgamma, a.dbeta,
                     double(sh.n) * double(sh.hw)};
  bwd_finalize_k<<<finalize_blocks(sh.c), kFinThreads, 0, s>>>(ws, g.chunks, c, fin);
  if (sh.nhwc && sh.half) backward_apply<true, true>(s, sh, g.width, a, ws.coef);
  else if (sh.nhwc) backward_apply<true, false>(s, sh, g.width, a, ws.coef);
  else if (sh.half) backward_apply<false, true>(s, sh, g.width, a, ws.coef);
  else backward_apply<false, false>(s, sh, g.width, a, ws.coef);
}

}  // namespace nb::kernels
