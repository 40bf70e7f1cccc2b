#include "kernels/memory/memory_kernels.cuh"

namespace nb::kernels {
namespace {

constexpr int kUnroll = 4;  // independent 16-byte loads in flight per thread

__device__ __forceinline__ float4 f4_scale(float4 v, float s) { return make_float4(v.x * s, v.y * s, v.z * s, v.w * s); }
__device__ __forceinline__ float4 f4_add(float4 a, float4 b) { return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w); }
__device__ __forceinline__ float4 f4_fma(float4 a, float s, float4 b) {
  return make_float4(fmaf(s, a.x, b.x), fmaf(s, a.y, b.y), fmaf(s, a.z, b.z), fmaf(s, a.w, b.w));
}

// Each thread handles kUnroll elements spaced one grid apart per step, loads first. Plain loads
// and stores: on an H200 the streaming hints (__ldcs/__stcs) made a 4 GiB copy 1.8% slower
// (scripts/dev/device/copy_kernel_shapes.cu, results/h200x2/2026-11-29-peer/copy_kernel_shapes.txt).
template <StreamOp Op>
__global__ void stream_kernel(float4* __restrict__ a, float4* __restrict__ b, float4* __restrict__ c, float s,
                              size_t n4, float* __restrict__ partial) {
  const size_t grid = size_t(gridDim.x) * blockDim.x;
  const size_t tid = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  float acc = 0.f;
  size_t i = tid;
  for (; i + (kUnroll - 1) * grid < n4; i += kUnroll * grid) {
    float4 x[kUnroll], y[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const size_t j = i + u * grid;
      if constexpr (Op == StreamOp::copy || Op == StreamOp::scale || Op == StreamOp::add || Op == StreamOp::read) x[u] = a[j];
      if constexpr (Op == StreamOp::add || Op == StreamOp::triad) y[u] = b[j];
      if constexpr (Op == StreamOp::triad) x[u] = c[j];
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const size_t j = i + u * grid;
      if constexpr (Op == StreamOp::copy) b[j] = x[u];
      if constexpr (Op == StreamOp::scale) b[j] = f4_scale(x[u], s);
      if constexpr (Op == StreamOp::add) c[j] = f4_add(x[u], y[u]);
      if constexpr (Op == StreamOp::triad) a[j] = f4_fma(x[u], s, y[u]);
      if constexpr (Op == StreamOp::read) acc += (x[u].x + x[u].y) + (x[u].z + x[u].w);
    }
  }
  for (; i < n4; i += grid) {  // the tail
    if constexpr (Op == StreamOp::copy) b[i] = a[i];
    if constexpr (Op == StreamOp::scale) b[i] = f4_scale(a[i], s);
    if constexpr (Op == StreamOp::add) c[i] = f4_add(a[i], b[i]);
    if constexpr (Op == StreamOp::triad) a[i] = f4_fma(c[i], s, b[i]);
    if constexpr (Op == StreamOp::read) { const float4 v = a[i]; acc += (v.x + v.y) + (v.z + v.w); }
  }
  if constexpr (Op == StreamOp::read) {
    __shared__ float red[1024];
    red[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned w = blockDim.x / 2; w > 0; w >>= 1) {
      if (threadIdx.x < w) red[threadIdx.x] += red[threadIdx.x + w];
      __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = red[0];
  }
}

__global__ void pattern_kernel(float* a, size_t n) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    a[i] = float(i % 1024) * 0.25f - 128.0f;
}

}  // namespace

void launch_stream(cudaStream_t s, StreamOp op, float* a, float* b, float* c, float scalar, size_t n4, float* partial,
                   unsigned blocks, unsigned threads) {
  auto* A = reinterpret_cast<float4*>(a);
  auto* B = reinterpret_cast<float4*>(b);
  auto* C = reinterpret_cast<float4*>(c);
  switch (op) {
    case StreamOp::copy: stream_kernel<StreamOp::copy><<<blocks, threads, 0, s>>>(A, B, C, scalar, n4, partial); break;
    case StreamOp::scale: stream_kernel<StreamOp::scale><<<blocks, threads, 0, s>>>(A, B, C, scalar, n4, partial); break;
    case StreamOp::add: stream_kernel<StreamOp::add><<<blocks, threads, 0, s>>>(A, B, C, scalar, n4, partial); break;
    case StreamOp::triad: stream_kernel<StreamOp::triad><<<blocks, threads, 0, s>>>(A, B, C, scalar, n4, partial); break;
    case StreamOp::read: stream_kernel<StreamOp::read><<<blocks, threads, 0, s>>>(A, B, C, scalar, n4, partial); break;
  }
}

void launch_pattern(cudaStream_t s, float* a, size_t n) { pattern_kernel<<<4096, 256, 0, s>>>(a, n); }

}  // namespace nb::kernels
