// The example family (tests/example_family.cpp) through the harness: its cases come from its
// axes, validate plans its case at level 2 and judges its records with its own check.
#include <gtest/gtest.h>

#include "base/error.hpp"
#include "run/plan.hpp"
#include "check/validate.hpp"

using namespace nb;
using nlohmann::json;

TEST(ExampleFamily, CasesFromAxes) {
  const std::vector<Case> quick = select_cases(Suite::quick, {"example"}, "");
  ASSERT_EQ(quick.size(), 2u);
  EXPECT_EQ(quick[0].id(), "example/fill/1MiB");
  EXPECT_EQ(quick[1].id(), "example/fill/64MiB");
  EXPECT_EQ(quick[1].params["bytes"], 64 << 20);
  EXPECT_EQ(quick[1].params["kernel"], "fill");
  EXPECT_EQ(select_cases(Suite::full, {"example"}, "").size(), 3u);
}

TEST(ExampleFamily, ValidatePlansAndJudgesItsCheck) {
  const std::vector<Case> quick = select_cases(Suite::quick, {"example"}, "");
  const BenchPlan plan = plan_benchmarks(2, {"example"}, quick, 1);
  // The largest of the cases its check runs.
  ASSERT_EQ(plan.case_ids.size(), 1u);
  EXPECT_EQ(plan.case_ids[0], "example/fill/64MiB");

  auto record = [](const char* id, int64_t bytes, double gbps, const char* status) {
    return json{{"id", id}, {"family", "example"}, {"gpus", {0}}, {"status", status}, {"reason", nullptr},
                {"params", {{"kernel", "fill"}, {"bytes", bytes}}}, {"metrics", {{"gbps", gbps}}}, {"flags", json::array()}};
  };
  json doc = {{"environment", {{"gpus", json::array()}}},
              {"records", {record("example/fill/1MiB", 1 << 20, 10.0, "ok"), record("example/fill/64MiB", 64 << 20, 120.0, "ok")}}};
  ProfileChoice p;
  p.db.merge({{"defaults", {{"example.fill", {{"min", 100}, {"unit", "gbps"}, {"why", "test"}}}}}}, "test");
  auto find = [](const std::vector<Check>& cs) {
    for (const Check& c : cs)
      if (c.id == "example.fill") return c;
    return Check{};
  };
  // The largest record (64 MiB, 120 GB/s) is judged: above 100 passes.
  Check c = find(judge_results(doc, p, 2, {"example"}, {0}));
  EXPECT_EQ(c.id, "example.fill");
  EXPECT_EQ(c.severity, Severity::ok) << c.summary;
  EXPECT_DOUBLE_EQ(*c.value, 120.0);
  doc["records"][1]["metrics"]["gbps"] = 80.0;
  c = find(judge_results(doc, p, 2, {"example"}, {0}));
  EXPECT_EQ(c.severity, Severity::fail) << c.summary;
  doc["records"][1]["status"] = "wrong";
  c = find(judge_results(doc, p, 2, {"example"}, {0}));
  EXPECT_EQ(c.severity, Severity::fail);
  // Not built: no check of it.
  EXPECT_TRUE(find(judge_results(doc, p, 2, {"gemm"}, {0})).id.empty());
}

TEST(ExampleFamily, ThresholdsAcceptItsCheckIdAndRefuseOthers) {
  // example.fill is declared by the family (validation_checks()), not by validate itself.
  EXPECT_NO_THROW(ThresholdDb::from_json({{"defaults", {{"example.fill", {{"min", 1}, {"unit", "gbps"}}}}}}, "x"));
  try {
    ThresholdDb::from_json({{"defaults", {{"example.fil", {{"min", 1}, {"unit", "gbps"}}}}}}, "x");
    FAIL() << "an undeclared check id was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'example.fil'"), std::string::npos) << e.what();
  }
}
