// Every decision that depends on compute capability 6.1, driven by the P40 fixtures without a GPU
// (tests/data/p40_environment.json, p40_doctor.json, p40_result.json; written by
// tests/data/make_p40_fixtures.py): which cases run or skip and why, the peak key of each GEMM
// precision, the FP16 verdict, doctor's findings (also through `doctor --from`) and validate's
// P40 thresholds. The expectations come from the P40's hardware (datasheet figures, what Pascal
// lacks), not from the code under test.
#include <gtest/gtest.h>

#include "fixture_util.hpp"

#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include "peak/peak_rules.hpp"
#include "bench/analysis.hpp"
#include "bench/precision.hpp"
#include "bench/benchmark.hpp"
#include "app/cli.hpp"
#include "check/doctor.hpp"
#include "check/doctor_from.hpp"
#include "node/environment.hpp"
#include "base/error.hpp"
#include "node/arch_facts.hpp"
#include "node/profiles.hpp"
#include "base/status.hpp"
#include "check/validate.hpp"
#include "advise/advice.hpp"
#include "advise/advise.hpp"
#include "advise/advise_inputs.hpp"
#include "advise/options.hpp"

namespace nb {
// benchmarks/gemm.cpp: the peak key of a GEMM precision on a GPU.
std::string gemm_peak_key(const std::string& precision_name, const GpuInfo& g);
}  // namespace nb

using namespace nb;
using nlohmann::json;

namespace {

using nb::test::data_path;
using nb::test::has;
using nb::test::read_json;

// A GpuInfo as capture_environment fills it, from a recorded `gpus[i]` entry.
GpuInfo gpu_from(const json& g) {
  GpuInfo info;
  info.index = g.at("index").get<int>();
  info.name = g.at("name").get<std::string>();
  const std::string cc = g.at("compute_capability").get<std::string>();
  info.cc_major = std::stoi(cc.substr(0, cc.find('.')));
  info.cc_minor = std::stoi(cc.substr(cc.find('.') + 1));
  info.sm_count = g.at("sm_count").get<int>();
  info.memory_bytes = g.at("memory_bytes").get<size_t>();
  info.l2_bytes = g.at("l2_bytes").get<size_t>();
  info.pci_bus_id = g.value("pci_bus_id", "");
  info.profile = g.value("profile", "");
  for (const auto& [k, v] : g.at("peaks").items()) info.peaks[k] = Peak{v.at("value").get<double>(), v.at("source").get<std::string>()};
  return info;
}

GpuInfo p40_gpu(int index = 0) { return gpu_from(read_json("p40_environment.json")["gpus"][index]); }

// A metric of the fixture's ok record `id` on GPU 0 (NaN, and a failure, when there is none).
double metric_of(const json& doc, const std::string& id, const std::string& metric) {
  for (const auto& r : doc["records"])
    if (r["id"] == id && r["gpus"] == json::array({0}) && r["status"] == "ok") return r["metrics"][metric].get<double>();
  ADD_FAILURE() << "the fixture has no ok record " << id << " on GPU 0";
  return NAN;
}

}  // namespace

// ---- The fixture is what a capture on a P40 records ------------------------------------------

