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
#include "run/formats.hpp"
#include "run/header.hpp"
#include "run/pipeline.hpp"
#include "run/plan.hpp"
#include "run/session.hpp"

namespace nb {
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

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

  // The verdict's own outputs (the verdict formats: --junit, --prometheus); false when one could
  // not be written.
  bool write_verdict(const RunDocument& doc) {
    PromContext pc;
    pc.cuda_gpus = int(session.env().gpus.size());
    pc.nvml_gpus = nvml_gpus;
    const VerdictExtra verdict(report, hostname(), t0, pc);
    FormatContext ctx;
    ctx.options = &o;
    ctx.doc = &doc;
    ctx.extra = &verdict;
    bool ok = true;
    for (const MadeFormat& m : make_formats(kFormatValidate, FormatStage::verdict, ctx).made) {
      try {
        m.reporter->finished(doc);
        std::cout << m.format->what << ": " << m.file << "\n";
      } catch (const std::exception& e) {
        std::cerr << "nodebench: cannot write " << m.format->what << " '" << m.file << "': " << e.what() << "\n";
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
    if (!bp.run_all) {
      ro.families = bp.families;
      ro.filter = exact_id_filter(bp.case_ids);
    }
    ro.gpus = o.gpus;
    ro.quiet = o.quiet;
    ro.out_file = path;
    ro.algo_cache_file = o.algo_cache_file;
    ro.algo_search = o.algo_search;
    std::optional<Pipeline> pipeline;
    try {
      pipeline.emplace(kFormatValidate, ro, session, gpus);
    } catch (const Error& e) {
      std::cerr << "nodebench: " << e.what() << "\n";
      return kExitUsage;
    }
    std::cout << "\nnodebench validate, level " << v.level << ": running "
              << (bp.run_all ? "every case (full suite)" : std::to_string(bp.case_ids.size()) + " case(s)") << std::endl;
    holder.emplace(run_header(argv, session, ro, pipeline->plan().base.max_time_s, make_run_id()));
    try {
      fs::create_directories(fs::path(path).parent_path());
      pipeline->attach(*holder, path);
    } catch (const std::exception& e) {
      std::cerr << "nodebench: cannot write the result file '" << path << "': " << e.what() << "\n";
      return kExitUsage;
    }
    const RunOutcome outcome = pipeline->run();
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
    // The result file again, the verdict in it: validate's formats made over the judged document
    // (the result file writes it when made; the console has nothing to add).
    fs::create_directories(fs::path(val.path).parent_path());
    FormatContext ctx;
    ctx.options = &c.run;
    ctx.file = val.path;
    ctx.doc = doc;
    make_formats(kFormatValidate, FormatStage::run, ctx);
  } catch (const std::exception& e) {
    std::cerr << "nodebench: could not write the result file: " << e.what() << "\n";
  }
  print_validation(val.report, std::cout);
  std::cout << "results: " << val.path << "\n";
  val.write_verdict(*doc);
  return val.report.pass() ? kExitOk : kExitCaseFailed;
}

}  // namespace nb
