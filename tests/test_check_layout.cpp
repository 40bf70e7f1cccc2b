// The layout of doctor and validate: the rule table registers every rule once and applies them in
// report order; validate's benchmark checks are declared by their families; the values those
// checks read from a result document.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include "bench/benchmark.hpp"
#include "check/doctor.hpp"
#include "check/validate.hpp"
#include "bench/analysis.hpp"
#include "bench/validate_values.hpp"
#include "base/error.hpp"
#include "base/text.hpp"

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
  EXPECT_EQ(by_family["gemm"], (std::set<std::string>{"gemm.fp32", "gemm.clock"}));
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
  EXPECT_TRUE(record_on(one, GpuBrief{1}));
  EXPECT_FALSE(record_on(one, GpuBrief{0}));
  EXPECT_FALSE(record_on(two, GpuBrief{0}));
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

// Each family's threshold keys are in its own folder (benchmarks/<family>/thresholds.json, built
// in with the family): a fragment holds only keys of its family's checks, and the core file
// keeps none of any family's.
TEST(FamilyThresholds, EachFragmentHoldsOnlyItsFamilysKeys) {
  std::map<std::string, const Family*> families;
  for (const auto& f : family_registry()) families[f->name()] = f.get();
  std::set<std::string> with_fragment;
  for (const ThresholdFragment& frag : threshold_fragments()) {
    EXPECT_TRUE(with_fragment.insert(frag.family).second) << frag.family << ": two fragments";
    EXPECT_EQ(frag.origin, "benchmarks/" + frag.family + "/thresholds.json");
    ASSERT_TRUE(families.count(frag.family)) << frag.origin << ": no such family";
    const auto checks = families[frag.family]->validation_checks();
    auto own = [&](const std::string& key) {
      for (const auto& vc : checks)
        if (vc.has_key(key)) return true;
      return false;
    };
    const json j = json::parse(frag.json);
    for (auto it = j.at("defaults").begin(); it != j.at("defaults").end(); ++it)
      EXPECT_TRUE(own(it.key())) << frag.origin << ": defaults." << it.key() << " is not a key of " << frag.family;
    for (auto m = j.at("models").begin(); m != j.at("models").end(); ++m)
      for (auto it = m.value().begin(); it != m.value().end(); ++it)
        EXPECT_TRUE(own(it.key())) << frag.origin << ": models." << m.key() << "." << it.key();
  }
  // Every family with a check has its thresholds in its folder.
  for (const auto& [name, f] : families)
    if (!f->validation_checks().empty()) EXPECT_TRUE(with_fragment.count(name)) << name << " has checks but no thresholds.json";
  std::ifstream core(std::string(NB_TEST_DATA_DIR) + "/../../harness/profiles/thresholds.json");
  ASSERT_TRUE(core);
  const json c = json::parse(core);
  EXPECT_TRUE(c.at("defaults").empty()) << c.at("defaults").dump();
  EXPECT_TRUE(c.at("models").empty()) << c.at("models").dump();
}

TEST(FamilyThresholds, EachEntrySaysWhichFileItCameFrom) {
  ThresholdDb db = ThresholdDb::builtin();
  EXPECT_NE(db.get("gemm.fp32", "")->source.find("defaults (built-in benchmarks/gemm/thresholds.json)"), std::string::npos);
  EXPECT_NE(db.get("p2p.nvlink", "H200 SXM")->source.find("model:H200 SXM (built-in benchmarks/p2p/thresholds.json)"),
            std::string::npos);
  EXPECT_NE(db.origin().find("harness/profiles/thresholds.json"), std::string::npos);
  EXPECT_NE(db.origin().find("benchmarks/nccl/thresholds.json"), std::string::npos);
  db.merge({{"defaults", {{"memory.copy", {{"min", 1}}}}}}, "file mine.json");
  EXPECT_NE(db.get("memory.copy", "")->source.find("(file mine.json)"), std::string::npos);
  EXPECT_EQ(db.get("memory.copy", "")->unit, "percent_of_peak");  // kept from the family's entry
  EXPECT_NE(db.get("memory.triad", "")->source.find("benchmarks/memory/thresholds.json"), std::string::npos);
  // An unknown id is refused, naming the ids the families declare.
  try {
    db.merge({{"defaults", {{"gemm.fp23", {{"min", 1}}}}}}, "x");
    FAIL() << "an unknown id was accepted";
  } catch (const Error& e) {
    const std::string m = e.what();
    for (const char* known : {"gemm.fp32", "memory.triad", "hostlink.d2h", "p2p.<link>", "nccl.all_reduce.<link>"})
      EXPECT_NE(m.find(known), std::string::npos) << known << " not in: " << m;
  }
}