TEST(P40Fixture, PeaksAreTheP40sAndWhatTheCaptureWouldRecord) {
  const json env = read_json("p40_environment.json");
  ASSERT_EQ(env["gpus"].size(), 4u);
  PeakInputs in;
  in.name = "Tesla P40";
  in.cc_major = 6;
  in.cc_minor = 1;
  in.sm_count = 30;
  in.max_sm_clock_mhz = 1531;
  const ProfileDb db = ProfileDb::builtin();  // kept: `prof` points into it
  const DeviceProfile* prof = nullptr;
  const auto peaks = expected_peaks(db, in, &prof);
  ASSERT_NE(prof, nullptr);
  EXPECT_EQ(prof->name, "Tesla P40");
  for (const auto& g : env["gpus"]) {
    const GpuInfo info = gpu_from(g);
    EXPECT_EQ(info.cc(), 61);
    EXPECT_EQ(info.sm_count, 30);
    EXPECT_EQ(info.profile, "Tesla P40");
    ASSERT_EQ(info.peaks.size(), peaks.size());
    for (const auto& [k, p] : peaks) EXPECT_DOUBLE_EQ(info.peak(k)->value, p.value) << k;
  }
  // GP102: 30 SMs x 128 FP32 lanes x 2 flops x 1531 MHz; FP16 1/64 and FP64 1/32 of it; DP4A
  // 4 INT8 products per lane; GDDR5 384-bit at 7.2 Gb/s per pin.
  const double fp32 = 30 * 128 * 2 * 1531e6 / 1e12;
  EXPECT_NEAR(peaks.at("fp32_tflops").value, fp32, 0.01);
  EXPECT_NEAR(peaks.at("fp16_tflops").value, fp32 / 64, 0.01);
  EXPECT_NEAR(peaks.at("fp64_tflops").value, fp32 / 32, 0.01);
  EXPECT_NEAR(peaks.at("int8_tops").value, 4 * fp32, 0.1);
  EXPECT_NEAR(peaks.at("mem_gbps").value, 384 / 8 * 7.2, 1.0);
  // No tensor cores, no TF32, BF16 or FP8.
  for (const char* k : {"fp16_tensor_tflops", "bf16_tensor_tflops", "tf32_tflops", "fp8_tflops", "fp64_tensor_tflops"})
    EXPECT_EQ(peaks.count(k), 0u) << k;
  // Two sockets: GPUs 0-1 on the first, 2-3 on the second (bus numbers of each root complex).
  EXPECT_EQ(env["host"]["numa_nodes"].size(), 2u);
  EXPECT_EQ(env["software"]["cuda_runtime_version"], "12.9");
  EXPECT_EQ(env["software"]["cudnn_version"], "9.10.2");
}

// ---- Which cases run or skip at compute capability 6.1, and why --------------------------------

TEST(P40Cases, EveryCaseRunsOrSkipsAsThePascalHardwareSays) {
  const GpuInfo g = p40_gpu();
  // What a P40 lacks: tensor cores (every mma), TF32, BF16 and FP8 arithmetic.
  const std::set<std::string> gemm_skip = {"tf32", "bf16", "fp8"};
  const std::set<std::string> peak_skip = {"bf16_fma2", "mma_fp16", "mma_bf16", "mma_tf32", "mma_int8", "mma_fp8"};
  std::map<std::string, int> seen;
  for (const auto& f : family_registry())
    for (Suite s : {Suite::quick, Suite::full})
      for (const Case& c : f->cases(s)) {
        // A NUMA placement of the input family can be made or not by the host (its nodes, the
        // GPU's node in sysfs), whatever the GPU: InputCpus tests it on given topologies.
        if (c.family == "input" && c.params.value("placement", "spread") != "spread") continue;
        const Availability a = c.available ? c.available(g) : Availability::yes();
        bool expect_skip = false;
        if (c.family == "gemm") expect_skip = gemm_skip.count(c.params["precision"].get<std::string>()) > 0;
        if (c.family == "peak") expect_skip = peak_skip.count(c.params["unit"].get<std::string>()) > 0;
        if (c.family == "conv") expect_skip = c.params["precision"] == "tf32";
        // The training step: no TF32 below 8.0; the quick suite's one case is fp32/nchw below 7.0.
        if (c.family == "train")
          expect_skip = c.params["precision"] == "tf32" || (s == Suite::quick && c.params["precision"] == "fp16");
        EXPECT_EQ(!a.ok, expect_skip) << c.id() << ": " << a.reason;
        if (!a.ok) {
          EXPECT_TRUE(has(a.reason, "6.1")) << c.id() << ": the reason names the GPU's compute capability: " << a.reason;
          EXPECT_TRUE(has(a.reason, "needs")) << a.reason;
          // run_plan records it as skipped with the Availability's kind.
          EXPECT_EQ(a.kind, ReasonKind::unsupported) << a.reason;
        }
        ++seen[c.family + (a.ok ? "/runs" : "/skips")];
      }
  // The families that matter on a P40 are there, and each precision that pays on it runs.
  EXPECT_GT(seen["gemm/runs"], 0);
  EXPECT_GT(seen["gemm/skips"], 0);
  EXPECT_GT(seen["peak/runs"], 0);
  EXPECT_GT(seen["peak/skips"], 0);
  EXPECT_GT(seen["train/runs"], 0);
  EXPECT_GT(seen["train/skips"], 0);
}

