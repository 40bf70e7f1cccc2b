// Launch functions of the peak family's kernels (plain C++ header, as kernels/common/kernels.cuh).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cuda_runtime_api.h>

#include "kernels/peak/mma_shapes.hpp"

namespace nb::kernels {

// ---- Peak arithmetic: each thread runs `iters` iterations of `kChains` independent chains ----
enum class PeakUnit : int { ffma, hfma2, bf16fma2, dfma, dp4a, imad, mma_fp16, mma_bf16, mma_tf32, mma_int8, mma_fp8 };
constexpr int kPeakChains = 8;
constexpr bool is_tensor_unit(PeakUnit u) { return u >= PeakUnit::mma_fp16; }
// Operations one thread does per iteration (FMA counted as 2; DP4A as 8; mma per warp / 32).
double peak_ops_per_thread_iter(PeakUnit u);
// Lowest compute capability (major*10+minor) whose code path exists; the kernel traps below it.
int peak_min_cc(PeakUnit u);
// out: one value per thread block so nothing is optimised away. clocks: per block, cycles and
// nanoseconds of the block's run (clock64, %globaltimer), to measure the SM clock in the kernel.
void launch_peak(cudaStream_t s, PeakUnit u, int iters, float* out, unsigned long long* clocks, unsigned blocks,
                 unsigned threads);

// ---- Tensor-core peak through wgmma (Hopper, sm_90a only; kernels/peak/peak_wgmma_sm90a.cu) ----
// Each block is one warpgroup (128 threads) that keeps one m64n256 accumulator in registers
// and, per loop iteration, issues kWgmmaPerIter wgmma on A and B tiles resident in shared memory
// (kWgmmaTileBytes, copied from `tiles` in global memory at the start).
constexpr unsigned kWgmmaThreads = 128;
constexpr int kWgmmaPerIter = 4;
constexpr int kWgmmaAccRegs = 128;  // 64 x 256 accumulators / 128 threads
// The shape of one wgmma of the peak kernel for a tensor unit ({} for the others): N = 256,
// K = 32 bytes of the operand type (PTX ISA: k16 for f16/bf16, k8 for tf32, k32 for s8/e4m3).
NB_HOST_DEVICE constexpr MmaShape wgmma_peak_shape(PeakUnit u) {
  switch (u) {
    case PeakUnit::mma_fp16:
    case PeakUnit::mma_bf16: return {64, 256, 16};
    case PeakUnit::mma_tf32: return {64, 256, 8};
    case PeakUnit::mma_int8:
    case PeakUnit::mma_fp8: return {64, 256, 32};
    default: return {};
  }
}
// The PTX instruction the wgmma peak kernel of `u` issues (nullptr for non-tensor units).
const char* wgmma_peak_instruction(PeakUnit u);
// nullptr when this build holds the wgmma kernels; otherwise why it does not (the translation
// unit is compiled for sm_90a only when CMAKE_CUDA_ARCHITECTURES lists 90).
const char* wgmma_peak_unbuilt_reason();
// Whether the wgmma kernel of `u` can run on the current device (cudaFuncGetAttributes finds an
// image for it: only on compute capability 9.0). Leaves no CUDA error behind.
bool wgmma_peak_runnable(PeakUnit u);
// Resident blocks per SM of the wgmma kernel of `u` (cudaOccupancyMaxActiveBlocksPerMultiprocessor).
cudaError_t wgmma_peak_blocks_per_sm(PeakUnit u, int* blocks);
// acc_out: block 0's accumulators after the last iteration, kWgmmaAccRegs x kWgmmaThreads 32-bit
// words (register r of thread t at r * kWgmmaThreads + t; f32 bits, s32 for INT8). clocks as
// launch_peak. Returns the launch's error (cudaErrorInvalidDeviceFunction where not built).
cudaError_t launch_peak_wgmma(cudaStream_t s, PeakUnit u, int iters, const void* tiles, uint32_t* acc_out,
                              unsigned long long* clocks, unsigned blocks);

}  // namespace nb::kernels
