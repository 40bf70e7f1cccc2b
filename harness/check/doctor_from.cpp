#include "check/doctor_from.hpp"

#include <fstream>
#include <iostream>
#include <sstream>

#include "base/error.hpp"
#include "base/json_file.hpp"

namespace nb {
using nlohmann::json;

std::string to_string(CaptureKind k) {
  switch (k) {
    case CaptureKind::environment: return "env --json capture";
    case CaptureKind::result: return "result file";
    case CaptureKind::doctor: return "doctor report";
  }
  return "?";
}

namespace {

[[noreturn]] void bad(const std::string& origin, const std::string& what) { throw Error(origin + ": " + what); }

// Optional field of `obj` that must have the given JSON type when present and not null.
void expect_type(const json& obj, const std::string& key, json::value_t type, const char* type_name,
                 const std::string& origin, const std::string& where) {
  if (!obj.contains(key) || obj[key].is_null()) return;
  const json& v = obj[key];
  const bool fits = type == json::value_t::number_integer ? v.is_number_integer()
                    : type == json::value_t::number_float ? v.is_number()
                                                          : v.type() == type;
  if (!fits) bad(origin, "'" + where + key + "' must be " + type_name + " (found " + v.type_name() + ")");
}

// The parts of an environment object the rules read, checked so that a wrong type is a message
// naming the field, never an exception deep inside a rule.
void check_environment(const json& env, const std::string& origin, const std::string& prefix) {
  if (!env.is_object()) bad(origin, "'" + prefix.substr(0, prefix.size() - 1) + "' must be an object");
  if (!env.contains("gpus")) bad(origin, "'" + prefix + "gpus' is missing (not an environment capture?)");
  if (!env["gpus"].is_array()) bad(origin, "'" + prefix + "gpus' must be an array");
  for (const char* k : {"host", "software", "nvml"}) expect_type(env, k, json::value_t::object, "an object", origin, prefix);
  for (const char* k : {"cuda_error", "cuda_visible_devices"}) expect_type(env, k, json::value_t::string, "a string", origin, prefix);
  if (env.contains("software") && env["software"].is_object())
    for (const auto& [k, v] : env["software"].items())
      if (!v.is_null() && !v.is_string()) bad(origin, "'" + prefix + "software." + k + "' must be a string (found " + v.type_name() + ")");
  size_t n = 0;
  for (const json& g : env["gpus"]) {
    const std::string at = prefix + "gpus[" + std::to_string(n++) + "].";
    if (!g.is_object()) bad(origin, "'" + at.substr(0, at.size() - 1) + "' must be an object");
    expect_type(g, "index", json::value_t::number_integer, "an integer", origin, at);
    expect_type(g, "sm_count", json::value_t::number_integer, "an integer", origin, at);
    for (const char* k : {"name", "compute_capability", "pci_bus_id", "uuid", "profile"})
      expect_type(g, k, json::value_t::string, "a string", origin, at);
    for (const char* k : {"ecc_enabled", "persistence_mode", "mig_mode"})
      expect_type(g, k, json::value_t::boolean, "true or false", origin, at);
    for (const char* k : {"memory_bytes", "l2_bytes", "clock_sm_mhz", "clock_mem_mhz", "clock_sm_max_mhz",
                          "clock_mem_max_mhz", "clock_sm_attribute_mhz", "power_limit_w", "temperature_c"})
      expect_type(g, k, json::value_t::number_float, "a number", origin, at);
    expect_type(g, "pcie", json::value_t::object, "an object", origin, at);
    expect_type(g, "peaks", json::value_t::object, "an object", origin, at);
    expect_type(g, "throttle_reasons", json::value_t::array, "an array", origin, at);
    if (g.contains("pcie") && g["pcie"].is_object())
      for (const auto& [k, v] : g["pcie"].items())
        if (!v.is_null() && !v.is_number()) bad(origin, "'" + at + "pcie." + k + "' must be a number (found " + v.type_name() + ")");
    if (g.contains("throttle_reasons") && g["throttle_reasons"].is_array())
      for (const json& r : g["throttle_reasons"])
        if (!r.is_string()) bad(origin, "'" + at + "throttle_reasons' must hold strings");
    if (g.contains("compute_capability") && g["compute_capability"].is_string() &&
        !parse_cc(g["compute_capability"].get<std::string>()))
      bad(origin, "'" + at + "compute_capability' is not a compute capability like \"6.1\" (found \"" +
                      g["compute_capability"].get<std::string>() + "\")");
  }
}

}  // namespace

CapturedNode captured_node_from_json(const json& j, const std::string& origin) {
  if (!j.is_object()) bad(origin, "expected a JSON object (an `env --json` capture, a result file or a `doctor --json` report)");
  if (j.contains("benchmarks") && !j.contains("environment") && !j.contains("gpus"))
    bad(origin, "a Google Benchmark JSON file (run --gbench-out), not a capture: give the result file written beside "
                "it, an `env --json` capture or a `doctor --json` report");
  CapturedNode node;
  node.origin = origin;
  if (j.contains("live")) {
    node.kind = CaptureKind::doctor;
    check_environment(j.contains("environment") ? j["environment"] : json(), origin, "environment.");
    if (!j["live"].is_object()) bad(origin, "'live' must be an object");
    for (const char* k : {"p2p", "topology", "gpus"})
      if (j["live"].contains(k) && !j["live"][k].is_null() && !j["live"][k].is_array())
        bad(origin, std::string("'live.") + k + "' must be an array");
    expect_type(j, "cuda_architectures", json::value_t::string, "a string", origin, "");
    try {
      node.input = DoctorInput::from_json(j);
    } catch (const json::exception& e) {
      bad(origin, std::string("a field of 'live' has the wrong type (") + e.what() + ")");
    }
    return node;
  }
  if (j.contains("environment")) {
    node.kind = CaptureKind::result;
    if (j.contains("records")) {  // a result file: its records are the cases' objects
      if (!j["records"].is_array()) bad(origin, std::string("'records' must be an array (found ") + j["records"].type_name() + ")");
      for (size_t i = 0; i < j["records"].size(); ++i)
        if (!j["records"][i].is_object())
          bad(origin, "records[" + std::to_string(i) + "] must be an object (a case's record), found " +
                          j["records"][i].type_name() + " " + j["records"][i].dump().substr(0, 40));
    }
    check_environment(j["environment"], origin, "environment.");
    node.input.environment = j["environment"];
    if (j.contains("nodebench")) {
      if (!j["nodebench"].is_object()) bad(origin, "'nodebench' must be an object");
      expect_type(j["nodebench"], "cuda_architectures", json::value_t::string, "a string", origin, "nodebench.");
      node.input.cuda_architectures = j["nodebench"].value("cuda_architectures", std::string());
    }
    node.input.live.recorded = false;
    return node;
  }
  if (j.contains("gpus") || j.contains("software")) {
    node.kind = CaptureKind::environment;
    check_environment(j, origin, "");
    node.input.environment = j;
    node.input.live.recorded = false;
    return node;
  }
  bad(origin, "neither an `env --json` capture ('gpus', 'software'), a result file ('environment') nor a "
              "`doctor --json` report ('environment', 'live')");
}

CapturedNode load_captured_node(const std::string& path) {
  const json j = read_json_file(path);  // a folder, unreadable or not JSON: named
  check_schema_version(j, path);         // a result or doctor report of another version: refused
  return captured_node_from_json(j, path);
}

std::vector<Check> judge_captured_node(CapturedNode& node, const std::string& archs) {
  if (!archs.empty()) node.input.cuda_architectures = archs;
  try {
    return run_doctor_rules(node.input);
  } catch (const json::exception& e) {
    throw Error(node.origin + ": a field the rules read has the wrong type (" + e.what() + ")");
  }
}

}  // namespace nb
