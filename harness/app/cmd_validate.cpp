// `nodebench validate`: doctor's checks, then at level 2 and up the families' benchmarks run in
// this process and judged against the thresholds of the GPU's model (docs/VALIDATE.md).
#include "app/commands.hpp"

#include <chrono>
#include <filesystem>
#include <iostream>
#include <optional>

#include "base/exit_codes.hpp"
#include "base/files.hpp"
#include "base/json_fields.hpp"
#include "build_info.hpp"
#include "check/doctor.hpp"
#include "check/validate.hpp"
#include "check/validate_outputs.hpp"
#include "output/json_file.hpp"
#include "run/header.hpp"
#include "run/plan.hpp"
#include "run/session.hpp"

namespace nb {
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// "[3/29] memory/copy/4GiB  ok": validate's progress, one line a record.
class LineProgress : public Reporter {
 public:
  std::string what() const override { return "progress lines"; }
  void recorded(const RunDocument&, const json& rec, const Progress& p) override {
    std::cout << "[" << p.done << "/" << p.total << "] " << rec["id"].get<std::string>() << "  "
              << rec["status"].get<std::string>() << std::endl;
  }
};

// The state of one validate: the session, the thresholds, the report being filled.
struct Validation {
  const ValidateOptions& v;
  const RunOptions& o;
  const Argv& argv;
  const std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  Session session{ProfileDb::builtin(), current_settings()};
  ProfileChoice profile;
  std::vector<int> gpus;
  ValidationReport report;
  std::optional<int> nvml_gpus;
  std::string path;

  std::string hostname() const { return jf::str_or(jf::at(session.env().json, "host"), "hostname", "host"); }

  void run_doctor() {
    report.level = v.level;
    report.profile = profile.to_json();
    DoctorInput in;
    in.environment = session.env().json;
    in.cuda_architectures = NODEBENCH_CUDA_ARCHITECTURES;
    in.live = gather_live_facts(session.nvml(), session.env(), true);
    nvml_gpus = in.live.nvml_device_count;
    report.doctor = run_doctor_rules(in);
  }

  // The verdict's own outputs (--junit, --prometheus); false when one could not be written.
  bool write_verdict(const RunDocument& doc) {
    std::vector<std::unique_ptr<Reporter>> outs;
    if (!v.junit_file.empty()) outs.push_back(std::make_unique<JunitReport>(v.junit_file, report, hostname(), t0));
    if (!v.prometheus_file.empty()) {
      PromContext pc;
      pc.cuda_gpus = int(session.env().gpus.size());
      pc.nvml_gpus = nvml_gpus;
      outs.push_back(std::make_unique<PrometheusReport>(v.prometheus_file, report, pc));
    }
    bool ok = true;
    for (auto& r : outs) {
      const std::string where = r->what() == "JUnit XML" ? v.junit_file : v.prometheus_file;
      try {
        r->finished(doc);
        std::cout << r->what() << ": " << where << "\n";
      } catch (const std::exception& e) {
        std::cerr << "nodebench: cannot write " << r->what() << " '" << where << "': " << e.what() << "\n";
        ok = false;
      }
    }
    return ok;
  }

  // Level 2 and up: the level's benchmarks in this process over the same session, judged in
  // memory. Returns the exit code of a usage problem, or nothing.
  std::optional<int> run_benchmarks(const BenchPlan& bp, RunDocument*& out, std::optional<RunDocument>& holder) {
    RunOptions ro;
    ro.suite = bp.suite;
    ro.gpus = o.gpus;
    ro.quiet = o.quiet;
    ro.out_file = path;
    ro.algo_cache_file = o.algo_cache_file;
    ro.algo_search = o.algo_search;
    std::vector<Case> cases;
    try {
      cases = select_cases(bp.suite, bp.run_all ? std::vector<std::string>{} : bp.families,
                           bp.run_all ? "" : exact_id_filter(bp.case_ids));
    } catch (const Error& e) {
      std::cerr << "nodebench: " << e.what() << "\n";
      return kExitUsage;
    }
    const Plan plan = make_plan(ro, session, std::move(cases), gpus);
    std::cout << "\nnodebench validate, level " << v.level << ": running "
              << (bp.run_all ? "every case (full suite)" : std::to_string(bp.case_ids.size()) + " case(s)") << std::endl;
    holder.emplace(run_header(argv, session, ro, plan.base.max_time_s, make_run_id()));
    std::optional<JsonResultFile> file;
    try {
      fs::create_directories(fs::path(path).parent_path());
      file.emplace(path, *holder);
    } catch (const std::exception& e) {
      std::cerr << "nodebench: cannot write the result file '" << path << "': " << e.what() << "\n";
      return kExitUsage;
    }
    LineProgress lines;
    std::vector<Reporter*> reporters{&*file};
    if (!o.quiet) reporters.push_back(&lines);
    const RunOutcome outcome = run_plan(plan, session, *holder, reporters);
    if (!outcome.error.empty()) std::cerr << "nodebench: run aborted: " << outcome.error << "\n";
    out = &*holder;
    return std::nullopt;
  }

