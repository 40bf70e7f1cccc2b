// `nodebench validate`: doctor's checks, then at level 2 and up the families' benchmarks run in
// this process and judged against the thresholds of the GPU's model (docs/VALIDATE.md).
#include "app/commands.hpp"

#include <chrono>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <optional>

#include "base/exit_codes.hpp"
#include "base/text.hpp"
#include "base/json_fields.hpp"
#include "build_info.hpp"
#include "check/doctor.hpp"
#include "check/validate.hpp"
#include "run/header.hpp"
#include "run/plan.hpp"
#include "run/result.hpp"
#include "run/session.hpp"

namespace nb {
using nlohmann::json;
namespace fs = std::filesystem;
using jf::at;
using jf::str_or;

// ---- The command -------------------------------------------------------------------------------

namespace {

std::string utc_stamp(const char* format) {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

bool write_text(const std::string& path, const std::string& text, const char* what) {
  try {
    const fs::path p(path);
    if (p.has_parent_path()) fs::create_directories(p.parent_path());
    write_file_atomic(path, text);
    std::cout << what << ": " << path << "\n";
    return true;
  } catch (const std::exception& e) {
    std::cerr << "nodebench: cannot write " << what << " '" << path << "': " << e.what() << "\n";
    return false;
  }
}

}  // namespace

int cmd_validate(const Command& cmd) {
  const auto t0 = std::chrono::steady_clock::now();
  const ValidateOptions& v = cmd.validate;
  const RunOptions& o = cmd.options;
  if (v.level < 1 || v.level > 3) {
    std::cerr << "nodebench: --level must be 1, 2 or 3\n";
    return kExitUsage;
  }
  Session session(ProfileDb::builtin(), current_settings());
  const Nvml& nvml = session.nvml();
  const Environment& env = session.env();
  ProfileChoice profile;
  try {
    profile = resolve_profile(v.profile, env.json);
  } catch (const Error& e) {
    std::cerr << "nodebench: " << e.what() << "\n";
    return kExitUsage;
  }
  std::vector<int> gpu_ids;
  if (!env.gpus.empty()) {
    try {
      gpu_ids = parse_gpu_list(o.gpus, int(env.gpus.size()));
    } catch (const Error& e) {
      std::cerr << "nodebench: " << e.what() << "\n";
      return kExitUsage;
    }
  }

  ValidationReport report;
  report.level = v.level;
  report.profile = profile.to_json();
  DoctorInput in;
  in.environment = env.json;
  in.cuda_architectures = NODEBENCH_CUDA_ARCHITECTURES;
  in.live = gather_live_facts(nvml, env, true);
  report.doctor = run_doctor_rules(in);
  const std::string hostname = str_or(at(env.json, "host"), "hostname", "host");
  auto write_reports = [&]() {
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    bool ok = true;
    if (!v.junit_file.empty())
      ok &= write_text(v.junit_file, junit_xml(report, hostname, utc_stamp("%Y-%m-%dT%H:%M:%SZ"), secs), "JUnit XML");
    if (!v.prometheus_file.empty()) {
      PromContext pc;
      pc.unix_time = double(std::time(nullptr));
      pc.cuda_gpus = int(env.gpus.size());
      pc.nvml_gpus = in.live.nvml_device_count;
      ok &= write_text(v.prometheus_file, prometheus_text(report, pc), "Prometheus textfile");
    }
    return ok;
  };

  if (env.gpus.empty()) {
    print_validation(report, std::cout);
    write_reports();
    std::cerr << no_gpu_diagnosis(env.cuda_error) << "\n";
    return kExitNoGpu;
  }

  // The benchmarks of the level, run by `nodebench run` itself into a result file of our naming.
  std::vector<std::string> built;
  for (const auto& f : family_registry()) built.push_back(f->name());
  const BenchPlan plan = plan_benchmarks(v.level, built, select_cases(Suite::quick, {}, ""), int(gpu_ids.size()));
  report.missing_families = plan.missing;
  std::string host_tag = hostname;
  for (char& c : host_tag)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') c = '_';
  const std::string path =
      (fs::path(o.out_dir) / ("nodebench-validate-" + host_tag + "-" + utc_stamp("%Y%m%dT%H%M%SZ") + ".json")).string();
  json doc;
  std::optional<ResultFile> file;
  if (!plan.empty()) {
    // The benchmarks of the level, run in this process over the same session, judged in memory.
    RunOptions ro;
    ro.suite = plan.suite;
    ro.gpus = o.gpus;
    ro.quiet = o.quiet;
    ro.out_file = path;
    ro.algo_cache_file = o.algo_cache_file;
    ro.algo_search = o.algo_search;
    Plan run;
    try {
      run.cases = select_cases(plan.suite, plan.run_all ? std::vector<std::string>{} : plan.families,
                               plan.run_all ? "" : exact_id_filter(plan.case_ids));
    } catch (const Error& e) {
      std::cerr << "nodebench: " << e.what() << "\n";
      return kExitUsage;
    }
    run.gpus = gpu_ids;
    const double max_time = default_max_time(plan.suite);
    run.base.max_time_s = max_time;
    run.base.target_cv = ro.target_cv;
    run.base.min_samples = ro.min_samples;
    run.algo_cache_file = o.algo_cache_file;
    run.algo_search = o.algo_search;
    std::cout << "\nnodebench validate, level " << v.level << ": running "
              << (plan.run_all ? "every case (full suite)" : std::to_string(plan.case_ids.size()) + " case(s)") << std::endl;
    try {
      fs::create_directories(fs::path(path).parent_path());
      file.emplace(path, run_header(cmd.argv, session, ro, max_time, make_run_id()));
    } catch (const std::exception& e) {
      std::cerr << "nodebench: cannot write the result file '" << path << "': " << e.what() << "\n";
      return kExitUsage;
    }
    RunHooks hooks;
    hooks.on_record = [&](const json& rec, size_t done, size_t total) {
      if (!o.quiet)
        std::cout << "[" << done << "/" << total << "] " << rec["id"].get<std::string>() << "  "
                  << rec["status"].get<std::string>() << std::endl;
    };
    const RunOutcome outcome = run_plan(run, session, *file, hooks);
    if (!outcome.error.empty()) std::cerr << "nodebench: run aborted: " << outcome.error << "\n";
    doc = file->doc();
  } else {
    // Level 1 (or nothing built): a result file without records, for the validation section.
    RunOptions ro;
    ro.gpus = o.gpus;
    doc = run_header(cmd.argv, session, ro, 0, make_run_id());
    doc["schema"] = "nodebench.result";
    doc["schema_version"] = kSchemaVersion;
    doc["finished_at"] = iso_utc(std::chrono::system_clock::now());
    doc["run_status"] = "complete";
    doc["run_error"] = nullptr;
    doc["options"]["validate_level"] = v.level;
    doc["options"]["profile"] = v.profile;
    doc["records"] = json::array();
    doc["summary"] = {{"ok", 0}, {"skipped", 0}, {"failed", 0}, {"wrong", 0}, {"total", 0}, {"wall_time_s", 0.0}};
  }
  if (!doc.is_null()) {
    if (v.level >= 2) {
      std::vector<Check> judged = judge_results(doc, profile, v.level, built, gpu_ids);
      report.benchmarks.insert(report.benchmarks.end(), judged.begin(), judged.end());
    }
    try {
      if (file) {
        file->set_analysis("validation", report.to_json());
        file->flush(true);
      } else {
        doc["analysis"]["validation"] = report.to_json();
        fs::create_directories(fs::path(path).parent_path());
        write_file_atomic(path, doc.dump(1, ' ', false, json::error_handler_t::replace));
      }
    } catch (const std::exception& e) {
      std::cerr << "nodebench: could not write the result file: " << e.what() << "\n";
    }
  }
  print_validation(report, std::cout);
  std::cout << "results: " << path << "\n";
  write_reports();
  return report.pass() ? kExitOk : kExitCaseFailed;
}

}  // namespace nb
