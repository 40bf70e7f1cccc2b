// Launch functions of the burn family's kernels (plain C++ header, as kernels/common/kernels.cuh):
// deterministic GEMM inputs, the bitwise comparison of a GEMM result with its reference, and the
// device-memory test's pattern writes and checks.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cuda_runtime_api.h>

namespace nb::kernels {

// Element types of the GEMM buffers.
enum class BurnElem : int { f16, f32, f64 };

// p[i] = a deterministic value in [-1, 1) from (i, seed), rounded to the element type.
void launch_burn_fill(cudaStream_t s, void* p, BurnElem t, size_t n, uint32_t seed);

// What a comparison found: the number of differing elements and the first one seen (its index,
// and the two values' bits) -- "first" in the order the GPU reported them.
struct BurnCompare {
  unsigned long long faulty;
  unsigned long long first_index;
  unsigned long long got_bits, want_bits;
};
// Counts the elements of `got` whose bits differ from `want` (n elements of `elem_bytes` = 2, 4
// or 8 bytes) into *out (added to what it holds).
void launch_burn_compare(cudaStream_t s, const void* got, const void* want, size_t n, int elem_bytes, BurnCompare* out);

// The memory test's patterns over 32-bit words, as a function of the word's index in the tested
// buffer (so that a failure names its address):
//   walking_ones   word i = 1 << ((i + pass) % 32)
//   walking_zeros  its complement
//   solid          0 (with its inversion, all ones: the classic moving inversions)
//   random         a hash of (i, seed): seeded random
enum class MemPattern : int { walking_ones, walking_zeros, solid, random };
__host__ __device__ inline uint32_t burn_hash32(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return uint32_t(x);
}
__host__ __device__ inline uint32_t mem_pattern_word(MemPattern p, uint64_t i, uint32_t pass, uint32_t seed) {
  switch (p) {
    case MemPattern::walking_ones: return 1u << ((i + pass) & 31u);
    case MemPattern::walking_zeros: return ~(1u << ((i + pass) & 31u));
    case MemPattern::solid: return 0u;
    default: return burn_hash32(i * 0x9E3779B97F4A7C15ull + (uint64_t(seed) << 32) + pass);
  }
}

// What a memory check found: the words that differed, and the first one seen (its word index in
// the tested buffer, the bits read and the bits expected).
struct MemErrors {
  unsigned long long count;
  unsigned long long first_word;
  unsigned int got, want;
};
// words[k] = pattern(base + k) (inverted when `inverted`), k < n.
void launch_mem_write(cudaStream_t s, uint32_t* words, size_t n, uint64_t base, MemPattern p, uint32_t pass,
                      uint32_t seed, bool inverted);
// Checks words[k] against pattern(base + k) (inverted when `inverted`), counting mismatches into
// *err; with `then_invert`, writes each word's inverse expected value after reading it (the
// moving-inversions step: read, check, write the complement, in one sweep).
void launch_mem_check(cudaStream_t s, uint32_t* words, size_t n, uint64_t base, MemPattern p, uint32_t pass,
                      uint32_t seed, bool inverted, bool then_invert, MemErrors* err);

}  // namespace nb::kernels
