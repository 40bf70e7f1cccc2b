// The training step's own kernels (see train_kernels.cuh). FP32 arithmetic throughout; FP16 is
// storage only (loads convert to float, stores round to nearest), so nothing needs sm_70. The
// elementwise, pooling and update kernels move 16 bytes a thread per step (train_vec.cuh).
#include <cuda_fp16.h>

#include <type_traits>

#include "train_kernels.cuh"
#include "train_vec.cuh"

namespace nb::kernels {
namespace {

using vec::load;
using vec::store;
constexpr unsigned kThreads = 256;

__device__ __forceinline__ float ld(const float* p, size_t i) { return p[i]; }
__device__ __forceinline__ float ld(const __half* p, size_t i) { return __half2float(p[i]); }
__device__ __forceinline__ void st(float* p, size_t i, float v) { p[i] = v; }
__device__ __forceinline__ void st(__half* p, size_t i, float v) { p[i] = __float2half_rn(v); }

unsigned blocks_for(size_t n) {
  const size_t b = (n + kThreads - 1) / kThreads;
  return unsigned(b < 65535 * 16 ? (b ? b : 1) : 65535 * 16);
}

// ---- elementwise ops for vec::map_k: apply<L> gets L consecutive elements ------------------------
struct ReluOp {
  template <int L>
  __device__ void apply(uint64_t, const float (&in)[1][L], float (&out)[1][L]) const {
#pragma unroll
    for (int k = 0; k < L; ++k) out[0][k] = fmaxf(in[0][k], 0.f);
  }
};
struct ReluBwdOp {  // in: y (the ReLU's output), dy
  template <int L>
  __device__ void apply(uint64_t, const float (&in)[2][L], float (&out)[1][L]) const {
#pragma unroll
    for (int k = 0; k < L; ++k) out[0][k] = in[0][k] > 0.f ? in[1][k] : 0.f;
  }
};
struct AddReluOp {
  template <int L>
  __device__ void apply(uint64_t, const float (&in)[2][L], float (&out)[1][L]) const {
#pragma unroll
    for (int k = 0; k < L; ++k) out[0][k] = fmaxf(in[0][k] + in[1][k], 0.f);
  }
};
struct AccumulateOp {  // in: dst, src
  float scale;
  template <int L>
  __device__ void apply(uint64_t, const float (&in)[2][L], float (&out)[1][L]) const {
#pragma unroll
    for (int k = 0; k < L; ++k) out[0][k] = (in[0][k] + in[1][k]) * scale;
  }
};

// One map over n elements of FP16 (half) or FP32 storage: 16-byte vectors when every pointer is
// 16-byte aligned, else one element a step.
template <int NIN, int NOUT, class Op>
void run_map(cudaStream_t s, bool half, const void* const (&in)[NIN], void* const (&out)[NOUT], size_t n, const Op& op) {
  if (!n) return;
  bool aligned = true;
  for (const void* p : in) aligned = aligned && vec::aligned16(p);
  for (const void* p : out) aligned = aligned && vec::aligned16(p);
  auto go = [&](auto tag, auto width) {
    using S = decltype(tag);
    constexpr int W = decltype(width)::value;
    vec::Ptrs<S, NIN, NOUT> p{};
    for (int k = 0; k < NIN; ++k) p.in[k] = static_cast<const S*>(in[k]);
    for (int k = 0; k < NOUT; ++k) p.out[k] = static_cast<S*>(out[k]);
    vec::map_k<S, W, NIN, NOUT, Op><<<vec::grid_for(n / W + 1), kVecThreads, 0, s>>>(p, n, op);
  };
  using One = std::integral_constant<int, 1>;
  if (half) aligned ? go(uint16_t{}, std::integral_constant<int, 8>{}) : go(uint16_t{}, One{});
  else aligned ? go(float{}, std::integral_constant<int, 4>{}) : go(float{}, One{});
}

// ---- global average pool --------------------------------------------------------------------
// One thread per (image, W-channel vector): NHWC reads W channels of a position in one access
// (consecutive threads, consecutive channels: coalesced); NCHW sums its plane, W positions a step.
template <class S, int W, bool NHWC>
__global__ void avgpool_k(const S* x, S* y, int n, int c, int hw) {
  const uint64_t per_img = NHWC ? uint64_t(c / W) : uint64_t(c);
  const uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x;
  if (i >= uint64_t(n) * per_img) return;
  const uint64_t img = i / per_img, j = i % per_img;
  float sum[NHWC ? W : 1] = {};
  for (int p = 0; p < (NHWC ? hw : hw / W); ++p) {
    float v[W];
    load<W>(x, NHWC ? (img * hw + p) * c + j * W : (img * c + j) * hw + uint64_t(p) * W, v);
#pragma unroll
    for (int k = 0; k < W; ++k) sum[NHWC ? k : 0] += v[k];
  }
  if (NHWC) {
    float out[W];
#pragma unroll
    for (int k = 0; k < W; ++k) out[k] = sum[NHWC ? k : 0] / float(hw);
    store<W>(y, img * c + j * W, out);
  } else {
    const float out[1] = {sum[0] / float(hw)};
    store<1>(y, img * c + j, out);
  }
}
// dx = dy[image][channel] / hw: W outputs a step (NHWC: W channels of one position; NCHW: W
// positions of one channel plane).
template <class S, int W, bool NHWC>
__global__ void avgpool_bwd_k(const S* dy, S* dx, int n, int c, int hw) {
  const uint64_t nv = uint64_t(n) * c * hw / W;
  for (uint64_t v = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; v < nv; v += uint64_t(gridDim.x) * blockDim.x) {
    const uint64_t i0 = v * W;
    float out[W];
    if (NHWC) {
      float g[W];
      load<W>(dy, (i0 / (uint64_t(c) * hw)) * c + i0 % c, g);
#pragma unroll
      for (int k = 0; k < W; ++k) out[k] = g[k] / float(hw);
    } else {
      float g[1];
      load<1>(dy, i0 / hw, g);
#pragma unroll
      for (int k = 0; k < W; ++k) out[k] = g[0] / float(hw);
    }
    store<W>(dx, i0, out);
  }
}

// The pooling launchers' dispatch: f(storage tag, Width<W>, layout) for the storage type, the
// per-channel vector width (train_vec.hpp's channel_vec_width) and the layout.
template <class F>
void pool_dispatch(bool half, bool nhwc, int width, F&& f) {
  vec::with_type_and_width(half, width, [&](auto tag, auto w) {
    if (nhwc) f(tag, w, std::true_type{});
    else f(tag, w, std::false_type{});
  });
}

// ---- the multi-tensor SGD update and its non-finite check --------------------------------------
struct MtDev {
  MtTensor t[kMtMaxTensors];
  const MtChunk* chunks;
};
MtDev mt_dev(const MtTable& t) {
  MtDev d{};
  for (int i = 0; i < t.tensors && i < kMtMaxTensors; ++i) d.t[i] = t.t[i];
  d.chunks = static_cast<const MtChunk*>(t.chunks);
  return d;
}

// W elements of one tensor at i: 4 a step in the vector part (float4 of w and v; 4 gradients, 8
// or 16 bytes), 1 in the tail.
template <class G, int W>
__device__ __forceinline__ void sgd_elems(const MtTensor& T, uint64_t i, float lr, float mu, float wd, float inv_scale) {
  float w[W], v[W], gr[W];
  load<W>(T.w, i, w);
  load<W>(T.v, i, v);
  load<W>(static_cast<const G*>(T.g), i, gr);
#pragma unroll
  for (int k = 0; k < W; ++k) {
    v[k] = mu * v[k] + (gr[k] * inv_scale + wd * w[k]);
    w[k] = w[k] - lr * v[k];
  }
  store<W>(T.w, i, w);
  store<W>(T.v, i, v);
  if (T.copy) store<W>(static_cast<uint16_t*>(T.copy), i, w);
}

// A chunk in 4-element steps (float4 of w and v) when every pointer of its tensor is aligned to
// that at the chunk's first element (mt_chunk_vectorizable), else one element a step; either way
// the tail of a chunk whose count is not a multiple of 4 runs one element a step.
template <class G, int W>
__device__ void sgd_range(const MtTensor& T, const MtChunk& ch, float lr, float mu, float wd, float inv_scale) {
  const VecSplit sp = vec_split(ch.count, W);
  for (uint64_t v = threadIdx.x; v < sp.vectors; v += blockDim.x) sgd_elems<G, W>(T, ch.begin + v * W, lr, mu, wd, inv_scale);
  for (uint64_t i = sp.tail_begin + threadIdx.x; i < ch.count; i += blockDim.x)
    sgd_elems<G, 1>(T, ch.begin + i, lr, mu, wd, inv_scale);
}
template <class G>
__device__ void sgd_chunk(const MtTensor& T, const MtChunk& ch, float lr, float mu, float wd, float inv_scale) {
  const void* const ptrs[4] = {T.w, T.v, T.g, T.copy};
  const int elem[4] = {4, 4, int(sizeof(G)), 2};
  if (mt_chunk_vectorizable(ptrs, elem, 4, ch.begin, 4)) sgd_range<G, 4>(T, ch, lr, mu, wd, inv_scale);
  else sgd_range<G, 1>(T, ch, lr, mu, wd, inv_scale);
}

// One block per chunk of the table.
__global__ void mt_sgd_k(MtDev a, float lr, float mu, float wd, const float* scale, const int* skip) {
  if (*skip) return;
  const MtChunk ch = a.chunks[blockIdx.x];
  const MtTensor& T = a.t[ch.tensor];
  const float inv_scale = 1.f / *scale;
  if (T.g_half) sgd_chunk<uint16_t>(T, ch, lr, mu, wd, inv_scale);
  else sgd_chunk<float>(T, ch, lr, mu, wd, inv_scale);
}

template <class G, int W>
__device__ bool range_nonfinite(const G* g, const MtChunk& ch) {
  const VecSplit sp = vec_split(ch.count, W);
  bool bad = false;
  for (uint64_t v = threadIdx.x; v < sp.vectors; v += blockDim.x) {
    float x[W];
    load<W>(g, ch.begin + v * W, x);
#pragma unroll
    for (int k = 0; k < W; ++k) bad = bad || !isfinite(x[k]);
  }
  for (uint64_t i = sp.tail_begin + threadIdx.x; i < ch.count; i += blockDim.x) {
    float x[1];
    load<1>(g, ch.begin + i, x);
    bad = bad || !isfinite(x[0]);
  }
  return bad;
}
// 16 bytes a step (8 FP16 or 4 FP32) where the chunk's start is aligned to them.
template <class G>
__device__ bool chunk_nonfinite(const G* g, const MtChunk& ch) {
  constexpr int W = kVecBytes / int(sizeof(G));
  const void* const ptrs[1] = {g};
  const int elem[1] = {int(sizeof(G))};
  return mt_chunk_vectorizable(ptrs, elem, 1, ch.begin, W) ? range_nonfinite<G, W>(g, ch) : range_nonfinite<G, 1>(g, ch);
}

__global__ void mt_nonfinite_k(MtDev a, int* found) {
  const MtChunk ch = a.chunks[blockIdx.x];
  const MtTensor& T = a.t[ch.tensor];
  const bool bad = T.g_half ? chunk_nonfinite<uint16_t>(static_cast<const uint16_t*>(T.g), ch)
                            : chunk_nonfinite<float>(static_cast<const float*>(T.g), ch);
  if (bad) *found = 1;  // every writer writes the same value
}

__device__ float block_reduce(float v, bool is_max, float* sh) {
  const unsigned t = threadIdx.x;
  sh[t] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) sh[t] = is_max ? fmaxf(sh[t], sh[t + s]) : sh[t] + sh[t + s];
    __syncthreads();
  }
  const float r = sh[0];
  __syncthreads();
  return r;
}

