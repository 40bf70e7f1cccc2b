#include "app/runner.hpp"
#include "app/output_lock.hpp"
#include "app/run_signals.hpp"
#include "base/json_file.hpp"
#include "base/text.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <optional>

#include <sys/wait.h>
#include <unistd.h>

#include "bench/metric_registry.hpp"
#include "cluster/cluster.hpp"
#include "output/console.hpp"
#include "cluster/mpi.hpp"
#include "run/pipeline.hpp"
#include "run/plan.hpp"
#include "run/header.hpp"
#include "run/result.hpp"
#include "run/run_combine.hpp"

#include "build_info.hpp"

namespace nb {
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

ProfileDb load_profiles(const RunOptions& o) {
  return o.profiles_file.empty() ? ProfileDb::builtin() : ProfileDb::from_file(o.profiles_file);
}

std::string result_file_name(const json& env, const std::string& run_id) {
  std::string host = env["host"].value("hostname", "host");
  for (char& c : host)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') c = '_';
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return "nodebench-" + host + "-" + buf + "-" + run_id.substr(0, 8) + ".json";
}

}  // namespace

namespace {

// `list --metrics`: every registered family's declared metrics (those of --family), then the
// harness's common ones (family null in JSON).
int list_metrics(const ListCommand& lc) {
  const std::vector<std::string>& only = lc.selection.families;
  for (const std::string& f : only)
    if (!find_family_metrics(f)) {
      std::cerr << "nodebench: list --metrics: no family '" << f << "' declares metrics in this build\n" << usage_line("list");
      return kExitUsage;
    }
  json out = json::array();
  auto add = [&](const json& family, const DeclaredMetric& m) {
    out.push_back({{"family", family}, {"name", m.name}, {"unit", suffix(m.unit)}, {"better", to_string(m.better)}});
  };
  for (const FamilyMetrics& f : metric_registry())
    if (only.empty() || std::find(only.begin(), only.end(), f.family) != only.end())
      for (const DeclaredMetric& m : f.metrics) add(f.family, m);
  for (const DeclaredMetric& m : common_metrics()) add(nullptr, m);
  if (lc.json) {
    std::cout << out.dump(2) << "\n";
    return kExitOk;
  }
  std::cout << std::left << std::setw(12) << "family" << std::setw(34) << "metric" << std::setw(14) << "unit" << "better\n";
  for (const json& m : out)
    std::cout << std::left << std::setw(12) << (m["family"].is_null() ? std::string("(every)") : m["family"].get<std::string>())
              << std::setw(34) << m["name"].get<std::string>() << std::setw(14) << m["unit"].get<std::string>()
              << m["better"].get<std::string>() << "\n";
  std::cout << "(every): written by the harness on a record of any family; each rate also has its <rate>_per_ghz.\n";
  return kExitOk;
}

}  // namespace

int cmd_list(const ListCommand& lc) {
  if (lc.metrics) return list_metrics(lc);
  const RunOptions& o = lc.selection;
  std::vector<Case> cases;
  try {
    cases = select_cases(o.suite, o.families, o.filter);
  } catch (const Error& e) {
    std::cerr << "nodebench: " << e.what() << "\n" << usage_line("list");
    return kExitUsage;
  }
  Nvml nvml;
  const Environment env = capture_environment(nvml, ProfileDb::builtin());
  json out = json::array();
  if (!lc.json) {
    std::cout << "Families:\n";
    for (const auto& f : family_registry()) std::cout << "  " << std::left << std::setw(12) << f->name() << f->description() << "\n";
    if (env.gpus.empty()) std::cout << "No GPU visible (" << env.cuda_error << "): whether a case can run is unknown.\n";
    std::cout << "\nCases (" << to_string(o.suite) << " suite): " << cases.size() << "\n";
  }
  for (const auto& c : cases) {
    json avail = json::array();
    std::string line;
    for (const auto& g : env.gpus) {
      if (c.host_only) break;
      const Availability a = c.available ? c.available(g) : Availability::yes();
      avail.push_back({{"gpu", g.index}, {"can_run", a.ok}, {"reason", a.ok ? json(nullptr) : json(a.reason)}});
      line += "  gpu" + std::to_string(g.index) + ": " + (a.ok ? std::string("yes") : "no, " + a.reason);
    }
    if (c.host_only) line = "  host (needs no GPU)";
    else if (env.gpus.empty()) line = "  unknown (no GPU)";
    out.push_back({{"id", c.id()}, {"family", c.family}, {"case", c.name}, {"params", c.params}, {"host_only", c.host_only}, {"availability", avail}});
    if (!lc.json) std::cout << "  " << std::left << std::setw(48) << c.id() << line << "\n";
  }
  if (lc.json) std::cout << out.dump(2) << "\n";
  return kExitOk;
}

