#include <gtest/gtest.h>

#include "error.hpp"
#include "profiles.hpp"

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
  const DeviceProfile* p = ProfileDb::builtin().find("Tesla P40");
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
