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

// Empty kernel, for launch-latency measurement and as a no-op timed region in tests.
void launch_empty(cudaStream_t stream);

// Busy-waits `ns` nanoseconds on the GPU: a timed region of known length for tests.
void launch_sleep(cudaStream_t stream, uint64_t ns);

}  // namespace nb::kernels

namespace nb::kernels {

// ---- Device memory (STREAM-style), 16-byte accesses, grid-stride; n4 = element count / 4 ----
enum class StreamOp : int { copy, scale, add, triad, read };
// copy: b = a; scale: b = s a; add: c = a + b; triad: a = b + s c; read: partial[block] = sum a.
// `partial` must hold `blocks` floats (read only). Grid: blocks x threads.
void launch_stream(cudaStream_t s, StreamOp op, float* a, float* b, float* c, float scalar, size_t n4,
                   float* partial, unsigned blocks, unsigned threads);
// a[i] = (i % 1024) * 0.25 - 128 (exact in float), the pattern verification expects.
void launch_pattern(cudaStream_t s, float* a, size_t n);

// SM-driven copy of n16 16-byte words from src to dst (either may be mapped host memory).
void launch_sm_copy(cudaStream_t s, const void* src, void* dst, size_t n16, unsigned blocks, unsigned threads);

// ---- Peak arithmetic: each thread runs `iters` iterations of `kChains` independent chains ----
enum class PeakUnit : int { ffma, hfma2, bf16fma2, dfma, dp4a, imad, mma_fp16, mma_bf16, mma_tf32, mma_int8 };
constexpr int kPeakChains = 8;
// Operations one thread does per iteration (FMA counted as 2; DP4A as 8; mma per warp / 32).
double peak_ops_per_thread_iter(PeakUnit u);
// Lowest compute capability (major*10+minor) whose code path exists; the kernel traps below it.
int peak_min_cc(PeakUnit u);
// out: one value per thread block so nothing is optimised away. clocks: per block, cycles and
// nanoseconds of the block's run (clock64, %globaltimer), to measure the SM clock in the kernel.
void launch_peak(cudaStream_t s, PeakUnit u, int iters, float* out, unsigned long long* clocks, unsigned blocks,
                 unsigned threads);

}  // namespace nb::kernels
