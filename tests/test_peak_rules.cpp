// The peak family's tensor-core rules without a GPU: the operation count per MMA shape, the wgmma
// matrix descriptor against the PTX ISA's bit layout, which instruction measures a tensor unit on
// which GPU and build, and the exact all-ones check of the wgmma kernel.
#include <gtest/gtest.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstring>

#include "peak/peak_rules.hpp"
#include "bench/benchmark.hpp"
#include "run/plan.hpp"

using namespace nb;
using kernels::MmaShape;
using kernels::PeakUnit;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST(PeakShapes, OperationsPerMmaAreTwiceTheMultiplyAdds) {
  EXPECT_EQ(kernels::mma_ops({64, 256, 16}), 524288.0);   // 64 * 256 * 16 = 262144 multiply-adds
  EXPECT_EQ(kernels::mma_ops({64, 256, 8}), 262144.0);
  EXPECT_EQ(kernels::mma_ops({64, 256, 32}), 1048576.0);
  EXPECT_EQ(kernels::mma_ops({16, 8, 32}), 8192.0);       // mma.sync m16n8k32
  EXPECT_EQ(kernels::mma_ops({}), 0.0);
}

TEST(PeakShapes, WgmmaShapesArePtxShapesOf32BytesOfK) {
  // PTX ISA wgmma.mma_async: M is 64; K is 16 for f16/bf16, 8 for tf32, 32 for s8 and e4m3; the
  // kernel uses N = 256, the largest. K x the operand size is the 32-byte row of the smem tiles.
  const struct {
    PeakUnit u;
    int k, bytes;
  } want[] = {{PeakUnit::mma_fp16, 16, 2}, {PeakUnit::mma_bf16, 16, 2}, {PeakUnit::mma_tf32, 8, 4},
              {PeakUnit::mma_int8, 32, 1}, {PeakUnit::mma_fp8, 32, 1}};
  for (const auto& w : want) {
    const MmaShape s = kernels::wgmma_peak_shape(w.u);
    EXPECT_EQ(s.m, 64);
    EXPECT_EQ(s.n, 256);
    EXPECT_EQ(s.k, w.k) << int(w.u);
    EXPECT_EQ(unsigned(s.k * w.bytes), kernels::kWgmmaTileABytes / 64);
    EXPECT_EQ(wgmma_operand_one(w.u).bytes, unsigned(w.bytes));
    EXPECT_EQ(kernels::kWgmmaAccRegs, s.m * s.n / int(kernels::kWgmmaThreads));  // one f32/s32 register each
  }
  EXPECT_EQ(kernels::wgmma_peak_shape(PeakUnit::ffma).k, 0);
  EXPECT_EQ(kernels::wgmma_peak_instruction(PeakUnit::ffma), nullptr);
  // The instruction names the shape and types the table says.
  EXPECT_STREQ(kernels::wgmma_peak_instruction(PeakUnit::mma_tf32), "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32");
  EXPECT_STREQ(kernels::wgmma_peak_instruction(PeakUnit::mma_int8), "wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8");
  EXPECT_STREQ(kernels::wgmma_peak_instruction(PeakUnit::mma_fp8), "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3");
}

TEST(WgmmaDescriptor, FieldsSitWhereThePtxLayoutPutsThem) {
  // Start address bits 0-13, leading byte offset 16-29, stride byte offset 32-45 (each the byte
  // value >> 4), base offset 49-51, swizzle 62-63: decoded here by shifts and masks.
  auto field = [](uint64_t d, int lo, int bits) { return (d >> lo) & ((uint64_t(1) << bits) - 1); };
  const uint64_t d = kernels::wgmma_smem_desc(0x1230, 128, 256);
  EXPECT_EQ(field(d, 0, 14), 0x123u);
  EXPECT_EQ(field(d, 16, 14), 8u);
  EXPECT_EQ(field(d, 32, 14), 16u);
  EXPECT_EQ(field(d, 49, 3), 0u);
  EXPECT_EQ(field(d, 62, 2), 0u);
  EXPECT_EQ(d, 0x0000001000080123ull);
  // Nothing lands in the reserved bits (14-15, 30-31, 46-48, 52-61), whatever the inputs.
  const uint64_t all = kernels::wgmma_smem_desc(0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 3, 7);
  EXPECT_EQ(all & ~0xC00E3FFF3FFF3FFFull, 0u);
  EXPECT_EQ(all, 0xC00E3FFF3FFF3FFFull);
  // Swizzle mode and base offset.
  EXPECT_EQ(kernels::wgmma_smem_desc(0, 0, 0, 1), 0x4000000000000000ull);  // 128-byte swizzle
  EXPECT_EQ(kernels::wgmma_smem_desc(0, 0, 0, 3, 5), 0xC00A000000000000ull);
  // The address is the 18-bit shared-window offset: higher bits are dropped.
  EXPECT_EQ(kernels::wgmma_smem_desc(0x40010, 0, 0), 0x1u);
}