TEST(P40Cases, Int8RunsFromComputeCapability61Up) {
  // DP4A came with compute capability 6.1: a P40 runs the INT8 GEMM and the DP4A peak, a P100 (6.0) does not.
  GpuInfo p40 = p40_gpu(), p100 = p40_gpu();
  p100.cc_minor = 0;
  int checked = 0;
  for (const auto& f : family_registry())
    for (const Case& c : f->cases(Suite::quick)) {
      const bool int8 = (c.family == "gemm" && c.params["precision"] == "int8") ||
                        (c.family == "peak" && c.params["unit"] == "int8_dp4a");
      if (!int8) continue;
      ASSERT_TRUE(c.available);
      EXPECT_TRUE(c.available(p40).ok) << c.id();
      const Availability no = c.available(p100);
      EXPECT_FALSE(no.ok) << c.id();
      EXPECT_TRUE(has(no.reason, "6.0")) << no.reason;
      ++checked;
    }
  EXPECT_GE(checked, 2);
}

// ---- The theoretical rate the peak cases are held against at 6.1 (benchmarks/peak/peak_rules.cpp) ----

TEST(P40PeakRates, Int32MultiplyAddHasNoRateOnPascalAndTheOthersTheDatasheets) {
  // Pascal has no one-instruction 32-bit integer multiply-add (three XMAD do it), so the IMAD case
  // gets no theoretical rate there and says why; the FP32, FP16 and DP4A rates are the P40's
  // datasheet ones at its 1531 MHz boost clock: 11.76 TFLOPS FP32, 1/64 of it FP16, 4x DP4A.
  const GpuInfo g = p40_gpu();
  const double mhz = 1531;
  const Theoretical imad = peak_theoretical("int32_imad", g.cc_major, g.cc_minor, g.sm_count, mhz, true);
  EXPECT_FALSE(imad.rate.has_value());
  const std::string why = imad.detail.value("none", "");
  EXPECT_TRUE(has(why, "6.1")) << why;
  EXPECT_TRUE(has(why, "XMAD")) << why;
  const double fp32 = *peak_theoretical("fp32_ffma", g.cc_major, g.cc_minor, g.sm_count, mhz, true).rate;
  EXPECT_NEAR(fp32, 11.76, 0.01);
  EXPECT_NEAR(*peak_theoretical("fp16_hfma2", g.cc_major, g.cc_minor, g.sm_count, mhz, true).rate, fp32 / 64, 1e-9);
  EXPECT_NEAR(*peak_theoretical("int8_dp4a", g.cc_major, g.cc_minor, g.sm_count, mhz, true).rate, 4 * fp32, 1e-9);
  // A Volta variant of the fixture (7.0) has a one-instruction IMAD: 64 INT32 lanes per SM beside
  // 64 FP32 lanes (Volta whitepaper), so the same rate as FP32.
  GpuInfo v = g;
  v.cc_major = 7;
  v.cc_minor = 0;
  const Theoretical v_imad = peak_theoretical("int32_imad", v.cc_major, v.cc_minor, v.sm_count, mhz, true);
  ASSERT_TRUE(v_imad.rate.has_value());
  EXPECT_NEAR(*v_imad.rate, *peak_theoretical("fp32_ffma", 7, 0, v.sm_count, mhz, true).rate, 1e-9);
  // No tensor-core path at 6.1 (mma.sync would be chosen, but the cases are skipped before that).
  EXPECT_FALSE(peak_theoretical("mma_fp16", g.cc_major, g.cc_minor, g.sm_count, mhz, true).rate.has_value());
}

