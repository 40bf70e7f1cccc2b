// Capability decisions that no GPU at hand exercises (issue 25, item 14), driven by the P40
// fixtures (tests/data/p40_*.json) and cc 6.2 / 7.0 variants of them: the FP16 verdict's words per
// compute capability, the train family's FP16 note, the conv family's peak key, and doctor's JIT
// path (the peak family's theoretical rate, none for IMAD on Pascal: test_p40.cpp). The
// expectations are the hardware's (CUDA C++ Programming Guide, arithmetic instruction throughput: FP16 at 2 results per
// clock per SM on 6.1 against 128 FP32, 128 on 6.0 and 256 on 6.2), not the code's.
#include <gtest/gtest.h>

#include "fixture_util.hpp"

#include "bench/analysis.hpp"
#include "bench/precision.hpp"
#include "check/doctor.hpp"
#include "check/doctor_from.hpp"
#include "node/environment.hpp"
#include "node/profiles.hpp"
#if NB_HAVE_CUDNN
#include "train/train_analysis.hpp"
#endif

#if NB_HAVE_CUDNN
namespace nb {
// benchmarks/conv/conv.cpp: the peak key of its cases (the peak family's theoretical rate on a
// P40, IMAD without one, is tested in test_p40.cpp).
std::string conv_peak_key(const std::string& data, int cc);
}  // namespace nb
#endif

using namespace nb;
using nlohmann::json;
using nb::test::has;
using nb::test::read_json;

namespace {

[[maybe_unused]] GpuInfo fixture_gpu() {
  const json g = read_json("p40_environment.json")["gpus"][0];
  GpuInfo info;
  info.index = g["index"].get<int>();
  info.name = g["name"].get<std::string>();
  info.cc_major = 6;
  info.cc_minor = 1;
  EXPECT_EQ(g["compute_capability"], "6.1");
  info.sm_count = g["sm_count"].get<int>();
  for (const auto& [k, v] : g["peaks"].items()) info.peaks[k] = Peak{v["value"].get<double>(), v["source"].get<std::string>()};
  return info;
}

// The fixture's records, plus a ResNet-50 training step in both precisions at the rate a P40's
// FP16 storage with FP32 arithmetic gives (about the FP32 step: no FP16 units to speed it up).
json records_with_train() {
  json recs = read_json("p40_result.json")["records"];
  for (const auto& [prec, ips] : {std::pair<const char*, double>{"fp32", 180.0}, {"fp16", 186.0}})
    recs.push_back({{"id", std::string("train/resnet50/") + prec + "/nchw/b64"}, {"family", "train"}, {"status", "ok"},
                    {"gpus", {0}}, {"params", {{"precision", prec}, {"layout", "nchw"}, {"batch", 64}}},
                    {"metrics", {{"images_per_s", ips}}}});
  return recs;
}

json verdict_at(int major, int minor) {
  return fp16_vs_fp32(records_with_train(), {{0, "variant", major, minor}}).at(0);
}

}  // namespace

// ---- the FP16 verdict, harness/bench/analysis.cpp ------------------------------------------

TEST(P40Capabilities, Fp16VerdictSays1Over64OnlyOnComputeCapability61) {
  // The same measured rows (FP16 at 0.97x FP32 in GEMM) on three compute capabilities.
  const json v61 = verdict_at(6, 1), v62 = verdict_at(6, 2), v70 = verdict_at(7, 0);
  for (const json* v : {&v61, &v62, &v70}) EXPECT_EQ((*v)["verdict"], "does_not_pay") << (*v)["reason"];
  const std::string r61 = v61["reason"], r62 = v62["reason"], r70 = v70["reason"];
  EXPECT_TRUE(has(r61, "(compute capability 6.1: FP16 arithmetic at 1/64 of FP32, no tensor cores)")) << r61;
  // 6.2 (Jetson TX2) runs FP16 at twice FP32: a slow measured FP16 is not its hardware's rate.
  EXPECT_FALSE(has(r62, "1/64")) << r62;
  EXPECT_FALSE(has(r62, "compute capability 6.1")) << r62;
  EXPECT_FALSE(has(r70, "1/64")) << r70;
  // Below 7.0 the training step's mixed precision is FP16 storage with FP32 arithmetic; not from 7.0.
  const char* storage = "the training step here runs FP16 storage with FP32 arithmetic";
  EXPECT_TRUE(has(r61, storage)) << r61;
  EXPECT_TRUE(has(r62, storage)) << r62;
  EXPECT_FALSE(has(r70, storage)) << r70;
}