  // Level 1 (or nothing built): a result document without records, for the validation section.
  RunDocument empty_document() {
    RunOptions ro;
    ro.gpus = o.gpus;
    json header = run_header(argv, session, ro, 0, make_run_id());
    header["options"]["validate_level"] = v.level;
    header["options"]["profile"] = v.profile;
    RunDocument doc(header);
    doc.finish("complete");
    return doc;
  }
};

std::string result_path(const std::string& out_dir, const std::string& hostname) {
  std::string host_tag = hostname;
  for (char& c : host_tag)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') c = '_';
  return (fs::path(out_dir) / ("nodebench-validate-" + host_tag + "-" + utc_stamp("%Y%m%dT%H%M%SZ") + ".json")).string();
}

}  // namespace

int cmd_validate(const ValidateCommand& c, const Argv& argv) {
  if (c.options.level < 1 || c.options.level > 4) {
    std::cerr << "nodebench: --level must be 1, 2, 3 or 4\n";
    return kExitUsage;
  }
  Validation val{c.options, c.run, argv};
  const Environment& env = val.session.env();
  try {
    val.profile = resolve_profile(c.options.profile, env.json);
    if (!env.gpus.empty()) val.gpus = parse_gpu_list(c.run.gpus, int(env.gpus.size()));
  } catch (const Error& e) {
    std::cerr << "nodebench: " << e.what() << "\n";
    return kExitUsage;
  }
  val.run_doctor();
  if (env.gpus.empty()) {
    print_validation(val.report, std::cout);
    val.write_verdict(val.empty_document());
    std::cerr << no_gpu_diagnosis(env.cuda_error) << "\n";
    return kExitNoGpu;
  }
  std::vector<std::string> built;
  for (const auto& f : family_registry()) built.push_back(f->name());
  // Every family named, so that those that run only when named (the burn) are among the candidates.
  const BenchPlan bp = plan_benchmarks(c.options.level, built, select_cases(Suite::quick, built, ""), int(val.gpus.size()));
  val.report.missing_families = bp.missing;
  val.path = result_path(c.run.out_dir, val.hostname());
  std::optional<RunDocument> ran;
  RunDocument* doc = nullptr;
  if (!bp.empty()) {
    if (const auto rc = val.run_benchmarks(bp, doc, ran)) return *rc;
  } else {
    ran.emplace(val.empty_document());
    doc = &*ran;
  }
  if (c.options.level >= 2) {
    std::vector<Check> judged = judge_results(doc->doc(), val.profile, c.options.level, built, val.gpus);
    val.report.benchmarks.insert(val.report.benchmarks.end(), judged.begin(), judged.end());
  }
  doc->set_analysis("validation", val.report.to_json());
  try {
    fs::create_directories(fs::path(val.path).parent_path());
    JsonResultFile(val.path, *doc);
  } catch (const std::exception& e) {
    std::cerr << "nodebench: could not write the result file: " << e.what() << "\n";
  }
  print_validation(val.report, std::cout);
  std::cout << "results: " << val.path << "\n";
  val.write_verdict(*doc);
  return val.report.pass() ? kExitOk : kExitCaseFailed;
}

}  // namespace nb
