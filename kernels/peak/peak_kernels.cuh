// Launch functions of the peak family's kernels (plain C++ header, as kernels/common/kernels.cuh).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cuda_runtime_api.h>

namespace nb::kernels {

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
