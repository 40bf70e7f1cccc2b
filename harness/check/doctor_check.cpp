// A check: its severity, its JSON form and counts.
#include "check/doctor.hpp"
#include "check/doctor_util.hpp"

#include <optional>
#include <string>
#include <vector>

namespace nb {

using namespace doctor_detail;

std::string to_string(Severity s) {
  switch (s) {
    case Severity::ok: return "ok";
    case Severity::info: return "info";
    case Severity::warn: return "warn";
    case Severity::fail: return "fail";
  }
  return "?";
}


std::string Check::gpu_label() const {
  if (!gpu) return "all";
  std::string label = std::to_string(*gpu);
  if (peer) label += ',' + std::to_string(*peer);  // (char + string: no -Wrestrict false positive of GCC 12)
  return label;
}

json Check::to_json() const {
  json j = {{"id", id},
            {"gpu", gpu ? json(*gpu) : json(nullptr)},
            {"severity", to_string(severity)},
            {"summary", summary},
            {"evidence", evidence},
            {"fix", fix.empty() ? json(nullptr) : json(fix)}};
  if (peer) j["peer"] = *peer;
  if (skipped) j["skipped"] = true;
  if (value) j["value"] = *value;
  if (threshold) j["threshold"] = *threshold;
  if (!unit.empty()) j["unit"] = unit;
  return j;
}

Check Check::from_json(const json& j) {
  Check c;
  c.id = j.value("id", "");
  c.gpu = json_opt<int>(j, "gpu");
  c.peer = json_opt<int>(j, "peer");
  c.severity = severity_from(j.value("severity", "ok"));
  c.summary = j.value("summary", "");
  c.evidence = j.value("evidence", "");
  c.fix = jstr(j, "fix").value_or("");
  c.skipped = j.value("skipped", false);
  c.value = json_opt<double>(j, "value");
  c.threshold = json_opt<double>(j, "threshold");
  c.unit = j.value("unit", "");
  return c;
}

CheckCounts count_checks(const std::vector<Check>& checks) {
  CheckCounts n;
  for (const auto& c : checks) {
    if (c.skipped) ++n.skipped;
    switch (c.severity) {
      case Severity::ok: ++n.ok; break;
      case Severity::info: ++n.info; break;
      case Severity::warn: ++n.warn; break;
      case Severity::fail: ++n.fail; break;
    }
    if (int(c.severity) > int(n.worst)) n.worst = c.severity;
  }
  return n;
}

const Check* find_check(const std::vector<Check>& checks, const std::string& id, std::optional<int> gpu) {
  for (const auto& c : checks)
    if (c.id == id && (!gpu || c.gpu == gpu)) return &c;
  return nullptr;
}

}  // namespace nb