TEST(WgmmaDescriptor, TilesHoldEveryCoreMatrixWhicheverOffsetStepsAlongK) {
  // A: 8 x 2 core matrices (M x K), B: 32 x 2 (N x K), 128 bytes each. Read with the leading offset
  // along K (the PTX convention for K-major) or the other way round, the last byte read is inside
  // the tile, so a misread layout cannot fault.
  auto last_byte = [](int along_mn, int along_k, uint32_t step_mn, uint32_t step_k) {
    return (along_mn - 1) * step_mn + (along_k - 1) * step_k + 127;
  };
  EXPECT_EQ(last_byte(8, 2, kernels::kWgmmaCoreMN, kernels::kWgmmaCoreK) + 1, kernels::kWgmmaTileABytes);
  EXPECT_LT(last_byte(8, 2, kernels::kWgmmaCoreK, kernels::kWgmmaCoreMN), kernels::kWgmmaTileABytes);
  EXPECT_EQ(last_byte(32, 2, kernels::kWgmmaCoreMN, kernels::kWgmmaCoreK) + 1, kernels::kWgmmaTileBBytes);
  EXPECT_LT(last_byte(32, 2, kernels::kWgmmaCoreK, kernels::kWgmmaCoreMN), kernels::kWgmmaTileBBytes);
  EXPECT_EQ(kernels::kWgmmaTileBytes % 16, 0u);
}

TEST(TensorPath, MmaSyncBelowHopperIsTheDensePath) {
  for (int cc : {70, 75, 80, 86, 89}) {
    const TensorPath p = choose_tensor_path(PeakUnit::mma_fp16, cc, false, "not built");
    EXPECT_TRUE(p.runs);
    EXPECT_EQ(p.instr, TensorInstr::mma_sync) << cc;
    EXPECT_TRUE(p.dense_peak) << cc;
  }
  const TensorPath fp8 = choose_tensor_path(PeakUnit::mma_fp8, 89, false, nullptr);  // QMMA on Ada
  EXPECT_TRUE(fp8.runs && fp8.dense_peak && fp8.instr == TensorInstr::mma_sync);
}

TEST(TensorPath, HopperUsesWgmmaOrSaysItWasNotBuilt) {
  for (PeakUnit u : {PeakUnit::mma_fp16, PeakUnit::mma_bf16, PeakUnit::mma_tf32, PeakUnit::mma_int8, PeakUnit::mma_fp8}) {
    const TensorPath p = choose_tensor_path(u, 90, true, nullptr);
    EXPECT_TRUE(p.runs);
    EXPECT_EQ(p.instr, TensorInstr::wgmma);
    EXPECT_TRUE(p.dense_peak);
  }
  // The build had no 90: skipped with the build's reason, never measured by mma.sync.
  const TensorPath unbuilt = choose_tensor_path(PeakUnit::mma_fp16, 90, false, kernels::wgmma_peak_unbuilt_reason());
  EXPECT_FALSE(unbuilt.runs);
  EXPECT_TRUE(contains(unbuilt.reason, "wgmma")) << unbuilt.reason;
  EXPECT_TRUE(contains(unbuilt.reason, "CMAKE_CUDA_ARCHITECTURES")) << unbuilt.reason;
  const TensorPath no_image = choose_tensor_path(PeakUnit::mma_tf32, 90, false, nullptr);
  EXPECT_FALSE(no_image.runs);
  EXPECT_TRUE(contains(no_image.reason, "does not load")) << no_image.reason;
}