TEST(P40Capabilities, Fp16PeakRatePerComputeCapability) {
  // ops/clock/SM: FP16 FMA2 against FP32 FFMA (FMA = 2 ops) from the guide's results per clock.
  const double fp32_61 = *unit_ops_per_clock_per_sm("fp32_ffma", 6, 1);
  EXPECT_DOUBLE_EQ(fp32_61, 2 * 128.0);
  EXPECT_DOUBLE_EQ(*unit_ops_per_clock_per_sm("fp16_hfma2", 6, 1), 2 * 2.0);     // 1/64 of FP32
  EXPECT_DOUBLE_EQ(*unit_ops_per_clock_per_sm("fp16_hfma2", 6, 0), 2 * 128.0);   // P100: twice its 64 FP32
  EXPECT_DOUBLE_EQ(*unit_ops_per_clock_per_sm("fp16_hfma2", 6, 2), 2 * 256.0);   // TX2: twice its 128 FP32
  EXPECT_DOUBLE_EQ(*unit_ops_per_clock_per_sm("fp16_hfma2", 6, 2), 2 * *unit_ops_per_clock_per_sm("fp32_ffma", 6, 2));
}

#if NB_HAVE_CUDNN

// ---- the conv family's peak key and the train family's FP16 note ----------------------------

TEST(P40Capabilities, ConvPeakKeyIsOneTheP40ProfileHas) {
  const GpuInfo p40 = fixture_gpu();
  // FP16 convolutions accumulate in FP32: on a P40 they run on the FP32 units, so the FP32 peak
  // (11.76), not the 1/64-rate FP16 one (0.18), nor a tensor-core peak it does not have.
  EXPECT_EQ(conv_peak_key("fp16", p40.cc()), "fp32_tflops");
  EXPECT_EQ(conv_peak_key("fp32", p40.cc()), "fp32_tflops");
  for (const char* data : {"fp16", "fp32"})
    EXPECT_NE(p40.peak(conv_peak_key(data, p40.cc())), nullptr) << data << ": the P40 fixture's peaks lack it";
  EXPECT_EQ(p40.peak("fp16_tensor_tflops"), nullptr);  // what a wrong branch would ask for
  // From 7.0 the tensor cores.
  EXPECT_EQ(conv_peak_key("fp16", 70), "fp16_tensor_tflops");
  EXPECT_EQ(conv_peak_key("tf32", 80), "tf32_tflops");
}

TEST(P40Capabilities, TrainFp16NoteBelowComputeCapability70) {
  const std::string n61 = train::fp16_arithmetic_note(true, 6, 1);
  EXPECT_EQ(n61, "compute capability 6.1 (below 7.0): mixed precision runs FP16 storage with FP32 arithmetic "
                 "(no FP16 tensor cores)");
  EXPECT_TRUE(has(train::fp16_arithmetic_note(true, 6, 2), "compute capability 6.2 (below 7.0)"));
  EXPECT_EQ(train::fp16_arithmetic_note(true, 7, 0), "");   // V100: FP16 tensor cores
  EXPECT_EQ(train::fp16_arithmetic_note(false, 6, 1), "");  // an FP32 step has nothing to say
}

#endif  // NB_HAVE_CUDNN

// ---- doctor's JIT path, harness/check/doctor_rules_driver.cpp --------------------------------

TEST(P40Capabilities, DoctorJitOfCompute60PtxOnTheP40) {
  // A binary with compute_60 PTX only: a P40 (6.1) runs it by JIT. The P40 fixture's driver (CUDA
  // 13.0 API) is newer than its runtime (12.9): the driver can JIT it, info with the fix.
  CapturedNode node = load_captured_node(nb::test::data_path("p40_environment.json"));
  auto checks = judge_captured_node(node, "60-virtual");
  int seen = 0;
  for (const auto& c : checks) {
    if (c.id != "arch.binary") continue;
    ++seen;
    EXPECT_EQ(c.severity, Severity::info) << c.summary;
    EXPECT_EQ(c.summary, "cc 6.1 runs compute_60 PTX by JIT compilation");
    EXPECT_TRUE(has(c.fix, "61-real")) << c.fix;
  }
  EXPECT_EQ(seen, 4);  // the fixture's four P40s
  // The same capture with a driver older than the runtime (minor-version compatibility): that
  // driver cannot JIT PTX of a newer toolkit, so the binary cannot run there.
  json env = read_json("p40_environment.json");
  env["software"]["cuda_driver_version"] = "12.4";
  CapturedNode old = captured_node_from_json(env, "p40 with a 12.4 driver");
  checks = judge_captured_node(old, "60-virtual");
  const Check* c = find_check(checks, "arch.binary");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->severity, Severity::fail) << c->summary;
  EXPECT_TRUE(has(c->summary, "this driver cannot JIT it")) << c->summary;
  // And SASS for 6.1 needs no JIT at all.
  c = find_check(judge_captured_node(node, "61-real"), "arch.binary");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->severity, Severity::ok);
}
