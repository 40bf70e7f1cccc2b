// The GEMM family's case expansion (no GPU needed: cases are generated, not run).
#include <gtest/gtest.h>

#include <set>

#include "base/error.hpp"
#include "app/runner.hpp"

using namespace nb;

static GpuInfo gpu(int major, int minor) {
  GpuInfo g;
  g.cc_major = major;
  g.cc_minor = minor;
  g.name = "test";
  return g;
}

TEST(GemmSweep, FullSuiteCoversEveryAxis) {
  const auto cases = select_cases(Suite::full, {"gemm"}, "");
  std::set<std::string> ids, precisions, apis, shapes;
  std::set<int64_t> squares, batches;
  for (const auto& c : cases) {
    EXPECT_TRUE(ids.insert(c.id()).second) << "duplicate " << c.id();
    precisions.insert(c.params["precision"].get<std::string>());
    apis.insert(c.params["api"].get<std::string>());
    shapes.insert(c.params["shape"].get<std::string>());
    if (c.params["shape"] == "square") {
      squares.insert(c.params["m"].get<int64_t>());
      EXPECT_EQ(c.params["m"], c.params["k"]);
    } else {
      batches.insert(c.params["batch"].get<int64_t>());
      EXPECT_EQ(c.params["m"], c.params["batch"]);
      if (c.params["shape"] == "mlp") {
        EXPECT_EQ(c.params["k"], 4096);
        EXPECT_EQ(c.params["n"], 16384);
      } else {
        EXPECT_EQ(c.params["k"], 2048);
        EXPECT_EQ(c.params["n"], 1000);
      }
    }
  }
  EXPECT_EQ(precisions, (std::set<std::string>{"fp64", "fp32", "tf32", "fp16", "fp16acc16", "bf16", "int8", "fp8"}));
  EXPECT_EQ(apis, (std::set<std::string>{"cublas", "cublaslt"}));
  EXPECT_EQ(squares, (std::set<int64_t>{512, 1024, 2048, 4096, 8192, 16384}));
  EXPECT_EQ(batches, (std::set<int64_t>{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}));
  // squares: 6 sizes x (8 cuBLASLt + 7 cuBLAS: FP8 is cuBLASLt only); batch: 11 x 2 shapes x 8
  EXPECT_EQ(cases.size(), size_t(6 * 15 + 11 * 2 * 8));
}

TEST(GemmSweep, QuickSuiteHoldsThePeerComparisonCases) {
  const auto cases = select_cases(Suite::quick, {"gemm"}, "");
  std::set<std::string> ids;
  for (const auto& c : cases) ids.insert(c.id());
  for (const char* id : {"gemm/fp32/cublas/square_8192", "gemm/tf32/cublas/square_8192", "gemm/fp16/cublaslt/square_8192",
                         "gemm/bf16/cublaslt/square_8192", "gemm/fp8/cublaslt/square_8192"})
    EXPECT_TRUE(ids.count(id)) << id;
  EXPECT_LT(cases.size(), 40u);  // the quick suite must stay quick
}

TEST(GemmSweep, AvailabilityFollowsComputeCapability) {
  const auto cases = select_cases(Suite::quick, {"gemm"}, "square_1024$");
  std::map<std::string, Availability> p40, h200;
  for (const auto& c : cases) {
    p40[c.params["precision"]] = c.available(gpu(6, 1));
    h200[c.params["precision"]] = c.available(gpu(9, 0));
  }
  for (const char* p : {"fp64", "fp32", "fp16", "fp16acc16", "int8"}) EXPECT_TRUE(p40[p].ok) << p;
  for (const char* p : {"tf32", "bf16", "fp8"}) {
    EXPECT_FALSE(p40[p].ok) << p;
    EXPECT_NE(p40[p].reason.find("6.1"), std::string::npos) << p40[p].reason;
  }
  for (const auto& [p, a] : h200) EXPECT_TRUE(a.ok) << p;
  for (const auto& c : cases) {
    if (c.params["precision"] != "fp8") continue;
    EXPECT_FALSE(c.available(gpu(8, 6)).ok);  // Ampere: no FP8
    EXPECT_TRUE(c.available(gpu(8, 9)).ok);   // Ada: FP8
  }
}

TEST(Selection, FilterAndUnknownFamily) {
  const auto f = select_cases(Suite::quick, {}, "bf16/.*square_8192");
  ASSERT_EQ(f.size(), 2u);  // cuBLASLt and cuBLAS
  EXPECT_THROW(select_cases(Suite::quick, {"nosuchfamily"}, ""), Error);
  EXPECT_TRUE(select_cases(Suite::quick, {}, "matches-nothing").empty());
}

