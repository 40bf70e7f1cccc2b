// The peak family's decisions that need no GPU, unit-tested without one (tests/test_peak_rules.cpp,
// tests/test_p40.cpp): the theoretical rate a unit is held against, which instruction measures the
// tensor-core cases on a GPU (by compute capability and what the build holds), and the cheap exact
// check of the wgmma kernel.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/peak/peak_kernels.cuh"

namespace nb {

// The rate of `unit` (a peak case name: fp32_ffma, mma_fp16, ...) at `mhz` on `sm_count` SMs of
// compute capability major.minor: SMs x the unit's published operations per clock per SM
// (unit_ops_per_clock_per_sm) x the clock, in tera-operations per second, and the record's
// details.theoretical. None where no one-instruction rate is published (e.g. INT32 multiply-add
// on Pascal), or where the instruction measured is not the dense path (`dense` false).
struct Theoretical {
  std::optional<double> rate;
  nlohmann::json detail;
};
Theoretical peak_theoretical(const std::string& unit, int cc_major, int cc_minor, int sm_count, double mhz, bool dense);

enum class TensorInstr { mma_sync, wgmma };

struct TensorPath {
  bool runs = true;                           // false: the case is skipped with `reason`
  TensorInstr instr = TensorInstr::mma_sync;
  bool dense_peak = true;  // the instruction is how this GPU reaches its dense tensor rate, so the
                           // case is compared against the dense tensor peak
  std::string reason;      // why it does not run; or, where !dense_peak, what it measures instead
};

// `cc` is major*10+minor; `wgmma_image`: the build's sm_90a kernels load on this GPU
// (kernels::wgmma_peak_runnable); `unbuilt`: kernels::wgmma_peak_unbuilt_reason() (nullptr when
// built). Below 9.0: mma.sync, the dense path of those GPUs. 9.0: wgmma, or skipped without it
// (mma.sync there would read as a shortfall of the GPU). Newer (no wgmma): mma.sync, said so and
// not held against the dense peak; FP8 skipped on 10.x and 11.x, which have no warp-level FP8 MMA.
TensorPath choose_tensor_path(kernels::PeakUnit u, int cc, bool wgmma_image, const char* unbuilt);

// The bits of the value 1 in the wgmma operand type of `u`, and that type's size in bytes (FP16
// 0x3C00, BF16 0x3F80, TF32 as FP32 0x3F800000, INT8 1, FP8 E4M3 0x38); {0, 0} for other units.
struct OperandOne {
  uint32_t bits = 0;
  unsigned bytes = 0;
};
OperandOne wgmma_operand_one(kernels::PeakUnit u);

// A wgmma tile (kernels::kWgmmaTileBytes) filled with the value 1 of `u`'s operand type.
std::vector<uint8_t> wgmma_ones_tile(kernels::PeakUnit u);

// With every operand 1, each accumulator after `iters` iterations is iters x kWgmmaPerIter x K
// (K of the unit's shape), exactly (far below 2^24). The words of `acc` (kernels::launch_peak_wgmma's
// acc_out: f32 bits, s32 for INT8) are compared with it: "" when all match, else the first
// mismatch and how many there are.
double wgmma_ones_expected(kernels::PeakUnit u, int iters);
std::string wgmma_ones_mismatch(kernels::PeakUnit u, int iters, const std::vector<uint32_t>& acc);

}  // namespace nb