// ---- The peak key of every GEMM precision at 6.1 ------------------------------------------------

TEST(P40PeakKeys, GemmPrecisionsThatRunOnAP40) {
  const GpuInfo g = p40_gpu();
  EXPECT_EQ(gemm_peak_key("fp32", g), "fp32_tflops");
  EXPECT_EQ(gemm_peak_key("fp64", g), "fp64_tflops");       // no FP64 tensor cores
  EXPECT_EQ(gemm_peak_key("fp16acc16", g), "fp16_tflops");  // FP16 accumulation: the 1/64-rate HFMA2 units
  EXPECT_EQ(gemm_peak_key("int8", g), "int8_dp4a_tops");    // DP4A (47 TOPS), no INT8 tensor cores
  for (const char* p : {"fp32", "fp64", "fp16acc16", "int8"})
    EXPECT_NE(g.peak(gemm_peak_key(p, g)), nullptr) << p << ": the P40 profile has the peak it is judged against";
  // The same precisions on an H200 use its tensor-core peaks.
  const GpuInfo h = gpu_from(read_json("h200_environment.json")["gpus"][0]);
  EXPECT_EQ(gemm_peak_key("fp16", h), "fp16_tensor_tflops");
  EXPECT_EQ(gemm_peak_key("fp64", h), "fp64_tensor_tflops");
}

// Below compute capability 7.0, cuBLAS FP16 GEMM with CUBLAS_COMPUTE_32F runs on the FP32 units,
// so its percent of peak is taken against fp32_tflops (11.76 on a P40), not fp16_tflops (0.18,
// which gave about 5000%).
TEST(P40PeakKeys, Fp16WithFp32ComputeIsJudgedAgainstTheFp32Peak) {
  const GpuInfo g = p40_gpu();
  EXPECT_EQ(gemm_peak_key("fp16", g), "fp32_tflops");
  // A P100 (6.0) too: its FP16 units run at 2x FP32, but FP32 compute still runs on FP32 units.
  GpuInfo p100 = g;
  p100.cc_minor = 0;
  EXPECT_EQ(gemm_peak_key("fp16", p100), "fp32_tflops");
}

// ---- The FP16 verdict ------------------------------------------------------------------------

