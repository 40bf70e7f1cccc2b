// `nodebench doctor` (live facts of this node) and `doctor --from FILE` (a node captured elsewhere).
#include "app/commands.hpp"

#include <iostream>

#include "base/exit_codes.hpp"
#include "build_info.hpp"
#include "check/doctor.hpp"
#include "check/doctor_from.hpp"
#include "check/doctor_util.hpp"

namespace nb {
using nlohmann::json;
using namespace doctor_detail;

namespace {

int doctor_live(const DoctorOptions& o) {
  Nvml nvml;
  const Environment env = capture_environment(nvml, ProfileDb::builtin());
  DoctorInput in;
  in.environment = env.json;
  in.cuda_architectures = NODEBENCH_CUDA_ARCHITECTURES;
  in.live = gather_live_facts(nvml, env, !o.no_load);
  const std::vector<Check> checks = run_doctor_rules(in);
  if (o.json) {
    std::cout << doctor_report_json(in, checks).dump(2) << "\n";
  } else {
    std::cout << "nodebench doctor: " << env.gpus.size() << " GPU(s) visible, driver "
              << jstr(software_of(env.json), "driver_version").value_or("unknown") << ", CUDA runtime "
              << version_string(runtime_version(env.json)) << "\n\n";
    print_checks(checks, std::cout);
  }
  if (env.gpus.empty()) {
    std::cerr << no_gpu_diagnosis(env.cuda_error) << "\n";
    return kExitNoGpu;
  }
  return count_checks(checks).fail ? kExitCaseFailed : kExitOk;
}

int doctor_from(const DoctorOptions& o) {
  const std::string& path = o.from;
  CapturedNode node;
  std::vector<Check> checks;
  try {
    node = load_captured_node(path);
    checks = judge_captured_node(node, o.archs);
  } catch (const Error& e) {
    std::cerr << "nodebench: doctor --from: " << e.what() << "\n";
    return kExitUsage;
  }
  if (o.json) {
    json report = doctor_report_json(node.input, checks);
    report["from"] = {{"file", path}, {"kind", to_string(node.kind)}};
    std::cout << report.dump(2) << "\n";
  } else {
    const json& env = node.input.environment;
    const json sw = env.contains("software") && env["software"].is_object() ? env["software"] : json::object();
    auto s = [&](const char* k) { return sw.contains(k) && sw[k].is_string() ? sw[k].get<std::string>() : std::string("unknown"); };
    std::string host = "unknown";
    if (env.contains("host") && env["host"].is_object() && env["host"].contains("hostname") && env["host"]["hostname"].is_string())
      host = env["host"]["hostname"].get<std::string>();
    std::cout << "nodebench doctor --from " << path << " (" << to_string(node.kind) << " of host " << host << "): "
              << env["gpus"].size() << " GPU(s), driver " << s("driver_version") << ", CUDA runtime "
              << s("cuda_runtime_version") << "\n";
    if (!node.input.live.recorded)
      std::cout << "  Only the environment was captured: ECC counters, peer access, links under load and processes\n"
                   "  are not recorded (their checks say so); `nodebench doctor --json` on the node records them.\n";
    if (node.input.cuda_architectures.empty())
      std::cout << "  The binary's CUDA architectures are not recorded: give them with --archs (e.g. --archs 61-real).\n";
    std::cout << "\n";
    print_checks(checks, std::cout);
  }
  return count_checks(checks).fail ? kExitCaseFailed : kExitOk;
}

}  // namespace

int cmd_doctor(const DoctorCommand& c) { return c.options.from.empty() ? doctor_live(c.options) : doctor_from(c.options); }

}  // namespace nb
