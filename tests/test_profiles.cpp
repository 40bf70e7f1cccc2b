#include <gtest/gtest.h>

#include "base/error.hpp"
#include "node/profiles.hpp"

using namespace nb;

TEST(Profiles, BuiltinHasTheRequiredModelsWithSources) {
  const ProfileDb db = ProfileDb::builtin();
  for (const char* name : {"Tesla P40", "Tesla P100-PCIE-16GB", "Tesla V100-SXM2-16GB", "Tesla T4", "NVIDIA A10",
                           "NVIDIA A100-SXM4-40GB", "NVIDIA A100-SXM4-80GB", "NVIDIA L4", "NVIDIA L40S",
                           "NVIDIA H100 80GB HBM3", "NVIDIA H200"}) {
    const DeviceProfile* p = db.find(name);
    ASSERT_NE(p, nullptr) << name;
    EXPECT_FALSE(p->source.empty()) << name;
    EXPECT_TRUE(p->numbers.count("fp32_tflops")) << name;
    EXPECT_TRUE(p->numbers.count("mem_gbps")) << name;
  }
}

TEST(Profiles, MatchesAtWordBoundaryAndPrefersLongest) {
  const ProfileDb db = ProfileDb::builtin();
  EXPECT_EQ(db.find("NVIDIA A10")->name, "A10");
  EXPECT_EQ(db.find("NVIDIA A100-SXM4-80GB")->name, "A100 SXM4 80GB");
  // An A100 variant that no row names must not be taken for an A10.
  EXPECT_EQ(db.find("NVIDIA A100-SXM4-96GB"), nullptr);
  EXPECT_EQ(db.find("NVIDIA GeForce RTX 4090"), nullptr);
}

TEST(Profiles, P40FactsAsPublished) {
  const ProfileDb db = ProfileDb::builtin();  // kept: find() points into it
  const DeviceProfile* p = db.find("Tesla P40");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->cc, "6.1");
  // FP16 is 1/64 of FP32 on GP102: the published figures keep that ratio.
  EXPECT_NEAR(p->numbers.at("fp32_tflops") / p->numbers.at("fp16_tflops"), 64, 2);
  EXPECT_FALSE(p->numbers.count("tf32_tflops"));
  EXPECT_FALSE(p->numbers.count("fp16_tensor_tflops"));
}

TEST(Profiles, MalformedFilesAreRejected) {
  EXPECT_THROW(ProfileDb::from_json(nlohmann::json::parse("{}")), Error);
  EXPECT_THROW(ProfileDb::from_json(nlohmann::json::parse(R"({"profiles":[{"name":"x"}]})")), Error);
  EXPECT_THROW(ProfileDb::from_json(nlohmann::json::parse(R"({"profiles":[{"name":"x","match":["x"],"fp32_tflops":-1}]})")), Error);
  EXPECT_THROW(ProfileDb::from_file("/nonexistent/profiles.json"), Error);
}

TEST(Peaks, ProfileFiguresWinOverDerivation) {
  PeakInputs in;
  in.name = "NVIDIA H200";
  in.cc_major = 9;
  in.sm_count = 132;
  in.max_sm_clock_mhz = 1980;
  const DeviceProfile* m = nullptr;
  auto peaks = expected_peaks(ProfileDb::builtin(), in, &m);
  ASSERT_NE(m, nullptr);
  EXPECT_DOUBLE_EQ(peaks.at("mem_gbps").value, 4800);
  EXPECT_EQ(peaks.at("fp32_tflops").source, "profile:H200 SXM");
}

TEST(Peaks, UnknownGpuDerivesFp32AndMemory) {
  PeakInputs in;
  in.name = "NVIDIA Imaginary 9000";
  in.cc_major = 8;
  in.cc_minor = 6;
  in.sm_count = 84;
  in.max_sm_clock_mhz = 1860;
  in.mem_clock_mhz = 9751;
  in.mem_bus_width_bits = 384;
  auto peaks = expected_peaks(ProfileDb::builtin(), in);
  // 84 SMs x 128 lanes x 2 flops x 1.86 GHz
  EXPECT_NEAR(peaks.at("fp32_tflops").value, 84 * 128 * 2 * 1.86e9 / 1e12, 1e-9);
  // 9751 MHz x 2 x 48 bytes
  EXPECT_NEAR(peaks.at("mem_gbps").value, 9751e6 * 2 * 48 / 1e9, 1e-9);
  EXPECT_EQ(peaks.count("fp16_tensor_tflops"), 0u);  // no sound derivation: left out
  EXPECT_EQ(peaks.at("fp32_tflops").source.rfind("derived:", 0), 0u);
}