TEST(P40Fp16Verdict, TheRegisteredAnalysisSaysDoesNotPayAndRecommendsInt8) {
  const json doc = read_json("p40_result.json");
  const Analysis* a = nullptr;
  for (const auto& x : analysis_registry())
    if (x.key == "fp16_vs_fp32") a = &x;
  ASSERT_NE(a, nullptr);
  ASSERT_TRUE(a->applies(doc["records"]));
  std::vector<GpuInfo> gpus;
  for (const auto& g : doc["environment"]["gpus"]) gpus.push_back(gpu_from(g));
  AnalysisContext ctx;
  for (const auto& g : gpus) ctx.gpus.push_back(&g);
  const json out = a->run(doc["records"], ctx);
  ASSERT_TRUE(out.is_array());
  ASSERT_GE(out.size(), 1u);
  const json& v = out[0];
  EXPECT_EQ(v["gpu"], 0);
  EXPECT_EQ(v["verdict"], "does_not_pay");
  EXPECT_TRUE(has(v["reason"].get<std::string>(), "compute capability 6.1")) << v["reason"];
  EXPECT_TRUE(has(v["reason"].get<std::string>(), "1/64")) << v["reason"];
  const std::string rec = v["recommendation"].get<std::string>();
  EXPECT_EQ(rec.rfind("train in FP32; for inference use INT8 (DP4A)", 0), 0u) << rec;
  // ... with a stack that runs on sm_61: TensorRT 10 and later refuse it (arch_facts.json's pin).
  EXPECT_TRUE(has(rec, "with TensorRT " + arch_pin("tensorrt_last") + " (")) << rec;
  EXPECT_EQ(arch_pin("tensorrt_last"), "8.6");
  EXPECT_TRUE(has(rec, "TensorRT 10 and later refuse it")) << rec;
  // The fixture's stored analysis (what the generator mirrors of analysis.cpp) is what the binary computes.
  const json& stored = doc["analysis"]["fp16_vs_fp32"][0];
  EXPECT_EQ(v["verdict"], stored["verdict"]);
  EXPECT_EQ(v["reason"], stored["reason"]);
  EXPECT_EQ(v["recommendation"], stored["recommendation"]);
  // The speed-up it stands on: FP16 GEMM (FP32 compute) at about the FP32 rate, HFMA2 at 1/64.
  // Both rows must be there (the fixture has both families), each from the fixture's own records.
  const json* gemm_row = nullptr;
  const json* peak_row = nullptr;
  for (const auto& row : v["rows"]) {
    if (row["source"] == "gemm 8192^3: fp16 / fp32") gemm_row = &row;
    if (row["source"] == "peak: fp16_hfma2 / fp32_ffma") peak_row = &row;
  }
  ASSERT_NE(gemm_row, nullptr) << v["rows"].dump();
  ASSERT_NE(peak_row, nullptr) << v["rows"].dump();
  EXPECT_NEAR((*gemm_row)["speedup_x"].get<double>(),
              metric_of(doc, "gemm/fp16/cublas/square_8192", "tflops") / metric_of(doc, "gemm/fp32/cublas/square_8192", "tflops"),
              1e-9);
  EXPECT_LT((*gemm_row)["speedup_x"].get<double>(), 1.5);
  const double hfma2 = metric_of(doc, "peak/fp16_hfma2", "tflops"), ffma = metric_of(doc, "peak/fp32_ffma", "tflops");
  EXPECT_NEAR((*peak_row)["speedup_x"].get<double>(), hfma2 / ffma, 1e-12);
  EXPECT_LT((*peak_row)["speedup_x"].get<double>(), 1.0 / 32);
  const auto lines = a->lines(out);
  ASSERT_FALSE(lines.empty());
}

// ---- advise on a P40 node ------------------------------------------------------------------------

namespace {
std::string statement_text(const json& advice, const std::string& topic) {
  for (const auto& s : advice["recommendation"])
    if (s["topic"] == topic) return s["text"].get<std::string>();
  return "";
}
}  // namespace

