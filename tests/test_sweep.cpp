// The GEMM family's case expansion (no GPU needed: cases are generated, not run).
#include <gtest/gtest.h>

#include <set>

#include "error.hpp"
#include "runner.hpp"

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
