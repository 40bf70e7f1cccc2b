#include "peak_rules.hpp"

#include <cstring>

#include "node/profiles.hpp"

namespace nb {

using kernels::PeakUnit;

namespace {

std::string cc_text(int cc) { return std::to_string(cc / 10) + "." + std::to_string(cc % 10); }

}  // namespace

Theoretical peak_theoretical(const std::string& unit, int cc_major, int cc_minor, int sm_count, double mhz,
                             bool dense) {
  Theoretical t;
  if (!dense) {
    t.detail = {{"none", "the instruction measured is not the GPU's dense tensor path"}};
    return t;
  }
  const auto per_clk = unit_ops_per_clock_per_sm(unit, cc_major, cc_minor);
  if (!per_clk) {
    t.detail = {{"none", "no published one-instruction rate for this unit on compute capability " +
                             cc_text(cc_major * 10 + cc_minor) +
                             " (e.g. Pascal multiplies 32-bit integers with three XMAD)"}};
    return t;
  }
  t.rate = double(sm_count) * *per_clk * mhz * 1e6 / 1e12;
  t.detail = {{"ops_per_clock_per_sm", *per_clk},
              {"sm_count", sm_count},
              {"formula", "SMs x ops/clock/SM x SM clock measured in the kernel"}};
  return t;
}

TensorPath choose_tensor_path(PeakUnit u, int cc, bool wgmma_image, const char* unbuilt) {
  TensorPath p;
  if (cc < 90) return p;  // mma.sync: how Volta to Ada reach their tensor rate
  if (cc == 90) {
    if (wgmma_image) {
      p.instr = TensorInstr::wgmma;
      return p;
    }
    p.runs = false;
    p.reason = std::string("compute capability 9.0 reaches its tensor-core rate through wgmma, and this build's wgmma "
                           "kernels cannot run here: ") +
               (unbuilt ? unbuilt : "its sm_90a code does not load on this GPU") +
               "; configure with 90 in CMAKE_CUDA_ARCHITECTURES (mma.sync would understate the tensor cores)";
    return p;
  }
  if (u == PeakUnit::mma_fp8 && cc < 120) {
    p.runs = false;
    p.reason = "compute capability " + cc_text(cc) +
               " has no warp-level FP8 MMA (ptxas turns mma.sync .e4m3 into FP16 MMA and conversions) and no "
               "wgmma; its FP8 tensor rate needs tcgen05, which nodebench does not issue";
    return p;
  }
  p.dense_peak = false;
  p.reason = "measures the warp-level mma.sync rate: compute capability " + cc_text(cc) +
             " has no wgmma, and nodebench does not issue tcgen05, through which Blackwell datacenter GPUs reach "
             "their dense tensor rate; not compared against the dense tensor peak";
  return p;
}

OperandOne wgmma_operand_one(PeakUnit u) {
  switch (u) {
    case PeakUnit::mma_fp16: return {0x3C00u, 2};      // sign 0, exponent 15 (bias 15), mantissa 0
    case PeakUnit::mma_bf16: return {0x3F80u, 2};      // the top half of FP32 1.0
    case PeakUnit::mma_tf32: return {0x3F800000u, 4};  // TF32 is read from FP32 containers
    case PeakUnit::mma_int8: return {0x01u, 1};
    case PeakUnit::mma_fp8: return {0x38u, 1};  // E4M3: exponent 7 (bias 7), mantissa 0
    default: return {};
  }
}

std::vector<uint8_t> wgmma_ones_tile(PeakUnit u) {
  const OperandOne one = wgmma_operand_one(u);
  std::vector<uint8_t> tile(kernels::kWgmmaTileBytes);
  if (one.bytes == 0) return tile;
  for (size_t i = 0; i < tile.size(); i += one.bytes) std::memcpy(&tile[i], &one.bits, one.bytes);  // little-endian
  return tile;
}

double wgmma_ones_expected(PeakUnit u, int iters) {
  return double(iters) * kernels::kWgmmaPerIter * kernels::wgmma_peak_shape(u).k;
}

std::string wgmma_ones_mismatch(PeakUnit u, int iters, const std::vector<uint32_t>& acc) {
  const size_t want_n = size_t(kernels::kWgmmaAccRegs) * kernels::kWgmmaThreads;
  if (acc.size() != want_n)
    return "accumulator readback has " + std::to_string(acc.size()) + " words, expected " + std::to_string(want_n);
  const double expect = wgmma_ones_expected(u, iters);
  size_t bad = 0, first = 0;
  double first_value = 0;
  for (size_t i = 0; i < acc.size(); ++i) {
    double v;
    if (u == PeakUnit::mma_int8) {
      v = double(int32_t(acc[i]));
    } else {
      float f;
      std::memcpy(&f, &acc[i], sizeof f);
      v = f;
    }
    if (v != expect) {
      if (bad++ == 0) {
        first = i;
        first_value = v;
      }
    }
  }
  if (bad == 0) return "";
  const size_t t = first % kernels::kWgmmaThreads, r = first / kernels::kWgmmaThreads;
  return std::to_string(bad) + " of " + std::to_string(acc.size()) + " accumulators wrong, e.g. register " +
         std::to_string(r) + " of thread " + std::to_string(t) + " is " + std::to_string(first_value) +
         ", expected " + std::to_string(expect) + " (" + std::to_string(iters) + " iterations x " +
         std::to_string(kernels::kWgmmaPerIter) + " wgmma x K " + std::to_string(kernels::wgmma_peak_shape(u).k) +
         " of all-ones operands)";
}

}  // namespace nb