TEST(TensorPath, TheBuildSaysWhetherItHoldsTheWgmmaKernels) {
  // CMake compiles peak_wgmma_sm90a.cu for sm_90a exactly when CMAKE_CUDA_ARCHITECTURES lists 90.
  const char* why = kernels::wgmma_peak_unbuilt_reason();
  EXPECT_EQ(why == nullptr, bool(NB_TEST_WGMMA_BUILT));
  if (why) {
    EXPECT_TRUE(contains(why, "not built for sm_90a")) << why;
    // The launch functions exist and refuse, touching no GPU.
    int blocks = -1;
    EXPECT_EQ(kernels::wgmma_peak_blocks_per_sm(PeakUnit::mma_fp16, &blocks), cudaErrorInvalidDeviceFunction);
    EXPECT_EQ(kernels::launch_peak_wgmma(nullptr, PeakUnit::mma_fp16, 1, nullptr, nullptr, nullptr, 1),
              cudaErrorInvalidDeviceFunction);
    EXPECT_FALSE(kernels::wgmma_peak_runnable(PeakUnit::mma_fp16));
  }
}

TEST(TensorPath, BlackwellMeasuresMmaSyncAndIsNotHeldAgainstTheDensePeak) {
  for (int cc : {100, 103, 120, 121}) {
    const TensorPath p = choose_tensor_path(PeakUnit::mma_bf16, cc, false, nullptr);
    EXPECT_TRUE(p.runs) << cc;
    EXPECT_EQ(p.instr, TensorInstr::mma_sync);
    EXPECT_FALSE(p.dense_peak) << cc;
    EXPECT_TRUE(contains(p.reason, "mma.sync")) << p.reason;
    EXPECT_TRUE(contains(p.reason, "not compared against the dense tensor peak")) << p.reason;
  }
  // Even with an sm_90a image present (it cannot load there, but the rule does not depend on it).
  EXPECT_EQ(choose_tensor_path(PeakUnit::mma_fp16, 100, true, nullptr).instr, TensorInstr::mma_sync);
  // FP8: no warp-level FP8 MMA on 10.x/11.x (skipped), native on 12.x (mma.sync, not dense).
  for (int cc : {100, 103, 110}) {
    const TensorPath p = choose_tensor_path(PeakUnit::mma_fp8, cc, false, nullptr);
    EXPECT_FALSE(p.runs) << cc;
    EXPECT_TRUE(contains(p.reason, "FP8")) << p.reason;
  }
  const TensorPath fp8_120 = choose_tensor_path(PeakUnit::mma_fp8, 120, false, nullptr);
  EXPECT_TRUE(fp8_120.runs);
  EXPECT_FALSE(fp8_120.dense_peak);
}

TEST(TensorPath, NotDenseMeansNoTheoreticalRate) {
  const Theoretical dense = peak_theoretical("mma_fp16", 9, 0, 132, 1980.0, true);
  ASSERT_TRUE(dense.rate.has_value());
  EXPECT_NEAR(*dense.rate, 132 * 4096 * 1980e6 / 1e12, 1e-9);  // H100/H200: 4096 FP16 tensor ops/clock/SM
  const Theoretical off = peak_theoretical("mma_fp16", 9, 0, 132, 1980.0, false);
  EXPECT_FALSE(off.rate.has_value());
  EXPECT_TRUE(off.detail.contains("none"));
  // FP8 has its per-clock rate on 8.9 and 9.0 (the datasheets' FP8 figure equals the INT8 one).
  EXPECT_NEAR(*peak_theoretical("mma_fp8", 9, 0, 132, 1000.0, true).rate, 132 * 8192 * 1e9 / 1e12, 1e-9);
  EXPECT_NEAR(*peak_theoretical("mma_fp8", 8, 9, 58, 1000.0, true).rate, 58 * 2048 * 1e9 / 1e12, 1e-9);
  EXPECT_FALSE(peak_theoretical("mma_fp8", 10, 0, 148, 1000.0, true).rate.has_value());
}

