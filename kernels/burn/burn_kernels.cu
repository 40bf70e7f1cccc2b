#include "kernels/burn/burn_kernels.cuh"

#include <cuda_fp16.h>

namespace nb::kernels {

namespace {

constexpr unsigned kThreads = 256;

unsigned grid_for(size_t n) {
  const size_t b = (n + kThreads - 1) / kThreads;
  return unsigned(b < 65535u * 8u ? (b == 0 ? 1 : b) : 65535u * 8u);
}

__global__ void fill_kernel(void* p, int t, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    // 1/1024 steps in [-1, 1): exact in every element type.
    const float v = float(int(burn_hash32(i * 0x9E3779B97F4A7C15ull + seed) % 2048u) - 1024) / 1024.0f;
    if (t == int(BurnElem::f16)) static_cast<__half*>(p)[i] = __float2half(v);
    else if (t == int(BurnElem::f32)) static_cast<float*>(p)[i] = v;
    else static_cast<double*>(p)[i] = double(v);
  }
}

template <class T>
__global__ void compare_kernel(const T* got, const T* want, size_t n, BurnCompare* out) {
  unsigned long long mine = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const T g = got[i], w = want[i];
    if (g != w) {
      if (atomicAdd(&out->faulty, 1ull) == 0ull) {
        out->first_index = i;
        out->got_bits = (unsigned long long)g;
        out->want_bits = (unsigned long long)w;
      }
      ++mine;
    }
  }
  (void)mine;
}

__global__ void mem_write_kernel(uint32_t* w, size_t n, uint64_t base, int p, uint32_t pass, uint32_t seed, bool inv) {
  for (size_t k = blockIdx.x * size_t(blockDim.x) + threadIdx.x; k < n; k += size_t(gridDim.x) * blockDim.x) {
    const uint32_t v = mem_pattern_word(MemPattern(p), base + k, pass, seed);
    w[k] = inv ? ~v : v;
  }
}

__global__ void mem_check_kernel(uint32_t* w, size_t n, uint64_t base, int p, uint32_t pass, uint32_t seed, bool inv,
                                 bool then_invert, MemErrors* err) {
  for (size_t k = blockIdx.x * size_t(blockDim.x) + threadIdx.x; k < n; k += size_t(gridDim.x) * blockDim.x) {
    uint32_t want = mem_pattern_word(MemPattern(p), base + k, pass, seed);
    if (inv) want = ~want;
    const uint32_t got = w[k];
    if (got != want && atomicAdd(&err->count, 1ull) == 0ull) {
      err->first_word = base + k;
      err->got = got;
      err->want = want;
    }
    if (then_invert) w[k] = ~want;
  }
}

}  // namespace

void launch_burn_fill(cudaStream_t s, void* p, BurnElem t, size_t n, uint32_t seed) {
  fill_kernel<<<grid_for(n), kThreads, 0, s>>>(p, int(t), n, seed);
}

void launch_burn_compare(cudaStream_t s, const void* got, const void* want, size_t n, int elem_bytes, BurnCompare* out) {
  const unsigned g = grid_for(n);
  if (elem_bytes == 2)
    compare_kernel<<<g, kThreads, 0, s>>>(static_cast<const unsigned short*>(got), static_cast<const unsigned short*>(want), n, out);
  else if (elem_bytes == 4)
    compare_kernel<<<g, kThreads, 0, s>>>(static_cast<const unsigned*>(got), static_cast<const unsigned*>(want), n, out);
  else
    compare_kernel<<<g, kThreads, 0, s>>>(static_cast<const unsigned long long*>(got),
                                          static_cast<const unsigned long long*>(want), n, out);
}

void launch_mem_write(cudaStream_t s, uint32_t* words, size_t n, uint64_t base, MemPattern p, uint32_t pass,
                      uint32_t seed, bool inverted) {
  mem_write_kernel<<<grid_for(n), kThreads, 0, s>>>(words, n, base, int(p), pass, seed, inverted);
}

void launch_mem_check(cudaStream_t s, uint32_t* words, size_t n, uint64_t base, MemPattern p, uint32_t pass,
                      uint32_t seed, bool inverted, bool then_invert, MemErrors* err) {
  mem_check_kernel<<<grid_for(n), kThreads, 0, s>>>(words, n, base, int(p), pass, seed, inverted, then_invert, err);
}

}  // namespace nb::kernels