TEST(Peaks, UnknownArchitectureGivesNoFp32Peak) {
  PeakInputs in;
  in.name = "Future GPU";
  in.cc_major = 42;
  in.sm_count = 10;
  in.max_sm_clock_mhz = 1000;
  EXPECT_EQ(expected_peaks(ProfileDb::builtin(), in).count("fp32_tflops"), 0u);
}

TEST(Pcie, TheoreticalPerDirection) {
  EXPECT_NEAR(*pcie_gbps(3, 16), 15.75, 0.01);
  EXPECT_NEAR(*pcie_gbps(4, 16), 31.5, 0.01);
  EXPECT_NEAR(*pcie_gbps(5, 16), 63.0, 0.02);
  EXPECT_NEAR(*pcie_gbps(3, 8), 7.88, 0.01);
  EXPECT_FALSE(pcie_gbps(0, 16).has_value());
  EXPECT_FALSE(pcie_gbps(3, 0).has_value());
}

TEST(PeakKey, FromComputeTypeAtPascalVoltaHopper) {
  // Compute capability 6.1 (P40): no tensor cores; FP16 with FP32 compute runs on the FP32 units.
  EXPECT_EQ(peak_key_for("fp16", "fp32", 61), "fp32_tflops");
  EXPECT_EQ(peak_key_for("fp16", "fp16", 61), "fp16_tflops");
  EXPECT_EQ(peak_key_for("fp32", "fp32", 61), "fp32_tflops");
  EXPECT_EQ(peak_key_for("fp64", "fp64", 61), "fp64_tflops");
  EXPECT_EQ(peak_key_for("int8", "int32", 61), "int8_dp4a_tops");
  // 6.0 (P100) the same rule: FP32 accumulation is the FP32 rate, not the 2x HFMA2 rate.
  EXPECT_EQ(peak_key_for("fp16", "fp32", 60), "fp32_tflops");
  // 7.0 (V100): tensor cores for FP16 either way; INT8 still DP4A (INT8 tensor cores from 7.2).
  EXPECT_EQ(peak_key_for("fp16", "fp32", 70), "fp16_tensor_tflops");
  EXPECT_EQ(peak_key_for("fp16", "fp16", 70), "fp16_tensor_tflops");
  EXPECT_EQ(peak_key_for("int8", "int32", 70), "int8_dp4a_tops");
  EXPECT_EQ(peak_key_for("fp64", "fp64", 70), "fp64_tflops");
  // 9.0 (H100/H200).
  EXPECT_EQ(peak_key_for("fp16", "fp32", 90), "fp16_tensor_tflops");
  EXPECT_EQ(peak_key_for("bf16", "fp32", 90), "bf16_tensor_tflops");
  EXPECT_EQ(peak_key_for("fp32", "tf32", 90), "tf32_tflops");
  EXPECT_EQ(peak_key_for("tf32", "tf32", 90), "tf32_tflops");
  EXPECT_EQ(peak_key_for("fp32", "fp32", 90), "fp32_tflops");
  EXPECT_EQ(peak_key_for("fp64", "fp64", 90), "fp64_tensor_tflops");
  EXPECT_EQ(peak_key_for("int8", "int32", 90), "int8_tops");
  EXPECT_EQ(peak_key_for("fp8", "fp32", 90), "fp8_tflops");
  EXPECT_EQ(peak_key_for("bf16", "fp32", 61), "");
}