TEST(WgmmaOnes, OperandOneIsTheTypesOneAsTheCudaHeadersEncodeIt) {
  auto bits16 = [](auto v) {
    uint16_t b;
    std::memcpy(&b, &v, 2);
    return uint32_t(b);
  };
  EXPECT_EQ(wgmma_operand_one(PeakUnit::mma_fp16).bits, bits16(__float2half(1.0f)));
  EXPECT_EQ(wgmma_operand_one(PeakUnit::mma_bf16).bits, bits16(__float2bfloat16(1.0f)));
  const float one = 1.0f;
  uint32_t f32;
  std::memcpy(&f32, &one, 4);
  EXPECT_EQ(wgmma_operand_one(PeakUnit::mma_tf32).bits, f32);
  EXPECT_EQ(wgmma_operand_one(PeakUnit::mma_fp8).bits, uint32_t(__nv_cvt_float_to_fp8(1.0f, __NV_SATFINITE, __NV_E4M3)));
  EXPECT_EQ(wgmma_operand_one(PeakUnit::mma_int8).bits, 1u);
  EXPECT_EQ(wgmma_operand_one(PeakUnit::dfma).bytes, 0u);
  // The tile is that value throughout.
  const std::vector<uint8_t> t = wgmma_ones_tile(PeakUnit::mma_bf16);
  ASSERT_EQ(t.size(), size_t(kernels::kWgmmaTileBytes));
  for (size_t i = 0; i < t.size(); i += 2) ASSERT_EQ(t[i] | t[i + 1] << 8, 0x3F80) << i;
}

TEST(WgmmaOnes, EveryAccumulatorMustBeIterationsTimesWgmmaTimesK) {
  const size_t n = size_t(kernels::kWgmmaAccRegs) * kernels::kWgmmaThreads;
  // FP16: 8 iterations x kWgmmaPerIter wgmma x 16 ones per dot product.
  const float want = float(8 * kernels::kWgmmaPerIter * 16);
  EXPECT_EQ(wgmma_ones_expected(PeakUnit::mma_fp16, 8), double(want));
  uint32_t bits;
  std::memcpy(&bits, &want, 4);
  std::vector<uint32_t> acc(n, bits);
  EXPECT_EQ(wgmma_ones_mismatch(PeakUnit::mma_fp16, 8, acc), "");
  // One iteration fewer in the count, or one wrong register, is reported.
  EXPECT_NE(wgmma_ones_mismatch(PeakUnit::mma_fp16, 7, acc), "");
  const float off = want - 1;
  std::memcpy(&acc[3 * kernels::kWgmmaThreads + 5], &off, 4);
  const std::string m = wgmma_ones_mismatch(PeakUnit::mma_fp16, 8, acc);
  EXPECT_TRUE(contains(m, "1 of " + std::to_string(n))) << m;
  EXPECT_TRUE(contains(m, "register 3 of thread 5")) << m;
  // INT8 accumulates in s32: the words are integers, not float bits. K = 32.
  std::vector<uint32_t> s32(n, uint32_t(8 * kernels::kWgmmaPerIter * 32));
  EXPECT_EQ(wgmma_ones_mismatch(PeakUnit::mma_int8, 8, s32), "");
  EXPECT_NE(wgmma_ones_mismatch(PeakUnit::mma_fp8, 8, s32), "");  // the same words read as f32 are wrong
  EXPECT_TRUE(contains(wgmma_ones_mismatch(PeakUnit::mma_int8, 8, std::vector<uint32_t>(5)), "5 words"));
}

TEST(PeakCases, Fp8CaseFromAdaUpAndNamedByItsUnit) {
  GpuInfo g;
  int found = 0;
  for (const Case& c : select_cases(Suite::quick, {"peak"}, "")) {
    if (c.params["unit"] != "mma_fp8") continue;
    ++found;
    g.cc_major = 8;
    g.cc_minor = 6;
    const Availability a86 = c.available(g);
    EXPECT_FALSE(a86.ok);
    EXPECT_TRUE(contains(a86.reason, "8.9")) << a86.reason;
    g.cc_minor = 9;
    EXPECT_TRUE(c.available(g).ok);
  }
  EXPECT_EQ(found, 1);
}
