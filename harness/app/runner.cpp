#include "app/runner.hpp"
#include "base/json_file.hpp"
#include "base/text.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <cstdlib>
#include <ctime>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <mutex>
#include <thread>
#include <regex>
#include <set>
#include <sstream>

#include "cluster/cluster.hpp"
#include "output/console.hpp"
#include "output/gbench_out.hpp"
#include "output/json_file.hpp"
#include "cluster/mpi.hpp"
#include "run/plan.hpp"
#include "run/header.hpp"
#include "run/result.hpp"
#include "run/run_combine.hpp"

#include "build_info.hpp"

namespace nb {
using nlohmann::json;
namespace fs = std::filesystem;

InterruptAction interrupt_action(int64_t now_ns, int64_t& first_ns) {
  if (first_ns == 0) {
    first_ns = now_ns;
    return InterruptAction::stop_after_case;
  }
  return now_ns - first_ns < kInterruptRepeatNs ? InterruptAction::ignore : InterruptAction::terminate;
}

namespace {

std::atomic<bool> g_interrupted{false};

std::atomic<int64_t> g_first_signal_ns{0};
std::atomic<int> g_signal{0};
// The self-pipe through which the handler wakes the run's signal watcher (SignalWatcher).
int g_signal_pipe[2] = {-1, -1};

extern "C" void on_signal(int sig) {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);  // async-signal-safe
  int64_t first = g_first_signal_ns.load();
  switch (interrupt_action(int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec, first)) {
    case InterruptAction::stop_after_case:
      g_first_signal_ns.store(first);
      g_signal.store(sig);
      g_interrupted.store(true);
      if (g_signal_pipe[1] >= 0) {
        const char wake = 1;
        const int saved = errno;
        (void)!write(g_signal_pipe[1], &wake, 1);  // async-signal-safe
        errno = saved;
      }
      break;
    case InterruptAction::ignore: break;
    case InterruptAction::terminate:
      signal(sig, SIG_DFL);
      raise(sig);
      break;
  }
}

void install_signal_handlers() {
  if (g_signal_pipe[0] < 0 && pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) g_signal_pipe[0] = g_signal_pipe[1] = -1;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // not SA_RESETHAND: see interrupt_action
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

// Watches a run's signals on its own thread: on the first SIGINT/SIGTERM it gives the run
// kInterruptGraceMs to reach the end of its case by itself (then the run's analyses are made as
// usual), and past that ends the run at once through RunHooks' end_now (the result file written
// "interrupted" with every case measured so far) and the process, so that a signal stops a run
// within a second even during a case that lasts minutes.
class SignalWatcher {
 public:
  // `lock_path`: the result file's lock (OutputLock), removed when the run ends at once.
  SignalWatcher(std::string path, std::string lock_path) : path_(std::move(path)), lock_path_(std::move(lock_path)) {
    if (g_signal_pipe[0] >= 0) thread_ = std::thread([this] { loop(); });
  }
  ~SignalWatcher() {
    over();
    if (thread_.joinable()) {
      const char quit = 0;
      (void)!write(g_signal_pipe[1], &quit, 1);
      thread_.join();
    }
  }
  void add_to(RunHooks& hooks) {
    hooks.on_start = [this](std::function<bool(const std::string&)> end_now) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!over_) end_now_ = std::move(end_now);
    };
    hooks.on_end = [this] { over(); };
  }

 private:
  void over() {
    std::lock_guard<std::mutex> lock(mu_);  // waits for an end_now under way (which ends the process)
    over_ = true;
    end_now_ = nullptr;
  }
  // A byte from the pipe: 1 a signal, 0 quit; none within timeout_ms: -1.
  static int next_byte(int timeout_ms) {
    pollfd p{g_signal_pipe[0], POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return -1;
    char c = 0;
    return ::read(g_signal_pipe[0], &c, 1) == 1 ? c : -1;
  }
  void loop() {
    for (;;) {
      const int b = next_byte(-1);
      if (b == 0) return;
      if (b == 1) break;
    }
    const int sig = g_signal.load();
    const std::string name = sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "signal " + std::to_string(sig);
    std::cerr << "nodebench: " << name << ": stopping the run\n";
    const auto t0 = std::chrono::steady_clock::now();
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (over_) return;  // the run reached the end of its case and finishes by itself
        if (end_now_ && std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(kInterruptGraceMs)) {
          if (!end_now_("interrupted by " + name)) return;
          std::cout.flush();
          std::cerr << "nodebench: interrupted by " << name << " during a case, which is not recorded; the cases "
                    << "measured so far are in " << path_ << "\n";
          std::cerr.flush();
          std::fflush(nullptr);
          if (!lock_path_.empty()) ::unlink(lock_path_.c_str());
          std::_Exit(kExitCaseFailed);
        }
      }
      if (next_byte(20) == 0) return;
    }
  }
  std::string path_, lock_path_;
  std::mutex mu_;
  bool over_ = false;
  std::function<bool(const std::string&)> end_now_;
  std::thread thread_;
};