// One block per row.
template <class T>
__global__ void softmax_xent_k(const float* logits, const float* bias, const int32_t* labels, T* dl, float* loss,
                               int classes, const float* scale_p, float inv_n) {
  __shared__ float sh[kThreads];
  const float scale = *scale_p;
  const size_t row = blockIdx.x;
  const float* z = logits + row * classes;
  float m = -INFINITY;
  for (int j = threadIdx.x; j < classes; j += blockDim.x) m = fmaxf(m, z[j] + bias[j]);
  m = block_reduce(m, true, sh);
  float sum = 0.f;
  for (int j = threadIdx.x; j < classes; j += blockDim.x) sum += expf(z[j] + bias[j] - m);
  sum = block_reduce(sum, false, sh);
  const int label = labels[row];
  for (int j = threadIdx.x; j < classes; j += blockDim.x) {
    const float p = expf(z[j] + bias[j] - m) / sum;
    st(dl, row * classes + j, scale * (p - (j == label ? 1.f : 0.f)) * inv_n);
  }
  if (threadIdx.x == 0) atomicAdd(loss, (logf(sum) + m - (z[label] + bias[label])) * inv_n);
}

template <class T>
__global__ void bias_grad_k(const T* dl, float* db, int n, int classes) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= classes) return;
  float s = 0.f;
  for (int i = 0; i < n; ++i) s += ld(dl, size_t(i) * classes + j);
  db[j] = s;
}