// validate names no family's check id: they come from the families (a source check, so that a
// table of ids does not come back).
TEST(FamilyThresholds, ValidateNamesNoFamilyCheck) {
  for (const char* file : {"harness/check/validate.cpp", "harness/check/validate.hpp", "harness/check/validate_report.cpp"}) {
    std::ifstream in(std::string(NB_TEST_DATA_DIR) + "/../../" + file);
    ASSERT_TRUE(in) << file;
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (const char* family : {"gemm", "memory", "hostlink", "p2p", "nccl", "conv", "train"})
      EXPECT_EQ(text.find("\"" + std::string(family) + "."), std::string::npos) << file << " names a " << family << " check";
  }
}

TEST(ValidationCheckKeys, IdOrPrefixAndALinkWord) {
  ValidationCheck node;
  node.id = "p2p.bandwidth";
  node.keys_prefix = "p2p.";
  EXPECT_TRUE(node.has_key("p2p.bandwidth"));
  EXPECT_TRUE(node.has_key("p2p.nvlink"));
  EXPECT_TRUE(node.has_key("p2p.pcie_gen5"));
  EXPECT_FALSE(node.has_key("p2p."));
  EXPECT_FALSE(node.has_key("p2p.NVLink"));
  EXPECT_FALSE(node.has_key("p2p.a.b"));
  EXPECT_FALSE(node.has_key("nccl.all_reduce.pcie"));
  ValidationCheck one;
  one.id = "gemm.fp32";
  EXPECT_TRUE(one.has_key("gemm.fp32"));
  EXPECT_FALSE(one.has_key("gemm.fp16"));
}

TEST(ValidateValues, RatesAgainstTheSlowestLink) {
  // Two GPUs at Gen5 x16 and Gen4 x16 (maximum), one without PCIe facts.
  const json env = {{"gpus",
                     {{{"index", 0}, {"pcie", {{"gen_max", 5}, {"width_max", 16}}}},
                      {{"index", 1}, {"pcie", {{"gen_max", 4}, {"width_max", 16}}}},
                      {{"index", 2}}}}};
  const double gen4 = *max_link_gbps(env, 1), gen5 = *max_link_gbps(env, 0);
  EXPECT_LT(gen4, gen5);
  EXPECT_DOUBLE_EQ(*slowest_link_gbps(env, {0, 1}, true), gen4);
  EXPECT_FALSE(slowest_link_gbps(env, {0, 2}, true).has_value());
  EXPECT_DOUBLE_EQ(*slowest_link_gbps(env, {0, 2}, false), gen5);
  EXPECT_FALSE(slowest_link_gbps(env, {2}, false).has_value());
  std::string how;
  EXPECT_DOUBLE_EQ(*rate_against_link(gen4 / 2, "percent_of_link", gen4, "x: ", "the link", "pcie", how), 50.0);
  EXPECT_EQ(how, "x: " + fmt(gen4 / 2, 1) + " GB/s of " + fmt(gen4, 1) + " GB/s (the link), link pcie");
  EXPECT_DOUBLE_EQ(*rate_against_link(300, "gbps", std::nullopt, "", "the link", "nvlink", how), 300.0);
  EXPECT_EQ(how, "300.0 GB/s, link nvlink");
  EXPECT_FALSE(rate_against_link(300, "percent_of_link", std::nullopt, "", "l", "pcie", how).has_value());
  EXPECT_FALSE(rate_against_link(NAN, "gbps", gen4, "", "l", "pcie", how).has_value());
}
