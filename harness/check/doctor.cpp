// `nodebench doctor`: the rule table (every rule registered once, here, in report order), the
// built-in rule data, and the command. The rules themselves live by topic in doctor_rules_*.cpp;
// the facts' JSON in doctor_facts.cpp, the live gathering in doctor_live.cpp, the output in
// doctor_print.cpp, versions and architecture lists in doctor_versions.cpp.
#include "check/doctor.hpp"
#include "check/doctor_util.hpp"

#include <iostream>

#include "base/error.hpp"
#include "node/arch_facts.hpp"
#include "node/profiles.hpp"

#include "build_info.hpp"

namespace nb {

extern const char* const kBuiltinCompatJson;      // generated from harness/profiles/compat.json
extern const char* const kBuiltinFrameworksJson;  // generated from harness/profiles/frameworks.json

using namespace doctor_detail;

const RuleData& RuleData::builtin() {
  static const RuleData d = [] {
    RuleData r;
    r.compat = json::parse(kBuiltinCompatJson);
    r.frameworks = json::parse(kBuiltinFrameworksJson);
    r.arch_facts = builtin_arch_facts();
    return r;
  }();
  return d;
}

std::map<std::string, std::string> RuleData::pin_vars() const {
  std::map<std::string, std::string> vars;
  if (arch_facts.is_object() && arch_facts.contains("pins") && arch_facts["pins"].is_object())
    for (const auto& [k, v] : arch_facts["pins"].items())
      if (v.is_string()) vars["pin." + k] = v.get<std::string>();
  return vars;
}

namespace {

// A rule that needs only the input.
DoctorRule::Apply input_only(std::vector<Check> (*rule)(const DoctorInput&)) {
  return [rule](const DoctorInput& in, const RuleData&) { return rule(in); };
}

}  // namespace

const std::vector<DoctorRule>& doctor_rules() {
  static const std::vector<DoctorRule> rules = {
      {"nvml.available", input_only(rule_nvml)},
      {"driver.cuda_runtime", rule_driver_runtime},
      {"driver.gpu_support", rule_driver_gpu_support},
      {"arch.binary", rule_arch_binary},
      {"libs", rule_libraries},
      {"gpu.visibility", input_only(rule_visibility)},
      {"gpu.device_order", input_only(rule_device_order)},
      {"gpu.processes", input_only(rule_processes)},
      {"gpu.mig", input_only(rule_mig)},
      {"pcie.link", input_only(rule_pcie)},
      {"ecc", input_only(rule_ecc)},
      {"gpu.persistence", input_only(rule_persistence)},
      {"gpu.throttle", input_only(rule_throttle)},
      {"gpu.thermal", input_only(rule_thermal)},
      {"p2p", input_only(rule_p2p)},
      {"p2p.iommu", input_only(rule_iommu)},
      {"frameworks", rule_frameworks},
  };
  return rules;
}

std::vector<Check> run_doctor_rules(const DoctorInput& in, const RuleData& data) {
  std::vector<Check> out;
  for (const DoctorRule& rule : doctor_rules())
    for (auto& c : rule.apply(in, data)) out.push_back(std::move(c));
  return out;
}

}  // namespace nb