__global__ void loss_scale_k(float* scale, const int* found, int* good, int* skipped, int interval) {
  next_loss_scale(*scale, *found != 0, *good, *skipped, interval);
}

__device__ __forceinline__ uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}
__global__ void init_uniform_k(float* w, size_t n, float scale, uint64_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const uint64_t h = mix(seed * 0x9E3779B97F4A7C15ull + i);
    w[i] = scale * (float(h >> 40) * (2.f / 16777216.f) - 1.f);
  }
}
__global__ void fill_value_k(float* w, size_t n, float value) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) w[i] = value;
}
template <class T>
__global__ void cast_k(const float* src, T* dst, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    st(dst, i, src[i]);
}
__global__ void labels_k(int32_t* labels, int n, int classes, uint64_t seed) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) labels[i] = int32_t(mix(seed * 0x9E3779B97F4A7C15ull + uint64_t(i)) % uint64_t(classes));
}

template <class S>
__global__ void nchw_to_nhwc_k(const S* __restrict__ x, S* __restrict__ y, uint64_t total, FastDiv c, FastDiv hw) {
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t o = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; o < total; o += stride) {
    const uint64_t pos = fast_div(o, c), ch = o - pos * c.d;  // o = pos c + ch, pos = img hw + p
    const uint64_t img = fast_div(pos, hw), p = pos - img * hw.d;
    y[o] = x[(img * c.d + ch) * hw.d + p];
  }
}

}  // namespace

