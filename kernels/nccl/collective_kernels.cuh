// Launchers of the kernels that fill and check the buffers of the NCCL collectives. Plain C++
// header (no CUDA syntax). Values are small integers, exact in float, half and bfloat16, so
// that the expected result of every collective is exact whatever the order of summation (up to
// 256 ranks; see docs/SCHEMA.md, family nccl).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cuda_runtime_api.h>

namespace nb::kernels {

enum class CollDType : int { f32 = 0, f16 = 1, bf16 = 2 };
enum class CollKind : int { all_reduce = 0, reduce_scatter = 1, all_gather = 2, broadcast = 3 };

// Writes rank `rank`'s input values v(rank, i), i in [0, n), into `buf` (n elements). For the
// reductions v is in {0, 1} (a hash bit per rank and position, so that every partial sum is an
// integer no larger than the rank count and the sum over any rank count varies with the
// position); for all-gather and broadcast in [-128, 128].
void launch_coll_fill(cudaStream_t s, void* buf, size_t n, CollDType t, CollKind k, int rank, uint64_t seed);

// Compares the n output elements of `rank` (of `nranks`) with what `k` must give from inputs
// made by launch_coll_fill with the same seed: all_reduce out[i] = sum_r v(r, i);
// reduce_scatter out[i] = sum_r v(r, rank*n + i); all_gather out[j*chunk + i] = v(j, i);
// broadcast (root 0) out[i] = v(0, i). Adds the number of mismatches to counters[0] and lowers
// counters[1] to the first mismatching index (set it to ~0 before). `tolerance`: the largest
// absolute difference accepted (0: exact).
void launch_coll_check(cudaStream_t s, const void* out, size_t n, CollDType t, CollKind k, int rank, int nranks,
                       size_t chunk, uint64_t seed, double tolerance, unsigned long long* counters);

// The expected value at output index i (host side, for reporting the first mismatch).
double coll_expected(CollKind k, int rank, int nranks, size_t n, size_t chunk, size_t i, uint64_t seed);

// The input value v(rank, i) launch_coll_fill writes (host side: the same function, so that a
// host simulation of a collective can be checked against coll_expected).
double coll_input(CollKind k, int rank, size_t i, uint64_t seed);

}  // namespace nb::kernels