// An exclusive lock on a result file's path for the run's life: the file `.NAME.lock` beside it,
// held with flock and holding the holder's pid, so that a second run given the same --out-file is
// refused (exit 2, naming the pid) instead of both writing it and one result being lost. The lock
// goes with the process (a killed run leaves a lock file that no one holds: the next run takes it).
class OutputLock {
 public:
  OutputLock() = default;
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;
  ~OutputLock() {
    if (fd_ < 0) return;
    ::unlink(lock_path_.c_str());
    ::close(fd_);
  }
  // Empty when taken, else why not.
  std::string take(const std::string& path) {
    const fs::path p(path);
    lock_path_ = (p.parent_path() / ("." + p.filename().string() + ".lock")).string();
    std::error_code ec;
    if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
    for (int attempt = 0; attempt < 3; ++attempt) {
      const int fd = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
      if (fd < 0) return "cannot create the lock file '" + lock_path_ + "' (" + std::strerror(errno) + ")";
      if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        const int err = errno;
        char buf[32] = {};
        const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
        ::close(fd);
        if (err != EWOULDBLOCK) return "cannot lock '" + lock_path_ + "' (" + std::strerror(err) + ")";
        std::string pid = n > 0 ? std::string(buf, size_t(n)) : "unknown";
        while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
        return "'" + path + "' is the result file of another run under way (pid " + pid + ", lock file " + lock_path_ +
               "): give another --out-file, or wait for that run to end";
      }
      // The previous holder may have removed the lock file between our open and our flock.
      struct stat held {}, now {};
      if (::fstat(fd, &held) == 0 && ::stat(lock_path_.c_str(), &now) == 0 && held.st_ino == now.st_ino &&
          held.st_dev == now.st_dev) {
        const std::string pid = std::to_string(::getpid()) + "\n";
        if (::ftruncate(fd, 0) == 0) (void)!::pwrite(fd, pid.data(), pid.size(), 0);
        fd_ = fd;
        return "";  // held
      }
      ::close(fd);
    }
    return "cannot lock '" + lock_path_ + "' (it keeps being replaced)";
  }
  // The lock file while held, else empty.
  std::string held() const { return fd_ >= 0 ? lock_path_ : std::string(); }

 private:
  int fd_ = -1;
  std::string lock_path_;
};

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

}  // namespace

int cmd_list(const ListCommand& lc) {
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

// argv without --runs N / --runs=N and without an --out-file (each run names its own file).
std::vector<std::string> child_args(const std::vector<std::string>& argv) {
  std::vector<std::string> out;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--runs" || a == "--out-file" || a == "--gbench-out") {
      ++i;
      continue;
    }
    if (a.rfind("--runs=", 0) == 0 || a.rfind("--out-file=", 0) == 0 || a.rfind("--gbench-out=", 0) == 0) continue;
    out.push_back(a);
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

// What a run writes (rank 0): the result file first, then the console and --gbench-out.
struct Outputs {
  std::optional<JsonResultFile> file;
  std::optional<ConsoleProgress> progress;
  std::optional<GbenchJson> gbench;
  std::optional<ConsoleSummary> summary;
  std::vector<Reporter*> list;
  void attach(const RunOptions& o, const std::string& start) {
    if (file) list.push_back(&*file);
    progress.emplace(std::cout, start, o.quiet, isatty(STDOUT_FILENO) != 0);
    list.push_back(&*progress);
    if (!o.gbench_out.empty()) list.push_back(&gbench.emplace(o.gbench_out));
    list.push_back(&summary.emplace(std::cout));
  }
};

int finish_run(const RunOptions& o, const RunOutcome& outcome, const RunDocument& doc, const std::string& path) {
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
  if (!o.gbench_out.empty() && outcome.output_errors.empty()) std::cout << "Google Benchmark JSON: " << o.gbench_out << "\n";
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

}  // namespace

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
  const Plan plan = make_plan(o, session, std::move(cases), gpus);

  const std::string run_id = cluster::from_root(make_run_id());
  std::string path;
  if (const std::string err = result_path(o, session, run_id, path); !cluster::all_ok(err.empty())) {
    std::cerr << "nodebench: " << (err.empty() ? "rank 0 cannot write the result file" : err) << "\n";
    return kExitUsage;
  }
  json header = run_header(argv, session, o, plan.base.max_time_s, run_id);
  cluster::gather_environment(header["environment"], plan.gpus.empty() ? -1 : plan.gpus.front());
  RunDocument doc(header);
  Outputs outs;
  try {
    if (cluster::root()) outs.file.emplace(path, doc);
  } catch (const Error& e) {
    std::cerr << "nodebench: " << e.what() << "\n";
    return kExitUsage;
  }
  install_signal_handlers();
  if (cluster::root()) outs.attach(o, start_line(o, plan, path));
  RunHooks hooks;
  hooks.stop_requested = [] { return g_interrupted.load(); };
  std::optional<SignalWatcher> watcher;
  if (cluster::root() && !cluster::active()) watcher.emplace(path, lock.held()).add_to(hooks);  // under MPI: at a case's end
  const RunOutcome outcome = run_plan(plan, session, doc, outs.list, hooks);
  watcher.reset();
  return finish_run(o, outcome, doc, path);
}


}  // namespace nb