TEST(P40Advise, TheFixtureIsAdvisedWithItsPrecisionBatchAndAccumulation) {
  const json doc = read_json("p40_result.json");
  const advise::Inputs in = advise::gather_inputs({doc}, "fp32");
  ASSERT_FALSE(in.steps.empty()) << "no step time in the P40 fixture";
  AdviseOptions o;
  o.global_batch = 1024;
  const json a = advise::build_advice(in, o);
  // FP16 does not pay on a P40: the advice says so, from the fixture's own verdict.
  EXPECT_TRUE(has(statement_text(a, "fp16"), "FP16 does not pay on this GPU")) << statement_text(a, "fp16");
  // Four GPUs at the batch of fewest accumulation steps measured (128), accumulation to 1024.
  const std::string acc = statement_text(a, "accumulation");
  EXPECT_TRUE(has(acc, "2 accumulation step(s) of 4 GPUs x batch 128")) << acc;
  // The GPU's memory, as CUDA reports it with ECC on, holds a larger batch: how large, from the
  // train records' peak memory (in proportion to the batch) and 90% of the memory.
  double per_image = 0;
  for (const auto& r : doc["records"])
    if (r["id"] == "train/resnet50/fp32/nchw/b128") per_image = r["metrics"]["peak_memory_bytes"].get<double>() / 128;
  ASSERT_GT(per_image, 0);
  const double cap = doc["environment"]["gpus"][0]["memory_bytes"].get<double>();
  EXPECT_DOUBLE_EQ(cap, 23040.0 * 1048576);  // 24,576 MiB less the 1,536 MiB ECC reserve
  int expect = 0;
  for (int b = 128; b * 4 <= 1024; b *= 2)
    if (per_image * b <= 0.9 * cap) expect = b;
  ASSERT_GT(expect, 64);
  const std::string larger = statement_text(a, "larger_batch");
  EXPECT_TRUE(has(larger, "batch " + std::to_string(expect) + " fits in memory")) << larger;
  EXPECT_TRUE(has(larger, std::to_string(1024 / (4 * expect)) + " accumulation step(s) of 4 GPUs x batch " +
                              std::to_string(expect)))
      << larger;
  EXPECT_TRUE(has(larger, "ECC on: it reserves 1,536 MiB, 6.25% of 24,576 MiB")) << larger;
  // A framework's step at batch 64 (--step-ms): accumulation 4, and the larger batch from the
  // train records' memory, standing in for the framework's.
  AdviseOptions f = o;
  f.step_ms = 347.5;
  f.batch = 64;
  const json fa = advise::build_advice(in, f);
  EXPECT_TRUE(has(statement_text(fa, "accumulation"), "4 accumulation step(s) of 4 GPUs x batch 64")) << statement_text(fa, "accumulation");
  const std::string flarger = statement_text(fa, "larger_batch");
  EXPECT_TRUE(has(flarger, "batch " + std::to_string(expect) + " fits in memory")) << flarger;
  EXPECT_TRUE(has(flarger, "instead of 4 of batch 64")) << flarger;
  EXPECT_TRUE(has(flarger, "standing in for this step")) << flarger;
  // Without the environment (no memory known) nothing is suggested.
  json bare = doc;
  bare.erase("environment");
  EXPECT_EQ(statement_text(advise::build_advice(advise::gather_inputs({bare}, "fp32"), o), "larger_batch"), "");
  // Nor when the global batch needs no accumulation.
  o.global_batch = 256;
  EXPECT_EQ(statement_text(advise::build_advice(in, o), "larger_batch"), "");
}

TEST(P40Advise, TheWhatIfTakesTheMeasuredCrossSocketAllReduce) {
  AdviseOptions o;
  o.profile = "Tesla P40";
  o.gpus = "4";
  o.link = "pcie-gen3";
  auto row4 = [](const json& a) {
    for (const auto& r : a["rows"])
      if (r["gpus"] == 4) return r;
    return json();
  };
  // A uniform PCIe Gen3 ring: the link table's figure.
  const json uniform = row4(advise::build_advice(advise::gather_inputs({}, "fp32"), o));
  ASSERT_FALSE(uniform.is_null());
  EXPECT_TRUE(has(uniform["comm_method"].get<std::string>(), "(link table)")) << uniform["comm_method"];
  // With the P40 node's result file: its four GPUs' all-reduce crosses the sockets, and that
  // measured bus bandwidth (lower than the table's) is what the ring gets.
  const json doc = read_json("p40_result.json");
  double busbw = 0;
  for (const auto& r : doc["records"])
    if (r["family"] == "nccl" && r["params"]["ngpus"] == 4) busbw = r["metrics"]["busbw_gbps"].get<double>();
  ASSERT_GT(busbw, 0);
  const json measured = row4(advise::build_advice(advise::gather_inputs({doc}, "fp32"), o));
  EXPECT_TRUE(has(measured["comm_method"].get<std::string>(), "measured over 4 GPUs")) << measured["comm_method"];
  // The ring's bandwidth term scales as 1/busbw (the latency term is microseconds against milliseconds).
  const double table = advise::find_link("pcie-gen3")->busbw_gbps;
  ASSERT_LT(busbw, table);
  EXPECT_NEAR(measured["allreduce_ms"].get<double>() / uniform["allreduce_ms"].get<double>(), table / busbw, 0.01 * table / busbw);
}
