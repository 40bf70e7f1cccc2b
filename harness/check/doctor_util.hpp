// Internal to harness/check: helpers the doctor's rules, fact serialisation and command share.
#pragma once
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "check/doctor.hpp"
#include "base/json_fields.hpp"
#include "base/text.hpp"

namespace nb::doctor_detail {

using nlohmann::json;
using jf::at;
using jf::jbool;
using jf::jnum;
using jf::json_opt;
using jf::jstr;
using jf::opt_json;

inline Severity severity_from(const std::string& s) {
  if (s == "fail") return Severity::fail;
  if (s == "warn") return Severity::warn;
  if (s == "info") return Severity::info;
  return Severity::ok;
}

// Replaces {key} by its value.
inline std::string subst(std::string text, const std::map<std::string, std::string>& vars) {
  for (const auto& [k, v] : vars) {
    const std::string pat = "{" + k + "}";
    for (size_t pos = text.find(pat); pos != std::string::npos; pos = text.find(pat, pos + v.size()))
      text.replace(pos, pat.size(), v);
  }
  return text;
}

inline std::string version_string(const std::vector<int>& v) {
  std::ostringstream os;
  for (size_t i = 0; i < v.size(); ++i) os << (i ? "." : "") << v[i];
  return os.str();
}

inline std::string gib(unsigned long long bytes) { return fmt(double(bytes) / double(1ull << 30), 1) + " GiB"; }

inline Check make_check(const std::string& id, std::optional<int> gpu, Severity sev, std::string summary,
                 std::string evidence = "", std::string fix = "") {
  Check c;
  c.id = id;
  c.gpu = gpu;
  c.severity = sev;
  c.summary = std::move(summary);
  c.evidence = std::move(evidence);
  c.fix = std::move(fix);
  return c;
}

// One GPU of the captured environment.
struct GpuView {
  int index = 0;
  std::string name;
  std::optional<int> cc;
  const json* j = nullptr;
  std::string label() const {
    return "GPU " + std::to_string(index) + " (" + name + (cc ? ", cc " + cc_string(*cc) : std::string()) + ")";
  }
};

inline std::vector<GpuView> gpus_of(const json& env) {
  std::vector<GpuView> out;
  if (!env.is_object() || !env.contains("gpus") || !env["gpus"].is_array()) return out;
  for (const auto& g : env["gpus"]) {
    GpuView v;
    v.index = g.value("index", int(out.size()));
    v.name = jstr(g, "name").value_or("unknown GPU");
    if (auto cc = jstr(g, "compute_capability")) v.cc = parse_cc(*cc);
    v.j = &g;
    out.push_back(v);
  }
  return out;
}

inline const json& software_of(const json& env) {
  static const json empty = json::object();
  return env.is_object() && env.contains("software") && env["software"].is_object() ? env["software"] : empty;
}

// The CUDA runtime this binary uses: the loaded one, else the one it was compiled with.
inline std::vector<int> runtime_version(const json& env) {
  const json& sw = software_of(env);
  if (auto v = jstr(sw, "cuda_runtime_version")) return parse_version(*v);
  if (auto v = jstr(sw, "cuda_runtime_compiled")) return parse_version(*v);
  return {};
}

// The oldest driver a CUDA major release needs, from compat.json.
inline std::optional<std::vector<int>> driver_minimum(const RuleData& data, int cuda_major) {
  const json& m = at(at(data.compat, "cuda_driver_minimum"), "by_major");
  const std::string key = std::to_string(cuda_major);
  if (m.is_object() && m.contains(key) && m[key].is_string()) return parse_version(m[key].get<std::string>());
  return std::nullopt;
}

inline std::string level_names(const std::vector<std::pair<int, int>>& pairs) {
  std::vector<std::string> s;
  for (const auto& [a, b] : pairs) {
    std::ostringstream os;
    os << "(" << a << "," << b << ")";
    s.push_back(os.str());
  }
  return join(s, " ");
}

inline json link_json(const PcieLink& l) {
  return {{"gen_current", opt_json(l.gen_current)},
          {"gen_max", opt_json(l.gen_max)},
          {"width_current", opt_json(l.width_current)},
          {"width_max", opt_json(l.width_max)}};
}
inline PcieLink link_from_json(const json& j) {
  PcieLink l;
  l.gen_current = json_opt<unsigned>(j, "gen_current");
  l.gen_max = json_opt<unsigned>(j, "gen_max");
  l.width_current = json_opt<unsigned>(j, "width_current");
  l.width_max = json_opt<unsigned>(j, "width_max");
  return l;
}

}  // namespace nb::doctor_detail