int cmd_env(const EnvCommand& c) {
  Nvml nvml;
  const Environment env = capture_environment(nvml, ProfileDb::builtin());
  if (c.json) {
    std::cout << env.json.dump(2) << "\n";
    return kExitOk;
  }
  const json& h = env.json["host"];
  const json& sw = env.json["software"];
  auto s = [](const json& v) { return v.is_null() ? std::string("not found") : v.is_string() ? v.get<std::string>() : v.dump(); };
  std::cout << "host      " << s(h["hostname"]) << " | " << s(h["os"]) << " | " << s(h["kernel"]) << "\n"
            << "cpu       " << s(h["cpu_model"]) << " x" << h["cpu_count"] << ", NUMA nodes " << h["numa_nodes"].size() << "\n"
            << "driver    " << s(sw["driver_version"]) << " (CUDA driver API " << s(sw["cuda_driver_version"]) << ")\n"
            << "runtime   CUDA " << s(sw["cuda_runtime_version"]) << ", cuBLAS " << s(sw["cublas_version"]) << ", cuDNN "
            << s(sw["cudnn_version"]) << ", NCCL " << s(sw["nccl_version"]) << "\n"
            << "NVML      " << (nvml.available() ? "available" : "unavailable: " + nvml.error()) << "\n"
            << "CUDA_VISIBLE_DEVICES " << s(env.json["cuda_visible_devices"]) << "\n";
  if (env.gpus.empty()) std::cout << "GPUs      none: " << env.cuda_error << "\n";
  for (const auto& g : env.json["gpus"]) {
    std::cout << "gpu" << g["index"] << "      " << s(g["name"]) << ", cc " << s(g["compute_capability"]) << ", "
              << g["sm_count"] << " SMs, " << fmt(g["memory_bytes"].get<double>() / (1 << 30), 1) << " GiB, bus "
              << s(g["pci_bus_id"]) << ", PCIe gen " << s(g["pcie"]["gen_current"]) << "/" << s(g["pcie"]["gen_max"])
              << " x" << s(g["pcie"]["width_current"]) << "/" << s(g["pcie"]["width_max"]) << ", SM clock "
              << s(g["clock_sm_mhz"]) << "/" << s(g["clock_sm_max_mhz"]) << " MHz, profile " << s(g["profile"]) << "\n";
  }
  return kExitOk;
}

namespace {

// argv without --runs N / --runs=N, without an --out-file (each run names its own file) and
// without the options of the output formats (--gbench-out: the combined run writes none).
std::vector<std::string> child_args(const std::vector<std::string>& argv) {
  std::vector<std::string> dropped = {"--runs", "--out-file"};
  for (const OutputFormat* f : output_formats(kFormatRun, FormatStage::run))
    if (!f->option.empty()) dropped.push_back(f->option);
  std::vector<std::string> out;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    bool drop = false, with_value = false;
    for (const std::string& d : dropped) {
      if (a == d) drop = with_value = true;
      else if (a.rfind(d + "=", 0) == 0) drop = true;
    }
    if (with_value) ++i;
    if (!drop) out.push_back(a);
  }
  return out;
}

