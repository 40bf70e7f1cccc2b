// Launch functions for nodebench's own kernels. This header is plain C++ (no CUDA syntax), so
// host code compiled by the C++ compiler can call them. Each launch checks nothing itself; the
// caller checks cudaGetLastError through the harness.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cuda_runtime_api.h>

namespace nb::kernels {

// Spins until *release becomes non-zero (host writes it through mapped pinned memory) or until
// timeout_ns has passed on the GPU's global timer; on timeout writes 1 to *timed_out. Used to
// hold a stream while the host queues the timed work, so that enqueue cost stays out of it.
void launch_blocking(cudaStream_t stream, const volatile int32_t* release, int32_t* timed_out,
                     uint64_t timeout_ns);

// Writes `bytes` bytes of a changing pattern over `buf` (size of the L2 or larger): evicts what
// the L2 held before the next timed region.
void launch_l2_flush(cudaStream_t stream, void* buf, size_t bytes, uint32_t salt);

enum class FillType : int { f64, f32, f16, bf16, i8, fp8_e4m3 };

// Fills n elements with pseudo-random values from a counter-based hash of (seed, index):
// floats uniform in [-1, 1), int8 uniform in [-8, 8]. Deterministic for a given seed.
void launch_fill_random(cudaStream_t stream, void* buf, size_t n, FillType type, uint64_t seed);

// Writes n 32-bit words: word i = uint32(i) * mul ^ xor_mask (unsigned, wrapping). The host link
// family's source pattern, made on the GPU so that a case's setup does not spend a second of one
// host core writing 1 GiB (its verification recomputes words on the host).
void launch_fill_words(cudaStream_t stream, uint32_t* buf, size_t n, uint32_t mul, uint32_t xor_mask);

// Empty kernel, for launch-latency measurement and as a no-op timed region in tests.
void launch_empty(cudaStream_t stream);

// Busy-waits `ns` nanoseconds on the GPU: a timed region of known length for tests.
void launch_sleep(cudaStream_t stream, uint64_t ns);

// SM-driven copy of n16 16-byte words from src to dst (either may be mapped host memory).
void launch_sm_copy(cudaStream_t s, const void* src, void* dst, size_t n16, unsigned blocks, unsigned threads);

}  // namespace nb::kernels
