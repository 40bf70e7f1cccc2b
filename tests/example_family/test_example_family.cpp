// The example family through the harness, each part against what this file expects of it: its
// cases and ids, its threshold key found in its own thresholds.json and judged (pass and fail), its
// setting parsed (good and bad values), its analysis on crafted records.
#include <fstream>

#include <gtest/gtest.h>

#include "base/error.hpp"
#include "bench/settings.hpp"
#include "check/validate.hpp"
#include "run/plan.hpp"

using namespace nb;
using nlohmann::json;

namespace {

std::vector<std::string> ids(const std::vector<Case>& cs) {
  std::vector<std::string> out;
  for (const Case& c : cs) out.push_back(c.id());
  return out;
}

json fill_record(const std::string& id, int gpu, int64_t bytes, double gbps, const std::string& status = "ok",
                 double pct = 50) {
  return {{"id", id}, {"family", "example"}, {"gpus", {gpu}}, {"status", status}, {"reason", nullptr},
          {"params", {{"kernel", "fill"}, {"bytes", bytes}}}, {"metrics", {{"gbps", gbps}}},
          {"percent_of_peak", {{"metric", "gbps"}, {"peak", 100.0 * gbps / pct}, {"percent", pct},
                               {"peak_key", "mem_gbps"}, {"source", "test"}}},
          {"flags", json::array()}};
}

Check check_of(const std::vector<Check>& cs, const std::string& id) {
  for (const Check& c : cs)
    if (c.id == id) return c;
  return Check{};
}

// The family's own file, read here apart from the build's copy of it.
json own_thresholds() {
  std::ifstream in(std::string(NB_FAMILY_DIR) + "/thresholds.json");
  return json::parse(in);
}

const Analysis* analysis(const std::string& key) {
  for (const Analysis& a : analysis_registry())
    if (a.key == key) return &a;
  return nullptr;
}

}  // namespace

TEST(ExampleFamily, CasesFromAxes) {
  const std::vector<Case> quick = select_cases(Suite::quick, {"example"}, "");
  EXPECT_EQ(ids(quick), (std::vector<std::string>{"example/fill/1MiB", "example/fill/64MiB"}));
  ASSERT_EQ(quick.size(), 2u);
  EXPECT_EQ(quick[1].params, (json{{"kernel", "fill"}, {"bytes", 64 << 20}}));
  EXPECT_EQ(ids(select_cases(Suite::full, {"example"}, "")),
            (std::vector<std::string>{"example/fill/1MiB", "example/fill/64MiB", "example/fill/1GiB"}));
  EXPECT_EQ(ids(select_cases(Suite::full, {"example"}, "1GiB")), (std::vector<std::string>{"example/fill/1GiB"}));
}

TEST(ExampleFamily, ItsThresholdKeyComesFromItsOwnFile) {
  const json file = own_thresholds();
  const json& entry = file["defaults"]["example.fill"];
  const std::optional<Threshold> t = ThresholdDb::builtin().get("example.fill", "");
  ASSERT_TRUE(t.has_value()) << "example.fill has no built-in threshold: the family's thresholds.json is not built in";
  EXPECT_DOUBLE_EQ(t->min, entry["min"].get<double>());
  EXPECT_EQ(t->unit, entry["unit"].get<std::string>());
  EXPECT_NE(t->source.find("tests/example_family/thresholds.json"), std::string::npos) << t->source;
}

TEST(ExampleFamily, ValidatePlansAndJudgesItsCheckAgainstItsThreshold) {
  const std::vector<Case> quick = select_cases(Suite::quick, {"example"}, "");
  const BenchPlan plan = plan_benchmarks(2, {"example"}, quick, 1);
  EXPECT_EQ(plan.case_ids, std::vector<std::string>{"example/fill/64MiB"});  // the largest its check runs

  const double min = own_thresholds()["defaults"]["example.fill"]["min"].get<double>();
  json doc = {{"environment", {{"gpus", json::array()}}},
              {"records", {fill_record("example/fill/1MiB", 0, 1 << 20, 5.0, "ok", min / 4),
                           fill_record("example/fill/64MiB", 0, 64 << 20, 50.0, "ok", min + 1)}}};
  const ProfileChoice p;  // the built-in thresholds, the family's fragment merged in
  // The largest record is judged: above the threshold passes...
  Check c = check_of(judge_results(doc, p, 2, {"example"}, {0}), "example.fill");
  EXPECT_EQ(c.severity, Severity::ok) << c.summary;
  ASSERT_TRUE(c.value.has_value());
  EXPECT_DOUBLE_EQ(*c.value, min + 1);
  // ... below it fails, and so does a wrong record.
  doc["records"][1]["percent_of_peak"]["percent"] = min - 1;
  c = check_of(judge_results(doc, p, 2, {"example"}, {0}), "example.fill");
  EXPECT_EQ(c.severity, Severity::fail) << c.summary;
  doc["records"][1]["percent_of_peak"]["percent"] = min + 1;
  doc["records"][1]["status"] = "wrong";
  EXPECT_EQ(check_of(judge_results(doc, p, 2, {"example"}, {0}), "example.fill").severity, Severity::fail);
  // The family not built: no check of it.
  EXPECT_TRUE(check_of(judge_results(doc, p, 2, {"gemm"}, {0}), "example.fill").id.empty());
}