TEST(PeakKey, P40Fp16GemmJudgedAgainstFp32Rate) {
  // The P40's FP16 GEMM at its FP32 rate is ~100% of fp32_tflops, not ~5000% of fp16_tflops.
  PeakInputs in;
  in.name = "Tesla P40";
  in.cc_major = 6;
  in.cc_minor = 1;
  in.sm_count = 30;
  auto peaks = expected_peaks(ProfileDb::builtin(), in);
  const std::string key = peak_key_for("fp16", "fp32", 61);
  ASSERT_TRUE(peaks.count(key));
  const double measured = 0.9 * 30 * 128 * 2 * 1531e6 / 1e12;  // 90% of SMs x lanes x 2 x boost
  EXPECT_LT(100 * measured / peaks.at(key).value, 103);
  EXPECT_GT(100 * measured / peaks.at("fp16_tflops").value, 1000);
}

namespace {
std::string profile_error(const std::string& text) {
  try {
    ProfileDb::from_json(nlohmann::json::parse(text));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(Profiles, FieldsOfTheWrongTypeAreNamed) {
  EXPECT_NE(profile_error(R"({"profiles":[{"name":"X","match":["X"],"fp32_tflops":"fast"}]})").find("'fp32_tflops' must be a number"),
            std::string::npos);
  EXPECT_NE(profile_error(R"({"profiles":[{"name":"X","match":["X"],"sm_count":"many"}]})").find("'sm_count' must be a number"),
            std::string::npos);
  EXPECT_NE(profile_error(R"({"profiles":[{"name":"X","match":["X"],"peak_clock_mhz":null}]})").find("'peak_clock_mhz'"),
            std::string::npos);
  const std::string cc = profile_error(R"({"profiles":[{"name":"X","match":["X"],"cc":6.1}]})");
  EXPECT_NE(cc.find("'cc' must be a string, not number"), std::string::npos) << cc;
  EXPECT_NE(profile_error(R"({"profiles":[{"name":"X","match":["X"],"cc":"six"}]})").find("'cc'"), std::string::npos);
  EXPECT_EQ(profile_error(R"({"profiles":[{"name":"X","match":["X"],"cc":"10.0","fp32_tflops":1,"note":"free text"}]})"), "");
}

TEST(Profiles, ExactNameBeforePrefix) {
  const ProfileDb db = ProfileDb::builtin();
  EXPECT_EQ(db.find("NVIDIA H200")->name, "H200 SXM");
  EXPECT_EQ(db.find("NVIDIA H200 NVL")->name, "H200 NVL");
  EXPECT_EQ(db.find("NVIDIA H100 NVL")->name, "H100 NVL");
  EXPECT_EQ(db.find("NVIDIA H100 PCIe")->name, "H100 PCIe");
  EXPECT_EQ(db.find("NVIDIA H100 80GB HBM3")->name, "H100 SXM5");
  // A file without the NVL profile: the SXM profile's name is only a prefix, followed by a
  // form-factor word, so nothing matches (derived peaks) rather than the SXM figures.
  const ProfileDb f = ProfileDb::from_json(nlohmann::json::parse(
      R"({"profiles":[{"name":"sxm","match":["NVIDIA H200"]},{"name":"v","match":["Tesla V100-SXM2"]}]})"));
  EXPECT_EQ(f.find("NVIDIA H200 NVL"), nullptr);
  EXPECT_EQ(f.find("NVIDIA H200 PCIe"), nullptr);
  EXPECT_EQ(f.find("NVIDIA H200")->name, "sxm");
  EXPECT_EQ(f.find("Tesla V100-SXM2-32GB")->name, "v");  // other boundaries still match
}

TEST(Profiles, EveryRateAtThePeakClock) {
  // Each profile's rates agree with SMs x the architecture's per-clock rate x peak_clock_mhz
  // (within 3%: datasheet rounding), so percent of peak does not mix clocks.
  const struct {
    const char* key;
    const char* unit;
  } pairs[] = {{"fp32_tflops", "fp32_ffma"},          {"fp64_tflops", "fp64_dfma"},       {"fp16_tflops", "fp16_hfma2"},
               {"fp16_tensor_tflops", "mma_fp16"},    {"bf16_tensor_tflops", "mma_bf16"}, {"tf32_tflops", "mma_tf32"},
               {"int8_dp4a_tops", "int8_dp4a"},      {"fp8_tflops", "mma_fp8"}};
  int checked = 0;
  const ProfileDb db = ProfileDb::builtin();
  for (const DeviceProfile& p : db.profiles()) {
    ASSERT_TRUE(p.numbers.count("peak_clock_mhz")) << p.name;
    ASSERT_TRUE(p.numbers.count("sm_count")) << p.name;
    const int major = std::stoi(p.cc.substr(0, p.cc.find('.'))), minor = std::stoi(p.cc.substr(p.cc.find('.') + 1));
    const double sms = p.numbers.at("sm_count"), ghz = p.numbers.at("peak_clock_mhz") / 1000;
    for (const auto& [key, unit] : pairs) {
      auto it = p.numbers.find(key);
      auto rate = unit_ops_per_clock_per_sm(unit, major, minor);
      if (it == p.numbers.end() || !rate) continue;
      const double expect = sms * *rate * ghz / 1e3;
      EXPECT_NEAR(it->second / expect, 1.0, 0.03) << p.name << " " << key << ": " << it->second << " vs " << expect;
      ++checked;
    }
    if (major >= 7 && p.numbers.count("int8_tops") && (major * 10 + minor) >= 72) {
      const double expect = sms * *unit_ops_per_clock_per_sm("mma_int8", major, minor) * ghz / 1e3;
      EXPECT_NEAR(p.numbers.at("int8_tops") / expect, 1.0, 0.03) << p.name << " int8_tops";
    }
  }
  EXPECT_GT(checked, 40);
}

TEST(Peaks, SmCountMismatchMeansDerivedPeaksWithANote) {
  PeakInputs in;
  in.name = "NVIDIA H200";
  in.cc_major = 9;
  in.sm_count = 114;  // not the profile's 132: some other part under the same name
  in.max_sm_clock_mhz = 1755;
  const DeviceProfile* m = nullptr;
  std::string note;
  auto peaks = expected_peaks(ProfileDb::builtin(), in, &m, &note);
  EXPECT_EQ(m, nullptr);
  EXPECT_NE(note.find("132"), std::string::npos) << note;
  EXPECT_NE(note.find("114"), std::string::npos) << note;
  ASSERT_TRUE(peaks.count("fp32_tflops"));
  EXPECT_EQ(peaks.at("fp32_tflops").source.rfind("derived:", 0), 0u);
  EXPECT_NEAR(peaks.at("fp32_tflops").value, 114 * 256 * 1.755 / 1e3, 1e-6);
  EXPECT_FALSE(peaks.count("fp16_tensor_tflops"));  // nothing the profile said is used
  // With the right SM count the profile is used and no note is written.
  in.sm_count = 132;
  note.clear();
  peaks = expected_peaks(ProfileDb::builtin(), in, &m, &note);
  ASSERT_NE(m, nullptr);
  EXPECT_TRUE(note.empty());
  EXPECT_DOUBLE_EQ(*peaks.at("fp16_tensor_tflops").clock_mhz, 1980);
}

TEST(Peaks, Dp4aRateForTheInt8DotProductKernel) {
  PeakInputs in;
  in.name = "Tesla P40";
  in.cc_major = 6;
  in.cc_minor = 1;
  in.sm_count = 30;
  auto p40 = expected_peaks(ProfileDb::builtin(), in);
  EXPECT_DOUBLE_EQ(p40.at("int8_dp4a_tops").value, 47.0);  // the datasheet's INT8 figure is DP4A
  in.name = "NVIDIA H200";
  in.cc_major = 9;
  in.cc_minor = 0;
  in.sm_count = 132;
  auto h200 = expected_peaks(ProfileDb::builtin(), in);
  // Not the INT8 tensor figure: 132 SMs x 512 DP4A ops/clock x 1980 MHz.
  EXPECT_NEAR(h200.at("int8_dp4a_tops").value, 132 * 512 * 1.98 / 1e3, 1e-6);
  EXPECT_LT(h200.at("int8_dp4a_tops").value, h200.at("int8_tops").value / 10);
}