TEST(OtherFamilies, QuickSuitesHoldTheMeasuredCases) {
  std::set<std::string> ids;
  for (const auto& c : select_cases(Suite::quick, {"memory", "hostlink", "latency", "peak"}, "")) {
    EXPECT_TRUE(ids.insert(c.id()).second) << c.id();
  }
  for (const char* id : {"memory/copy/4096MiB", "memory/memcpy_d2d/4096MiB", "memory/triad/8xL2", "memory/read/8xL2",
                         "hostlink/h2d/pinned/ce/1GiB", "hostlink/d2h/pinned/ce/1GiB", "hostlink/h2d/pageable/ce/1GiB",
                         "hostlink/h2d/write_combined/ce/1GiB", "hostlink/bidir/pinned/ce/256MiB",
                         "hostlink/h2d/pinned/sm/256MiB", "latency/h2d_4b", "latency/launch_roundtrip",
                         "peak/fp32_ffma", "peak/mma_bf16", "peak/int8_dp4a"})
    EXPECT_TRUE(ids.count(id)) << id;
}

TEST(OtherFamilies, HostLinkFullSweepsFourKiBToOneGiB) {
  std::set<int64_t> sizes;
  for (const auto& c : select_cases(Suite::full, {"hostlink"}, "^hostlink/h2d/pinned/ce/"))
    sizes.insert(c.params["bytes"].get<int64_t>());
  EXPECT_EQ(*sizes.begin(), 4096);
  EXPECT_EQ(*sizes.rbegin(), int64_t(1) << 30);
  const auto all = select_cases(Suite::quick, {"hostlink"}, "all_gpus");
  ASSERT_EQ(all.size(), 1u);
  EXPECT_TRUE(all[0].multi_gpu);
  EXPECT_EQ(all[0].min_gpus, 2);
}

TEST(OtherFamilies, PeakUnitsSkipWhatSm61Lacks) {
  std::map<std::string, bool> p40;
  for (const auto& c : select_cases(Suite::quick, {"peak"}, "")) p40[c.params["unit"]] = c.available(gpu(6, 1)).ok;
  EXPECT_TRUE(p40["fp32_ffma"] && p40["fp16_hfma2"] && p40["int8_dp4a"] && p40["fp64_dfma"]);
  EXPECT_FALSE(p40["mma_fp16"] || p40["mma_bf16"] || p40["mma_tf32"] || p40["mma_int8"] || p40["bf16_fma2"]);
}

#ifdef NB_HAVE_CUDNN
namespace nb {
std::vector<std::pair<std::string, int>> resnet50_conv_counts();
}

TEST(ConvFamily, ResNet50HasFiftyThreeConvolutionsInTwentyThreeShapes) {
  const auto l = resnet50_conv_counts();
  int total = 0;
  std::set<std::string> names;
  for (const auto& [n, c] : l) {
    total += c;
    names.insert(n);
  }
  EXPECT_EQ(l.size(), 23u);
  EXPECT_EQ(names.size(), 23u);
  EXPECT_EQ(total, 53);  // 49 in the bottlenecks and stem, 4 projection shortcuts
}

TEST(ConvFamily, FullSuiteRunsTheNetworkAndTheLayerAtBatch32And256PerPrecisionAndLayout) {
  // The batch sweep is the train family's (the whole step); the network's convolutions run at a
  // small and a large batch, and the 3x3 layer at the same two (sharing their algorithm choices).
  std::map<std::string, std::set<int64_t>> series, layer;
  for (const auto& c : select_cases(Suite::full, {"conv"}, "^conv/resnet50/"))
    series[c.params["precision"].get<std::string>() + "/" + c.params["layout"].get<std::string>()].insert(
        c.params["batch"].get<int64_t>());
  for (const auto& c : select_cases(Suite::full, {"conv"}, "^conv/layer/l1_3x3"))
    layer[c.params["precision"].get<std::string>() + "/" + c.params["layout"].get<std::string>()].insert(
        c.params["batch"].get<int64_t>());
  EXPECT_EQ(series.size(), 6u);  // fp32, tf32, fp16 x nchw, nhwc
  for (const auto& [k, b] : series) EXPECT_EQ(b, (std::set<int64_t>{32, 256})) << k;
  EXPECT_EQ(layer, series);
  for (const auto& c : select_cases(Suite::quick, {"conv"}, "tf32"))
    EXPECT_FALSE(c.available(gpu(6, 1)).ok);  // no TF32 on a P40
}
#endif
