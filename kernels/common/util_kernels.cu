#include "kernels.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

namespace nb::kernels {
namespace {

__device__ __forceinline__ uint64_t global_timer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void blocking_kernel(const volatile int32_t* release, int32_t* timed_out,
                                uint64_t timeout_ns) {
  const uint64_t start = global_timer_ns();
  while (*release == 0) {
    if (global_timer_ns() - start > timeout_ns) {
      *timed_out = 1;
      return;
    }
  }
}

__global__ void l2_flush_kernel(uint4* buf, size_t n, uint32_t salt) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    buf[i] = make_uint4(uint32_t(i) ^ salt, salt, uint32_t(i >> 32), ~salt);
  }
}

// splitmix64: a well-mixed 64-bit hash of the counter.
__device__ __forceinline__ uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

__device__ __forceinline__ float uniform_pm1(uint64_t h) {
  // 24 random bits -> [0,1) -> [-1,1)
  return float(h >> 40) * (1.0f / 16777216.0f) * 2.0f - 1.0f;
}

__global__ void fill_kernel(void* buf, size_t n, int type, uint64_t seed) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const uint64_t h = mix64(seed * 0x100000001b3ull + i);
    const float u = uniform_pm1(h);
    switch (static_cast<FillType>(type)) {
      case FillType::f64:
        static_cast<double*>(buf)[i] = double(int64_t(h >> 11)) * (1.0 / 4503599627370496.0) - 1.0;
        break;
      case FillType::f32: static_cast<float*>(buf)[i] = u; break;
      case FillType::f16: static_cast<__half*>(buf)[i] = __float2half_rn(u); break;
      case FillType::bf16: static_cast<__nv_bfloat16*>(buf)[i] = __float2bfloat16_rn(u); break;
      case FillType::i8: static_cast<int8_t*>(buf)[i] = int8_t(int(h % 17u) - 8); break;
      case FillType::fp8_e4m3:
        static_cast<__nv_fp8_e4m3*>(buf)[i] = __nv_fp8_e4m3(u);
        break;
    }
  }
}

__global__ void fill_words_kernel(uint32_t* buf, size_t n, uint32_t mul, uint32_t xor_mask) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) buf[i] = uint32_t(i) * mul ^ xor_mask;
}

__global__ void empty_kernel() {}

__global__ void sleep_kernel(uint64_t ns) {
  const uint64_t start = global_timer_ns();
  while (global_timer_ns() - start < ns) {
  }
}

unsigned grid_for(size_t n, unsigned block) {
  size_t blocks = (n + block - 1) / block;
  if (blocks > 65535u * 8u) blocks = 65535u * 8u;
  return blocks == 0 ? 1u : unsigned(blocks);
}

}  // namespace

void launch_blocking(cudaStream_t stream, const volatile int32_t* release, int32_t* timed_out,
                     uint64_t timeout_ns) {
  blocking_kernel<<<1, 1, 0, stream>>>(release, timed_out, timeout_ns);
}

void launch_l2_flush(cudaStream_t stream, void* buf, size_t bytes, uint32_t salt) {
  const size_t n = bytes / sizeof(uint4);
  l2_flush_kernel<<<grid_for(n, 256), 256, 0, stream>>>(static_cast<uint4*>(buf), n, salt);
}

void launch_fill_random(cudaStream_t stream, void* buf, size_t n, FillType type, uint64_t seed) {
  fill_kernel<<<grid_for(n, 256), 256, 0, stream>>>(buf, n, static_cast<int>(type), seed);
}

void launch_fill_words(cudaStream_t stream, uint32_t* buf, size_t n, uint32_t mul, uint32_t xor_mask) {
  fill_words_kernel<<<grid_for(n, 256), 256, 0, stream>>>(buf, n, mul, xor_mask);
}

void launch_empty(cudaStream_t stream) { empty_kernel<<<1, 1, 0, stream>>>(); }

void launch_sleep(cudaStream_t stream, uint64_t ns) { sleep_kernel<<<1, 1, 0, stream>>>(ns); }

}  // namespace nb::kernels