void launch_nchw_to_nhwc(cudaStream_t s, const void* x, void* y, int64_t n, int64_t c, int64_t hw, bool half) {
  const uint64_t total = uint64_t(n) * uint64_t(c) * uint64_t(hw);
  if (!total) return;
  const FastDiv fc = make_fast_div(uint64_t(c)), fhw = make_fast_div(uint64_t(hw));
  if (half)
    nchw_to_nhwc_k<uint16_t><<<vec::grid_for(total), kThreads, 0, s>>>(static_cast<const uint16_t*>(x),
                                                                      static_cast<uint16_t*>(y), total, fc, fhw);
  else
    nchw_to_nhwc_k<float><<<vec::grid_for(total), kThreads, 0, s>>>(static_cast<const float*>(x), static_cast<float*>(y),
                                                                   total, fc, fhw);
}

void launch_relu(cudaStream_t s, const void* x, void* y, size_t n, bool half) {
  run_map<1, 1>(s, half, {x}, {y}, n, ReluOp{});
}
void launch_relu_backward(cudaStream_t s, const void* y, const void* dy, void* dx, size_t n, bool half) {
  run_map<2, 1>(s, half, {y, dy}, {dx}, n, ReluBwdOp{});
}
void launch_add_relu(cudaStream_t s, const void* a, const void* b, void* y, size_t n, bool half) {
  run_map<2, 1>(s, half, {a, b}, {y}, n, AddReluOp{});
}
void launch_accumulate(cudaStream_t s, void* dst, const void* src, size_t n, bool half, float scale) {
  run_map<2, 1>(s, half, {dst, src}, {dst}, n, AccumulateOp{scale});
}
void launch_avgpool(cudaStream_t s, const void* x, void* y, int n, int c, int hw, bool nhwc, bool half) {
  const size_t elem = half ? 2 : 4;
  int w = channel_vec_width(nhwc, c, hw, int(elem));
  if (!vec::aligned_to(x, w * elem) || !vec::aligned_to(y, w * elem)) w = 1;
  const size_t threads = size_t(n) * size_t(nhwc ? c / w : c);
  pool_dispatch(half, nhwc, w, [&](auto tag, auto wd, auto layout) {
    using S = decltype(tag);
    avgpool_k<S, decltype(wd)::value, decltype(layout)::value><<<unsigned((threads + kThreads - 1) / kThreads), kThreads, 0, s>>>(
        static_cast<const S*>(x), static_cast<S*>(y), n, c, hw);
  });
}
void launch_avgpool_backward(cudaStream_t s, const void* dy, void* dx, int n, int c, int hw, bool nhwc, bool half) {
  const size_t elem = half ? 2 : 4;
  int w = channel_vec_width(nhwc, c, hw, int(elem));
  if (!vec::aligned_to(dy, w * elem) || !vec::aligned_to(dx, w * elem)) w = 1;
  const size_t total = size_t(n) * c * hw;
  pool_dispatch(half, nhwc, w, [&](auto tag, auto wd, auto layout) {
    using S = decltype(tag);
    avgpool_bwd_k<S, decltype(wd)::value, decltype(layout)::value><<<vec::grid_for(total / size_t(w)), kThreads, 0, s>>>(
        static_cast<const S*>(dy), static_cast<S*>(dx), n, c, hw);
  });
}
void launch_softmax_xent(cudaStream_t s, const float* logits, const float* bias, const int32_t* labels, void* dlogits,
                         float* loss, int n, int classes, const float* scale, bool half) {
  if (half)
    softmax_xent_k<<<n, kThreads, 0, s>>>(logits, bias, labels, static_cast<__half*>(dlogits), loss, classes, scale,
                                          1.f / float(n));
  else
    softmax_xent_k<<<n, kThreads, 0, s>>>(logits, bias, labels, static_cast<float*>(dlogits), loss, classes, scale,
                                          1.f / float(n));
}
void launch_bias_grad(cudaStream_t s, const void* dlogits, float* db, int n, int classes, bool half) {
  const unsigned b = unsigned((classes + kThreads - 1) / kThreads);
  if (half) bias_grad_k<<<b, kThreads, 0, s>>>(static_cast<const __half*>(dlogits), db, n, classes);
  else bias_grad_k<<<b, kThreads, 0, s>>>(static_cast<const float*>(dlogits), db, n, classes);
}
void launch_mt_sgd(cudaStream_t s, const MtTable& t, float lr, float mu, float wd, const float* scale, const int* skip) {
  if (t.n_chunks) mt_sgd_k<<<t.n_chunks, kThreads, 0, s>>>(mt_dev(t), lr, mu, wd, scale, skip);
}
void launch_mt_find_nonfinite(cudaStream_t s, const MtTable& t, int* found) {
  if (t.n_chunks) mt_nonfinite_k<<<t.n_chunks, kThreads, 0, s>>>(mt_dev(t), found);
}
void launch_update_loss_scale(cudaStream_t s, float* scale, const int* found, int* good, int* skipped, int interval) {
  loss_scale_k<<<1, 1, 0, s>>>(scale, found, good, skipped, interval);
}
void launch_init_uniform(cudaStream_t s, float* w, size_t n, float scale, uint64_t seed) {
  init_uniform_k<<<blocks_for(n), kThreads, 0, s>>>(w, n, scale, seed);
}
void launch_fill_value(cudaStream_t s, float* w, size_t n, float value) {
  fill_value_k<<<blocks_for(n), kThreads, 0, s>>>(w, n, value);
}
void launch_cast_from_float(cudaStream_t s, const float* src, void* dst, size_t n, bool half) {
  if (half) cast_k<<<blocks_for(n), kThreads, 0, s>>>(src, static_cast<__half*>(dst), n);
  else cast_k<<<blocks_for(n), kThreads, 0, s>>>(src, static_cast<float*>(dst), n);
}
void launch_labels(cudaStream_t s, int32_t* labels, int n, int classes, uint64_t seed) {
  labels_k<<<unsigned((n + kThreads - 1) / kThreads), kThreads, 0, s>>>(labels, n, classes, seed);
}

}  // namespace nb::kernels