int run_child(const std::vector<std::string>& args) {
  std::vector<char*> cargv;
  for (const auto& a : args) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw Error(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    execv("/proc/self/exe", cargv.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : kExitCaseFailed;
}

// --runs N: the same run N times, each in a fresh process (a fresh CUDA context and, unless an
// algorithm cache is given, a fresh algorithm search), then one file whose records (the last
// run's) carry each case's spread over the runs.
int run_repeated(const RunOptions& o, const Argv& argv) {
  const std::string stem = o.out_file.empty() ? (fs::path(o.out_dir) / ("nodebench-runs-" + make_run_id().substr(0, 8))).string()
                                              : fs::path(o.out_file).replace_extension("").string();
  std::vector<std::string> files;
  std::vector<json> docs;
  int worst = kExitOk;
  for (size_t i = 1; i <= o.runs; ++i) {
    const std::string file = stem + "-run" + std::to_string(i) + ".json";
    std::vector<std::string> args = child_args(argv);
    args.push_back("--out-file");
    args.push_back(file);
    std::cout << "== run " << i << " of " << o.runs << ": " << file << std::endl;
    const int rc = run_child(args);
    if (rc == kExitUsage || rc == kExitNoGpu) return rc;
    worst = std::max(worst, rc);
    try {
      docs.push_back(read_json_file(file));
      check_schema_version(docs.back(), file);
      check_record_metrics(docs.back(), file, std::cerr);  // a metric that is not a number: no readable result
      files.push_back(file);
    } catch (const std::exception& e) {
      std::cerr << "nodebench: run " << i << " left no readable result file (" << e.what() << ")\n";
      worst = kExitCaseFailed;
    }
  }
  if (docs.empty()) return kExitCaseFailed;
  json combined = combine_runs(docs, files);
  const std::string path = o.out_file.empty() ? stem + ".json" : o.out_file;
  write_file_atomic(path, combined.dump(1, ' ', false, json::error_handler_t::replace));
  print_summary(combined, std::cout);
  std::cout << "\nrun-to-run spread (max/min of the per-run medians) over " << docs.size() << " runs:\n";
  for (const auto& r : combined["records"])
    if (r.contains("run_to_run") && r["run_to_run"].is_object())
      std::cout << "  " << std::left << std::setw(58) << r["id"].get<std::string>() << " x"
                << fmt(r["run_to_run"]["max_over_min"].get<double>(), 3) << "\n";
  std::cout << "results: " << path << "\n";
  return worst;
}

}  // namespace

namespace {

// The result file's path (rank 0; other ranks keep their records in memory and send them to it),
// its folder made; an error message when it cannot be.
std::string result_path(const RunOptions& o, const Session& session, const std::string& run_id, std::string& path) {
  path = cluster::root() ? o.out_file : "";
  try {
    if (!cluster::root()) return "";
    if (path.empty()) {
      fs::create_directories(o.out_dir);
      path = (fs::path(o.out_dir) / result_file_name(session.env().json, run_id)).string();
    } else if (fs::path(path).has_parent_path()) {
      fs::create_directories(fs::path(path).parent_path());
    }
  } catch (const fs::filesystem_error& e) {
    return std::string("cannot create the output folder: ") + e.what();
  }
  return "";
}

std::string start_line(const RunOptions& o, const Plan& plan, const std::string& path) {
  const size_t steps = schedule(plan).size();
  return "nodebench " + std::string(NODEBENCH_VERSION) + ": " + std::to_string(plan.cases.size()) + " case(s) x " +
         std::to_string(plan.gpus.size()) + " GPU(s)" + (plan.gpus.empty() ? " (host-only cases, no GPU)" : "") +
         (cluster::active() ? " x " + std::to_string(cluster::size()) + " MPI rank(s)" : "") + " (" +
         std::to_string(steps) + " runs" + (plan.concurrent && plan.gpus.size() > 1 ? ", GPUs at once where sound" : "") +
         "), suite " + to_string(o.suite) +
         (o.monitor_interval_s ? "; GPUs sampled every " + fmt(*o.monitor_interval_s, 2) + " s" : std::string()) +
         "; results: " + path;
}

int finish_run(const RunOutcome& outcome, const RunDocument& doc, const std::string& path, const MadeFormats& formats) {
  bool file_failed = false;
  for (const auto& [what, err] : outcome.output_errors) {
    std::cerr << "nodebench: could not write the " << what << ": " << err << "\n";
    file_failed = file_failed || what == "JSON result file";
  }
  if (!cluster::root()) {
    // Rank 0 reports the whole run; this rank's exit code says how its own part went.
    if (!outcome.error.empty()) std::cerr << "nodebench: rank " << cluster::rank() << ": run aborted: " << outcome.error << "\n";
    return outcome.status == RunStatus::complete ? kExitOk : kExitCaseFailed;
  }
  // The files asked for by a format's option (--gbench-out), said when every output was written.
  if (outcome.output_errors.empty())
    for (const MadeFormat& m : formats.made)
      if (!m.file.empty()) std::cout << m.format->what << ": " << m.file << "\n";
  for (const auto& v : outcome.verdict_lines) std::cout << v << "\n";
  std::cout << "results: " << path << "\n";
  if (!outcome.error.empty()) std::cerr << "nodebench: run aborted: " << outcome.error << "\n";
  if (outcome.status == RunStatus::interrupted)
    std::cerr << "nodebench: interrupted; the cases measured so far are in " << path << "\n";
  const json& s = doc.doc()["summary"];
  if (file_failed || outcome.status != RunStatus::complete || s["failed"].get<int>() > 0 || s["wrong"].get<int>() > 0)
    return kExitCaseFailed;
  return kExitOk;
}

}  // namespace

// Whether every rank can run the cases: with a GPU, or without one when every case is host-only
// (the CPU's input pipeline); else says why (naming the host-only cases that could run here).
bool runnable_here(const Session& session, const std::vector<Case>& cases) {
  const auto host = [](const Case& k) { return k.host_only; };
  const size_t host_cases = size_t(std::count_if(cases.begin(), cases.end(), host));
  const bool runnable = session.has_gpus() || host_cases == cases.size();
  if (cluster::all_ok(runnable)) return true;
  std::cerr << (runnable ? "nodebench: another MPI rank found no GPU" : no_gpu_diagnosis(session.env().cuda_error)) << "\n";
  if (!runnable && host_cases > 0)
    std::cerr << "nodebench: " << host_cases << " of the " << cases.size() << " selected cases measure the host and "
              << "need no GPU (e.g. " << std::find_if(cases.begin(), cases.end(), host)->id()
              << "): select only those (--family, --filter) to run them here\n";
  return false;
}

int cmd_run(const RunCommand& c, const Argv& argv) {
  const RunOptions& o = c.options;
  if (o.runs > 1) {
    if (mpi::launched()) {
      std::cerr << "nodebench: --runs repeats the run in fresh processes and cannot be used under an MPI launcher; "
                   "repeat mpirun instead\n";
      return kExitUsage;
    }
    OutputLock lock;
    if (!o.out_file.empty())
      if (const std::string why = lock.take(o.out_file); !why.empty()) {
        std::cerr << "nodebench: --out-file: " << why << "\n";
        return kExitUsage;
      }
    try {
      return run_repeated(o, argv);
    } catch (const std::exception& e) {
      std::cerr << "nodebench: " << e.what() << "\n";
      return kExitCaseFailed;
    }
  }
  ProfileDb profiles;
  std::vector<Case> cases;
  try {
    profiles = load_profiles(o);
    cases = select_cases(o.suite, o.families, o.filter);
  } catch (const Error& e) {
    std::cerr << "nodebench: " << e.what() << "\n" << usage_line("run");
    return kExitUsage;
  }
  if (cases.empty()) {
    std::cerr << "nodebench: no case matches (suite " << to_string(o.suite) << ", filter '" << o.filter
              << "'); 'nodebench list' shows the cases\n";
    return kExitUsage;
  }

  // Under an MPI launcher: one process per GPU, rank 0 writes the file (docs/MULTIGPU.md).
  // Every step that can fail on one process only is agreed on, so no process waits alone.
  if (const std::string note = cluster::start(); !note.empty() && cluster::root()) std::cerr << note << "\n";
  // The result file is this run's alone (before the GPU is probed: a refusal costs nothing).
  OutputLock lock;
  const std::string lock_error = cluster::root() && !o.out_file.empty() ? lock.take(o.out_file) : "";
  if (!cluster::all_ok(lock_error.empty())) {
    std::cerr << "nodebench: --out-file: " << (lock_error.empty() ? "rank 0 could not lock the result file" : lock_error) << "\n";
    return kExitUsage;
  }
  Session session(std::move(profiles), current_settings());
  if (!runnable_here(session, cases)) return kExitNoGpu;
  std::vector<int> gpus;
  std::string gpu_error;
  try {
    gpus = parse_gpu_list(o.gpus, int(session.env().gpus.size()));
  } catch (const Error& e) {
    gpu_error = e.what();
  }
  if (!cluster::all_ok(gpu_error.empty())) {
    std::cerr << "nodebench: " << (gpu_error.empty() ? "another MPI rank rejected --gpus" : gpu_error) << "\n";
    return kExitUsage;
  }
  const bool shared = cluster::gpu_shared(gpus);
  gpus = cluster::local_gpus(gpus);
  if (shared && cluster::root())
    std::cerr << "nodebench: more MPI ranks on a host than GPUs: per-GPU cases are skipped (shared GPU)\n";
  Pipeline pipeline(kFormatRun, o, session, gpus);
  const Plan& plan = pipeline.plan();

  const std::string run_id = cluster::from_root(make_run_id());
  std::string path;
  if (const std::string err = result_path(o, session, run_id, path); !cluster::all_ok(err.empty())) {
    std::cerr << "nodebench: " << (err.empty() ? "rank 0 cannot write the result file" : err) << "\n";
    return kExitUsage;
  }
  json header = run_header(argv, session, o, plan.base.max_time_s, run_id);
  cluster::gather_environment(header["environment"], plan.gpus.empty() ? -1 : plan.gpus.front());
  RunDocument doc(header);
  try {
    // Rank 0 writes: the result file first (written now: a path it cannot write stops the run).
    if (cluster::root()) pipeline.attach(doc, path, start_line(o, plan, path));
    else pipeline.attach_without_formats(doc);
  } catch (const Error& e) {
    std::cerr << "nodebench: " << e.what() << "\n";
    return kExitUsage;
  }
  install_signal_handlers();
  RunHooks hooks;
  hooks.stop_requested = [] { return interrupt_requested(); };
  std::optional<SignalWatcher> watcher;
  if (cluster::root() && !cluster::active()) watcher.emplace(path, lock.held()).add_to(hooks);  // under MPI: at a case's end
  const RunOutcome outcome = pipeline.run(hooks);
  watcher.reset();
  return finish_run(outcome, doc, path, pipeline.formats());
}

int run_for_advice(const RunOptions& o, bool list, const Argv& argv, json& doc_out) {
  const char* const me = "nodebench advise --measure: ";
  ProfileDb profiles;
  std::vector<Case> cases;
  try {
    profiles = load_profiles(o);
    cases = select_cases(o);
  } catch (const Error& e) {
    std::cerr << me << e.what() << "\n";
    return kExitUsage;
  }
  if (cases.empty()) {
    std::cerr << me << "no case of the " << to_string(o.suite) << " suite is one the advice reads\n";
    return kExitUsage;
  }
  Session session(std::move(profiles), current_settings());
  if (list) {  // the plan, made as the run makes it, on no GPU
    const Pipeline pipeline(kFormatRun, o, session, {});
    std::cout << "advise --measure: " << pipeline.plan().cases.size() << " case(s) of the " << to_string(o.suite)
              << " suite, those the advice reads:\n";
    for (const Case& c : pipeline.plan().cases) std::cout << "  " << c.id() << "\n";
    return kExitOk;
  }
  OutputLock lock;  // the result file is this run's alone, as run's
  if (!o.out_file.empty())
    if (const std::string why = lock.take(o.out_file); !why.empty()) {
      std::cerr << me << "--out-file: " << why << "\n";
      return kExitUsage;
    }
  if (!runnable_here(session, cases)) return kExitNoGpu;
  std::vector<int> gpus;
  try {
    gpus = parse_gpu_list(o.gpus, int(session.env().gpus.size()));
  } catch (const Error& e) {
    std::cerr << me << e.what() << "\n";
    return kExitUsage;
  }
  Pipeline pipeline(kFormatRun, o, session, gpus);
  const std::string run_id = make_run_id();
  std::string path;
  if (const std::string err = result_path(o, session, run_id, path); !err.empty()) {
    std::cerr << me << err << "\n";
    return kExitUsage;
  }
  RunDocument doc(run_header(argv, session, o, pipeline.plan().base.max_time_s, run_id));
  try {
    pipeline.attach(doc, path, start_line(o, pipeline.plan(), path));
  } catch (const Error& e) {
    std::cerr << me << e.what() << "\n";
    return kExitUsage;
  }
  install_signal_handlers();
  RunHooks hooks;
  hooks.stop_requested = [] { return interrupt_requested(); };
  std::optional<SignalWatcher> watcher;
  watcher.emplace(path, lock.held()).add_to(hooks);  // a signal ends the run within a second, as run's
  const RunOutcome outcome = pipeline.run(hooks);
  watcher.reset();
  const int rc = finish_run(outcome, doc, path, pipeline.formats());
  doc_out = doc.doc();
  return rc;
}

}  // namespace nb
