// Typed metrics (bench/metric.hpp): a name is its stem and its unit's suffix, so it follows the
// schema's naming rule by construction. The rule is read from the schema file itself.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "bench/metric.hpp"
#include "run/record.hpp"

using namespace nb;
using nlohmann::json;

namespace {

std::string schema_metric_pattern() {
  std::ifstream in(NB_SCHEMA_FILE);
  const json s = json::parse(in);
  std::function<std::string(const json&)> find = [&](const json& n) -> std::string {
    if (n.is_object()) {
      if (n.contains("properties") && n["properties"].contains("metrics"))
        return n["properties"]["metrics"]["propertyNames"]["pattern"].get<std::string>();
      for (const auto& [k, v] : n.items())
        if (std::string p = find(v); !p.empty()) return p;
    } else if (n.is_array()) {
      for (const auto& v : n)
        if (std::string p = find(v); !p.empty()) return p;
    }
    return "";
  };
  return find(s);
}

}  // namespace

TEST(Metric, EveryUnitMakesNamesTheSchemaAccepts) {
  const std::string pattern = schema_metric_pattern();
  ASSERT_FALSE(pattern.empty());
  const std::regex rx(pattern);
  for (Unit u : kAllUnits) {
    const std::string name = metric_name("step", u);
    EXPECT_TRUE(std::regex_search(name, rx)) << name;
    EXPECT_EQ(unit_of_name(name), u) << name;
    // A bare name is made exactly for the units whose bare name the schema accepts.
    bool made = true;
    try {
      (void)metric_name("", u);
    } catch (const Error&) {
      made = false;
    }
    EXPECT_EQ(made, std::regex_search(std::string(suffix(u)), rx)) << suffix(u);
  }
  // The names that failed validation on a GPU once could not be made now.
  EXPECT_FALSE(std::regex_search(std::string("buckets"), rx));
}

TEST(Metric, BadStemsAreRefused) {
  EXPECT_EQ(metric_name("step_time", Unit::ms), "step_time_ms");
  EXPECT_EQ(metric_name("", Unit::tflops), "tflops");
  EXPECT_EQ(metric_name("images_per", Unit::s), "images_per_s");
  EXPECT_THROW(metric_name("time_ms", Unit::ms), Error);      // the unit twice
  EXPECT_THROW(metric_name("Step", Unit::ms), Error);         // not [a-z0-9_]
  EXPECT_THROW(metric_name("step_", Unit::ms), Error);
  EXPECT_THROW(metric_name("", Unit::share), Error);          // bare share: the schema has no such name
  EXPECT_EQ(unit_of_name("scaling_efficiency_ratio"), Unit::ratio);
  EXPECT_EQ(unit_of_name("train_images_per_s"), Unit::images_per_s);  // the longest suffix wins
  EXPECT_EQ(unit_of_name("tflops_per_ghz"), Unit::per_ghz);
  EXPECT_FALSE(unit_of_name("buckets").has_value());
}

TEST(Metric, TypedMetricsReachTheRecordAndAnUnnamedUnitFails) {
  Case c;
  c.family = "f";
  c.name = "n";
  CaseOutput out;
  out.measurement = Measurement{};
  out.measurement->samples_s = {1e-3, 1e-3, 1e-3};
  out.typed_metrics.push_back(make_metric("step_time", Unit::ms, 12.5, Better::lower));
  out.primary_metric = "step_time_ms";
  out.primary_higher = false;
  RecordInput in{&c, {0}, Status::ok, "", &out, nullptr, std::nullopt, std::nullopt, true, "t", 1};
  const Record r = build_record(in);
  ASSERT_NE(r.metric("step_time_ms"), nullptr);
  EXPECT_EQ(r.metric("step_time_ms")->unit, Unit::ms);
  const json j = r.to_json();
  EXPECT_DOUBLE_EQ(j["metrics"]["step_time_ms"].get<double>(), 12.5);
  EXPECT_EQ(j["primary_metric"], "step_time_ms");
  EXPECT_EQ(j["primary_better"], "lower");
  out.metrics["buckets"] = 3;  // no unit in its name: the record cannot be built
  EXPECT_THROW(build_record(in), Error);
}