TEST(ExampleFamily, ThresholdsAcceptItsCheckIdAndRefuseOthers) {
  EXPECT_NO_THROW(ThresholdDb::from_json({{"defaults", {{"example.fill", {{"min", 1}, {"unit", "gbps"}}}}}}, "x"));
  try {
    ThresholdDb::from_json({{"defaults", {{"example.fil", {{"min", 1}, {"unit", "gbps"}}}}}}, "x");
    FAIL() << "an undeclared check id was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'example.fil'"), std::string::npos) << e.what();
  }
}

TEST(ExampleFamily, ItsSettingIsParsedByTheOneParser) {
  const char* name = "NODEBENCH_EXAMPLE_FILLS";
  EXPECT_EQ(Settings::from_map({}).integer(name), 1);
  const Settings four = Settings::from_map({{name, "4"}});
  EXPECT_EQ(four.integer(name), 4);
  EXPECT_EQ(four.to_json()["example_fills"], 4);
  EXPECT_EQ(Settings::from_map({{name, "16"}}).integer(name), 16);
  const std::pair<const char*, const char*> bad[] = {{"0", "must be a positive whole number"},
                                                     {"2.5", "must be a positive whole number"},
                                                     {"many", "must be a positive whole number"},
                                                     {"17", "too large (at most 16)"}};
  for (const auto& [value, why] : bad) {
    try {
      Settings::from_map({{name, value}});
      ADD_FAILURE() << value << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string(name) + "='" + value + "': " + why), std::string::npos) << e.what();
    }
  }
  // Listed by --help with the family's other knobs, not the core's.
  bool found = false;
  for (const SettingSpec& s : setting_registry())
    if (s.name == name) found = s.owner == "example" && s.kind == SettingKind::integer;
  EXPECT_TRUE(found);
  EXPECT_NE(settings_help().find("  NODEBENCH_EXAMPLE_FILLS=N"), std::string::npos) << settings_help();
}

TEST(ExampleFamily, ItsAnalysisSummarisesEachGpu) {
  const Analysis* a = analysis("example_fill");
  ASSERT_NE(a, nullptr);
  json records = {fill_record("example/fill/64MiB", 0, 64 << 20, 200.0), fill_record("example/fill/1MiB", 0, 1 << 20, 20.0),
                  fill_record("example/fill/1GiB", 0, int64_t(1) << 30, 180.0),
                  fill_record("example/fill/1MiB", 1, 1 << 20, 10.0),
                  fill_record("example/fill/64MiB", 1, 64 << 20, 999.0, "failed")};
  json other = fill_record("memory/copy/64MiB", 0, 64 << 20, 900.0);
  other["family"] = "memory";
  records.push_back(other);
  json pair = fill_record("example/fill/4MiB", 0, 4 << 20, 950.0);
  pair["gpus"] = {0, 1};
  records.push_back(pair);
  ASSERT_TRUE(a->applies(records));
  EXPECT_FALSE(a->applies(json::array({other, fill_record("example/fill/1MiB", 0, 1 << 20, 1.0, "skipped")})));

  const json out = a->run(records, AnalysisContext{});
  const json want = {{{"gpu", 0}, {"best_gbps", 200.0}, {"best_id", "example/fill/64MiB"},
                      {"smallest_id", "example/fill/1MiB"}, {"smallest_share", 0.1}},
                     {{"gpu", 1}, {"best_gbps", 10.0}, {"best_id", "example/fill/1MiB"},
                      {"smallest_id", "example/fill/1MiB"}, {"smallest_share", 1.0}}};
  EXPECT_EQ(out, want) << out.dump(1);
  EXPECT_EQ(a->lines(out), (std::vector<std::string>{
                               "example fill: gpu0 at best 200.0 GB/s (example/fill/64MiB); its smallest fill reaches 10% of that",
                               "example fill: gpu1 at best 10.0 GB/s (example/fill/1MiB); its smallest fill reaches 100% of that"}));
}
