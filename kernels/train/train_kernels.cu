// The training step's own kernels (see train_kernels.cuh). FP32 arithmetic throughout; FP16 is
// storage only (loads convert to float, stores round to nearest), so nothing needs sm_70.
#include <cuda_fp16.h>

#include "train_kernels.cuh"

namespace nb::kernels {
namespace {

constexpr unsigned kThreads = 256;

__device__ __forceinline__ float ld(const float* p, size_t i) { return p[i]; }
__device__ __forceinline__ float ld(const __half* p, size_t i) { return __half2float(p[i]); }
__device__ __forceinline__ void st(float* p, size_t i, float v) { p[i] = v; }
__device__ __forceinline__ void st(__half* p, size_t i, float v) { p[i] = __float2half_rn(v); }

unsigned blocks_for(size_t n) {
  const size_t b = (n + kThreads - 1) / kThreads;
  return unsigned(b < 65535 * 16 ? (b ? b : 1) : 65535 * 16);
}

template <class T>
__global__ void relu_k(const T* x, T* y, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    st(y, i, fmaxf(ld(x, i), 0.f));
}
template <class T>
__global__ void relu_bwd_k(const T* y, const T* dy, T* dx, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    st(dx, i, ld(y, i) > 0.f ? ld(dy, i) : 0.f);
}
template <class T>
__global__ void add_relu_k(const T* a, const T* b, T* y, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    st(y, i, fmaxf(ld(a, i) + ld(b, i), 0.f));
}
// One thread per (image, channel).
template <class T>
__global__ void avgpool_k(const T* x, T* y, int n, int c, int hw, bool nhwc) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i >= size_t(n) * c) return;
  const size_t img = i / c, ch = i % c;
  float sum = 0.f;
  for (int p = 0; p < hw; ++p)
    sum += nhwc ? ld(x, (img * hw + p) * c + ch) : ld(x, (img * c + ch) * hw + p);
  st(y, i, sum / float(hw));
}
template <class T>
__global__ void avgpool_bwd_k(const T* dy, T* dx, int n, int c, int hw, bool nhwc) {
  const size_t total = size_t(n) * c * hw;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total; i += size_t(gridDim.x) * blockDim.x) {
    size_t img, ch;
    if (nhwc) {
      ch = i % c;
      img = i / (size_t(c) * hw);
    } else {
      ch = (i / hw) % c;
      img = i / (size_t(c) * hw);
    }
    st(dx, i, ld(dy, img * c + ch) / float(hw));
  }
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

template <class G>
__global__ void sgd_k(float* w, float* v, const G* g, __half* copy, size_t n, float lr, float mu, float wd,
                      const float* scale, const int* skip) {
  if (*skip) return;
  const float inv_scale = 1.f / *scale;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const float wi = w[i];
    const float vi = mu * v[i] + (ld(g, i) * inv_scale + wd * wi);
    const float wn = wi - lr * vi;
    v[i] = vi;
    w[i] = wn;
    if (copy) copy[i] = __float2half_rn(wn);
  }
}

template <class G>
__global__ void nonfinite_k(const G* g, size_t n, int* found) {
  bool bad = false;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const float x = ld(g, i);
    bad = bad || !isfinite(x);
  }
  if (bad) *found = 1;  // every writer writes the same value
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

}  // namespace

void launch_relu(cudaStream_t s, const void* x, void* y, size_t n, bool half) {
  if (half) relu_k<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const __half*>(x), static_cast<__half*>(y), n);
  else relu_k<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const float*>(x), static_cast<float*>(y), n);
}
void launch_relu_backward(cudaStream_t s, const void* y, const void* dy, void* dx, size_t n, bool half) {
  if (half)
    relu_bwd_k<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const __half*>(y), static_cast<const __half*>(dy),
                                                   static_cast<__half*>(dx), n);
  else
    relu_bwd_k<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const float*>(y), static_cast<const float*>(dy),
                                                   static_cast<float*>(dx), n);
}
void launch_add_relu(cudaStream_t s, const void* a, const void* b, void* y, size_t n, bool half) {
  if (half)
    add_relu_k<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const __half*>(a), static_cast<const __half*>(b),
                                                   static_cast<__half*>(y), n);
  else
    add_relu_k<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const float*>(a), static_cast<const float*>(b),
                                                   static_cast<float*>(y), n);
}
void launch_avgpool(cudaStream_t s, const void* x, void* y, int n, int c, int hw, bool nhwc, bool half) {
  const unsigned b = unsigned((size_t(n) * c + kThreads - 1) / kThreads);
  if (half) avgpool_k<<<b, kThreads, 0, s>>>(static_cast<const __half*>(x), static_cast<__half*>(y), n, c, hw, nhwc);
  else avgpool_k<<<b, kThreads, 0, s>>>(static_cast<const float*>(x), static_cast<float*>(y), n, c, hw, nhwc);
}
void launch_avgpool_backward(cudaStream_t s, const void* dy, void* dx, int n, int c, int hw, bool nhwc, bool half) {
  const size_t total = size_t(n) * c * hw;
  if (half)
    avgpool_bwd_k<<<blocks_for(total), kThreads, 0, s>>>(static_cast<const __half*>(dy), static_cast<__half*>(dx), n, c,
                                                          hw, nhwc);
  else
    avgpool_bwd_k<<<blocks_for(total), kThreads, 0, s>>>(static_cast<const float*>(dy), static_cast<float*>(dx), n, c,
                                                          hw, nhwc);
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
void launch_sgd_update(cudaStream_t s, float* w, float* v, const void* g, bool g_half, void* copy, size_t n, float lr,
                       float mu, float wd, const float* scale, const int* skip) {
  if (g_half)
    sgd_k<<<blocks_for(n), kThreads, 0, s>>>(w, v, static_cast<const __half*>(g), static_cast<__half*>(copy), n, lr, mu,
                                              wd, scale, skip);
  else
    sgd_k<<<blocks_for(n), kThreads, 0, s>>>(w, v, static_cast<const float*>(g), static_cast<__half*>(copy), n, lr, mu,
                                              wd, scale, skip);
}
void launch_find_nonfinite(cudaStream_t s, const void* g, bool half, size_t n, int* found) {
  if (half) nonfinite_k<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const __half*>(g), n, found);
  else nonfinite_k<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const float*>(g), n, found);
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

namespace {
template <class T>
__global__ void accumulate_k(T* dst, const T* src, size_t n, float scale) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    st(dst, i, (ld(dst, i) + ld(src, i)) * scale);
}
}  // namespace
void launch_accumulate(cudaStream_t s, void* dst, const void* src, size_t n, bool half, float scale) {
  if (!n) return;
  if (half)
    accumulate_k<<<blocks_for(n), kThreads, 0, s>>>(static_cast<__half*>(dst), static_cast<const __half*>(src), n, scale);
  else accumulate_k<<<blocks_for(n), kThreads, 0, s>>>(static_cast<float*>(dst), static_cast<const float*>(src), n, scale);
}

}  // namespace nb::kernels
