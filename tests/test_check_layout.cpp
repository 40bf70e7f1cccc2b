// The layout of doctor and validate: the rule table registers every rule once and applies them in
// report order; validate's benchmark checks are declared by their families; the values those
// checks read from a result document.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>

#include "bench/benchmark.hpp"
#include "check/doctor.hpp"
#include "check/validate.hpp"
#include "bench/validate_values.hpp"

using namespace nb;
using nlohmann::json;

namespace {

DoctorInput fixture(const std::string& name) {
  std::ifstream f(std::string(NB_TEST_DATA_DIR) + "/doctor/" + name);
  return DoctorInput::from_json(json::parse(f));
}

std::vector<std::string> ids_of(const std::vector<Check>& checks) {
  std::vector<std::string> out;
  for (const auto& c : checks) out.push_back(c.id + "@" + c.gpu_label() + ":" + to_string(c.severity) + ":" + c.summary);
  return out;
}

}  // namespace

TEST(DoctorRules, EachRuleOnceInReportOrder) {
  std::set<std::string> names;
  for (const auto& r : doctor_rules()) EXPECT_TRUE(names.insert(r.name).second) << "registered twice: " << r.name;
  EXPECT_EQ(doctor_rules().size(), 17u);
  const RuleData& data = RuleData::builtin();
  for (const char* name : {"h200_healthy.json", "h200_link_x8.json", "p40_cuda13.json", "hidden_gpu_lost.json"}) {
    const DoctorInput in = fixture(name);
    // The rules called one by one, in the order the report lists them.
    std::vector<Check> expected;
    for (auto v : {rule_nvml(in), rule_driver_runtime(in, data), rule_driver_gpu_support(in, data),
                   rule_arch_binary(in, data), rule_libraries(in, data), rule_visibility(in), rule_device_order(in),
                   rule_processes(in), rule_mig(in), rule_pcie(in), rule_ecc(in), rule_persistence(in), rule_throttle(in),
                   rule_thermal(in), rule_p2p(in), rule_iommu(in), rule_frameworks(in, data)})
      expected.insert(expected.end(), v.begin(), v.end());
    EXPECT_EQ(ids_of(run_doctor_rules(in, data)), ids_of(expected)) << name;
    // Each table entry reports the checks its name says.
    for (const auto& r : doctor_rules())
      for (const auto& c : r.apply(in, data))
        EXPECT_EQ(c.id.rfind(r.name, 0), 0u) << r.name << " reported " << c.id << " (" << name << ")";
  }
}

TEST(FamilyChecks, DeclaredByTheirFamiliesWithThresholds) {
  std::map<std::string, std::set<std::string>> by_family;
  for (const auto& f : family_registry())
    for (const auto& vc : f->validation_checks()) {
      EXPECT_TRUE(by_family[f->name()].insert(vc.id).second) << vc.id;
      EXPECT_FALSE(vc.fix.empty()) << vc.id;
      EXPECT_TRUE(bool(vc.node) != bool(vc.value)) << vc.id << ": a check of each GPU or of the node";
    }
  EXPECT_EQ(by_family["gemm"], (std::set<std::string>{"gemm.fp32"}));
  EXPECT_EQ(by_family["memory"], (std::set<std::string>{"memory.copy", "memory.triad"}));
  EXPECT_EQ(by_family["hostlink"], (std::set<std::string>{"hostlink.h2d", "hostlink.d2h"}));
  EXPECT_EQ(by_family["p2p"], (std::set<std::string>{"p2p.bandwidth"}));
  EXPECT_EQ(by_family["nccl"], (std::set<std::string>{"nccl.all_reduce"}));
  // Every check of one GPU has a default threshold (a misspelt id would never be judged).
  const ThresholdDb db = ThresholdDb::builtin();
  for (const auto& f : family_registry())
    for (const auto& vc : f->validation_checks()) {
      if (!vc.node) {
        EXPECT_TRUE(db.get(vc.id, "").has_value()) << vc.id;
      }
    }
  for (const char* id : {"p2p.pcie", "p2p.sys", "nccl.all_reduce.pcie"})
    EXPECT_TRUE(db.get(id, "").has_value()) << id;
}

TEST(ValidateValues, RecordsAndLinks) {
  const json one = {{"gpus", {1}}}, two = {{"gpus", {0, 1}}};
  EXPECT_TRUE(record_on_gpu(one, 1));
  EXPECT_FALSE(record_on_gpu(one, 0));
  EXPECT_FALSE(record_on_gpu(two, 0));
  const json recs = json::array({{{"id", "a"}, {"params", {{"bytes", 8}}}},
                                 {{"id", "b"}, {"params", {{"bytes", 64}}}},
                                 {{"id", "c"}, {"params", {{"bytes", 64}}}},
                                 {{"id", "d"}}});
  EXPECT_EQ((*largest_record(recs, [](const json&) { return true; }))["id"], "b");  // the first of equals
  EXPECT_EQ((*largest_record(recs, [](const json& r) { return r["id"] == "d"; }))["id"], "d");
  EXPECT_EQ(largest_record(recs, [](const json&) { return false; }), nullptr);
  // Gen5 x16: 32 GT/s * 16 lanes * 128/130 / 8 = 63.0 GB/s each way.
  const json env = {{"gpus", {{{"index", 0}, {"pcie", {{"gen_max", 5}, {"width_max", 16}}}}, {{"index", 1}}}}};
  EXPECT_NEAR(*max_link_gbps(env, 0), 63.0, 0.1);
  EXPECT_FALSE(max_link_gbps(env, 1).has_value());
  const json rec_link = {{"details", {{"link", {{"gen_max", 3}, {"width_max", 16}}}}}};
  EXPECT_NEAR(*max_link_gbps(env, 1, &rec_link), 15.75, 0.05);  // from the record where the environment lacks it
  std::string how;
  EXPECT_FALSE(percent_of_peak_value(json::object(), how).has_value());
  EXPECT_NE(how.find("devices.json"), std::string::npos);
  const json pct = {{"percent_of_peak", {{"percent", 80.0}, {"metric", "tflops"}, {"peak", 50.0}, {"source", "s"}}},
                    {"metrics", {{"tflops", 40.0}}}};
  EXPECT_DOUBLE_EQ(*percent_of_peak_value(pct, how), 80.0);
  EXPECT_EQ(how, "40.00 tflops of 50.0 peak (s)");
  // Link class: the record's own, else the p2p matrix over the members.
  json doc = {{"analysis", {{"p2p", {{"gpus", {0, 1, 2}},
                                     {"link_type", {{"X", "NVLink", "SYS"}, {"NVLink", "X", "PIX"}, {"SYS", "PIX", "X"}}}}}}}};
  EXPECT_EQ(link_class(doc, {{"params", {{"link", "NVLink"}}}}, {0, 2}), "nvlink");
  EXPECT_EQ(link_class(doc, json::object(), {0, 1}), "nvlink");
  EXPECT_EQ(link_class(doc, json::object(), {1, 2}), "pcie");
  EXPECT_EQ(link_class(doc, json::object(), {0, 1, 2}), "sys");
  EXPECT_EQ(link_class(doc, json::object(), {0, 3}), "pcie");  // GPU 3 not in the matrix
  EXPECT_EQ(link_class(json::object(), json::object(), {0, 1}), "pcie");
}
