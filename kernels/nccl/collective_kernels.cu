#include "collective_kernels.cuh"

#include <cuda_fp16.h>

namespace nb::kernels {
namespace {

__host__ __device__ __forceinline__ uint64_t cmix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

__host__ __device__ __forceinline__ int popcount64(uint64_t x) {
#ifdef __CUDA_ARCH__
  return __popcll(x);
#else
  return __builtin_popcountll(x);
#endif
}

// Reductions: v(r, i) = bit (r mod 64) of B(r / 64, i), a hash per block of 64 ranks and
// position, so v is in {0, 1} and differs with the position and the rank. Every partial sum,
// in whatever order and grouping the collective adds, is an integer from 0 to the rank count:
// exact in bfloat16 up to 256 ranks (half: 2048). The sum over n ranks is a sum of popcounts,
// which varies with the position for every n (no rank count makes it vanish or constant).
__host__ __device__ __forceinline__ uint64_t reduce_bits(int block, size_t i, uint64_t seed) {
  return cmix64((seed * 0x100000001b3ull + i) ^ (uint64_t(block + 1) * 0x9fb21c651e98df25ull));
}

__host__ __device__ __forceinline__ int reduce_value(int rank, size_t i, uint64_t seed) {
  return int((reduce_bits(rank / 64, i, seed) >> (rank % 64)) & 1u);
}

// Sum over r in [0, n) of reduce_value(r, i): per block of 64 ranks, the popcount of its bits
// below the ranks present.
__host__ __device__ __forceinline__ int reduce_sum(int nranks, size_t i, uint64_t seed) {
  int s = 0;
  for (int b = 0; b * 64 < nranks; ++b) {
    const int present = nranks - b * 64;
    uint64_t bits = reduce_bits(b, i, seed);
    if (present < 64) bits &= (1ull << present) - 1;
    s += popcount64(bits);
  }
  return s;
}

// All-gather and broadcast: a value per (rank, index) in [-128, 128], exact in every type.
__host__ __device__ __forceinline__ int copy_value(int rank, size_t i, uint64_t seed) {
  return int(cmix64((seed ^ (uint64_t(rank + 1) * 0xd1342543de82ef95ull)) * 0x100000001b3ull + i) % 257u) - 128;
}

__host__ __device__ __forceinline__ double expected_at(CollKind k, int rank, int nranks, size_t n, size_t chunk,
                                                       size_t i, uint64_t seed) {
  switch (k) {
    case CollKind::all_reduce: return reduce_sum(nranks, i, seed);
    case CollKind::reduce_scatter: return reduce_sum(nranks, size_t(rank) * n + i, seed);
    case CollKind::all_gather: return copy_value(int(i / chunk), i % chunk, seed);
    case CollKind::broadcast: return copy_value(0, i, seed);
  }
  return 0;
}

__device__ __forceinline__ void store(void* buf, size_t i, CollDType t, float v) {
  switch (t) {
    case CollDType::f32: static_cast<float*>(buf)[i] = v; break;
    case CollDType::f16: static_cast<__half*>(buf)[i] = __float2half_rn(v); break;
    case CollDType::bf16: static_cast<uint16_t*>(buf)[i] = uint16_t(__float_as_uint(v) >> 16); break;  // exact for these integers
  }
}

__device__ __forceinline__ float load(const void* buf, size_t i, CollDType t) {
  switch (t) {
    case CollDType::f32: return static_cast<const float*>(buf)[i];
    case CollDType::f16: return __half2float(static_cast<const __half*>(buf)[i]);
    case CollDType::bf16: return __uint_as_float(uint32_t(static_cast<const uint16_t*>(buf)[i]) << 16);
  }
  return 0.f;
}

__global__ void coll_fill_kernel(void* buf, size_t n, CollDType t, CollKind k, int rank, uint64_t seed) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  const bool red = k == CollKind::all_reduce || k == CollKind::reduce_scatter;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    store(buf, i, t, float(red ? reduce_value(rank, i, seed) : copy_value(rank, i, seed)));
}

__global__ void coll_check_kernel(const void* out, size_t n, CollDType t, CollKind k, int rank, int nranks,
                                  size_t chunk, uint64_t seed, double tol, unsigned long long* counters) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  unsigned long long bad = 0, first = ~0ull;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const double want = expected_at(k, rank, nranks, n, chunk, i, seed);
    const double got = load(out, i, t);
    if (!(fabs(got - want) <= tol)) {  // NaN fails too
      ++bad;
      if (first == ~0ull) first = i;
    }
  }
  if (bad) {
    atomicAdd(&counters[0], bad);
    atomicMin(&counters[1], first);
  }
}

unsigned grid(size_t n) {
  size_t b = (n + 255) / 256;
  if (b > 65535u * 4u) b = 65535u * 4u;
  return b == 0 ? 1u : unsigned(b);
}

}  // namespace

void launch_coll_fill(cudaStream_t s, void* buf, size_t n, CollDType t, CollKind k, int rank, uint64_t seed) {
  coll_fill_kernel<<<grid(n), 256, 0, s>>>(buf, n, t, k, rank, seed);
}

void launch_coll_check(cudaStream_t s, const void* out, size_t n, CollDType t, CollKind k, int rank, int nranks,
                       size_t chunk, uint64_t seed, double tolerance, unsigned long long* counters) {
  coll_check_kernel<<<grid(n), 256, 0, s>>>(out, n, t, k, rank, nranks, chunk == 0 ? 1 : chunk, seed, tolerance,
                                            counters);
}

double coll_expected(CollKind k, int rank, int nranks, size_t n, size_t chunk, size_t i, uint64_t seed) {
  return expected_at(k, rank, nranks, n, chunk == 0 ? 1 : chunk, i, seed);
}

double coll_input(CollKind k, int rank, size_t i, uint64_t seed) {
  const bool red = k == CollKind::all_reduce || k == CollKind::reduce_scatter;
  return red ? reduce_value(rank, i, seed) : copy_value(rank, i, seed);
}

}  // namespace nb::kernels
