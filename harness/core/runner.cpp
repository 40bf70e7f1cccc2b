#include "runner.hpp"
#include "text.hpp"

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <ctime>
#include <regex>
#include <set>
#include <sstream>

#include <benchmark/benchmark.h>

#include "analysis.hpp"
#include "case_records.hpp"
#include "cluster.hpp"
#include "result.hpp"

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

extern "C" void on_signal(int sig) {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);  // async-signal-safe
  int64_t first = g_first_signal_ns.load();
  switch (interrupt_action(int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec, first)) {
    case InterruptAction::stop_after_case:
      g_first_signal_ns.store(first);
      g_interrupted.store(true);
      break;
    case InterruptAction::ignore: break;
    case InterruptAction::terminate:
      signal(sig, SIG_DFL);
      raise(sig);
      break;
  }
}

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // not SA_RESETHAND: see interrupt_action
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

// Google Benchmark drives the cases; nodebench prints its own progress and summary.
class SilentReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

ProfileDb load_profiles(const RunOptions& o) {
  return o.profiles_file.empty() ? ProfileDb::builtin() : ProfileDb::from_file(o.profiles_file);
}

std::string human_time(double s) {
  if (s < 1e-3) return fmt(s * 1e6, 2) + " us";
  if (s < 1) return fmt(s * 1e3, 3) + " ms";
  return fmt(s, 3) + " s";
}

// "742.1 tflops (75.0% of peak)" or the reason.
std::string headline(const json& r) {
  const std::string status = r["status"];
  if (status != "ok" && status != "wrong") return r["reason"].is_string() ? r["reason"].get<std::string>() : "";
  std::string s;
  for (const char* m : {"tflops", "tops", "gbps", "busbw_gbps", "algbw_gbps", "latency_us"}) {
    // busbw is 0 on one rank by definition: algbw says more there.
    if (std::string(m) == "busbw_gbps" && r["metrics"].value(m, 0.0) <= 0) continue;
    if (r["metrics"].contains(m) && r["metrics"][m].is_number()) {
      s = fmt(r["metrics"][m].get<double>(), 2) + " " + m;
      break;
    }
  }
  if (r["percent_of_peak"].is_object()) s += " (" + fmt(r["percent_of_peak"]["percent"].get<double>(), 1) + "% of peak)";
  if (status == "wrong") s += "  WRONG: " + r["reason"].get<std::string>();
  return s;
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

json options_json(const RunOptions& o, double max_time) {
  return {{"suite", to_string(o.suite)},
          {"families", o.families},
          {"filter", o.filter},
          {"gpus", o.gpus},
          {"repetitions", o.repetitions},
          {"max_time_s", max_time},
          {"target_cv", o.target_cv},
          {"min_samples", o.min_samples},
          {"l2", o.l2 ? (*o.l2 == L2Mode::cold ? "cold" : "hot") : "family default"},
          {"profiles_file", o.profiles_file.empty() ? json(nullptr) : json(o.profiles_file)}};
}

void print_summary(const json& doc, std::ostream& os) {
  os << "\n" << std::left << std::setw(58) << "case" << std::setw(6) << "gpu" << std::setw(9) << "status"
     << std::setw(13) << "median" << std::setw(8) << "cv" << "result\n";
  for (const auto& r : doc["records"]) {
    std::string gpus;
    for (const auto& g : r["gpus"]) gpus += (gpus.empty() ? "" : ",") + std::to_string(g.get<int>());
    std::string med = "-", cv = "-";
    if (r["stats"].is_object()) {
      med = human_time(r["stats"]["median"].get<double>());
      cv = fmt(100.0 * r["stats"]["cv"].get<double>(), 2) + "%";
    }
    std::string flags;
    for (const auto& f : r["flags"])
      if (f != "clock_unknown") flags += " [" + f.get<std::string>() + "]";
    os << std::left << std::setw(58) << r["id"].get<std::string>() << std::setw(6) << gpus << std::setw(9)
       << r["status"].get<std::string>() << std::setw(13) << med << std::setw(8) << cv << headline(r) << flags
       << "\n";
  }
  const json& s = doc["summary"];
  os << "\n" << s["total"] << " cases: " << s["ok"] << " ok, " << s["skipped"] << " skipped, " << s["failed"]
     << " failed, " << s["wrong"] << " wrong; " << fmt(s["wall_time_s"].get<double>(), 1) << " s\n";
}

}  // namespace

std::vector<Case> select_cases(Suite suite, const std::vector<std::string>& families, const std::string& filter) {
  std::set<std::string> known;
  for (const auto& f : family_registry()) known.insert(f->name());
  for (const auto& f : families) {
    if (!known.count(f)) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      throw Error("unknown family '" + f + "' (families: " + list + ")");
    }
  }
  std::optional<std::regex> re;
  if (!filter.empty()) re.emplace(filter);
  std::vector<Case> out;
  for (const auto& f : family_registry()) {
    if (!families.empty() && std::find(families.begin(), families.end(), f->name()) == families.end()) continue;
    for (auto& c : f->cases(suite)) {
      if (re && !std::regex_search(c.id(), *re)) continue;
      out.push_back(std::move(c));
    }
  }
  return out;
}

int cmd_list(const Command& cmd) {
  const RunOptions& o = cmd.options;
  std::vector<Case> cases;
  try {
    cases = select_cases(o.suite, o.families, o.filter);
  } catch (const Error& e) {
    std::cerr << "nodebench: " << e.what() << "\n";
    return kExitUsage;
  }
  Nvml nvml;
  const Environment env = capture_environment(nvml, ProfileDb::builtin());
  json out = json::array();
  if (!o.json) {
    std::cout << "Families:\n";
    for (const auto& f : family_registry()) std::cout << "  " << std::left << std::setw(12) << f->name() << f->description() << "\n";
    if (env.gpus.empty()) std::cout << "No GPU visible (" << env.cuda_error << "): whether a case can run is unknown.\n";
    std::cout << "\nCases (" << to_string(o.suite) << " suite): " << cases.size() << "\n";
  }
  for (const auto& c : cases) {
    json avail = json::array();
    std::string line;
    for (const auto& g : env.gpus) {
      const Availability a = c.available ? c.available(g) : Availability::yes();
      avail.push_back({{"gpu", g.index}, {"can_run", a.ok}, {"reason", a.ok ? json(nullptr) : json(a.reason)}});
      line += "  gpu" + std::to_string(g.index) + ": " + (a.ok ? std::string("yes") : "no, " + a.reason);
    }
    if (env.gpus.empty()) line = "  unknown (no GPU)";
    out.push_back({{"id", c.id()}, {"family", c.family}, {"case", c.name}, {"params", c.params}, {"availability", avail}});
    if (!o.json) std::cout << "  " << std::left << std::setw(48) << c.id() << line << "\n";
  }
  if (o.json) std::cout << out.dump(2) << "\n";
  return kExitOk;
}

int cmd_env(const Command& cmd) {
  Nvml nvml;
  const Environment env = capture_environment(nvml, ProfileDb::builtin());
  if (cmd.options.json) {
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

int cmd_run(const Command& cmd) {
  const RunOptions& o = cmd.options;
  ProfileDb profiles;
  try {
    profiles = load_profiles(o);
  } catch (const Error& e) {
    std::cerr << "nodebench: " << e.what() << "\n";
    return kExitUsage;
  }
  std::vector<Case> cases;
  try {
    cases = select_cases(o.suite, o.families, o.filter);
  } catch (const Error& e) {
    std::cerr << "nodebench: " << e.what() << "\n";
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
  Nvml nvml;
  Environment env = capture_environment(nvml, profiles);
  if (!cluster::all_ok(!env.gpus.empty())) {
    std::cerr << (env.gpus.empty() ? no_gpu_diagnosis(env.cuda_error) : "nodebench: another MPI rank found no GPU")
              << "\n";
    return kExitNoGpu;
  }
  std::vector<int> gpu_ids;
  std::string gpu_error;
  try {
    gpu_ids = parse_gpu_list(o.gpus, int(env.gpus.size()));
  } catch (const Error& e) {
    gpu_error = e.what();
  }
  if (!cluster::all_ok(gpu_error.empty())) {
    std::cerr << "nodebench: " << (gpu_error.empty() ? "another MPI rank rejected --gpus" : gpu_error) << "\n";
    return kExitUsage;
  }
  gpu_ids = cluster::local_gpus(gpu_ids);

  const double max_time = o.max_time_s.value_or(default_max_time(o.suite));
  const std::string run_id = cluster::from_root(make_run_id());
  std::string path = cluster::root() ? o.out_file : "";
  std::string out_error;
  try {
    if (!cluster::root()) {
      // Other ranks keep their records in memory and send them to rank 0.
    } else if (path.empty()) {
      fs::create_directories(o.out_dir);
      path = (fs::path(o.out_dir) / result_file_name(env.json, run_id)).string();
    } else if (fs::path(path).has_parent_path()) {
      fs::create_directories(fs::path(path).parent_path());
    }
  } catch (const fs::filesystem_error& e) {
    out_error = std::string("cannot create the output folder: ") + e.what();
  }
  if (!cluster::all_ok(out_error.empty())) {
    std::cerr << "nodebench: " << (out_error.empty() ? "rank 0 cannot write the result file" : out_error) << "\n";
    return kExitUsage;
  }

  json header = {{"run_id", run_id},
                 {"started_at", iso_utc(std::chrono::system_clock::now())},
                 {"nodebench",
                  {{"version", NODEBENCH_VERSION},
                   {"git_commit", NODEBENCH_GIT_COMMIT},
                   {"command_line", cmd.argv},
                   {"cuda_architectures", NODEBENCH_CUDA_ARCHITECTURES}}},
                 {"options", options_json(o, max_time)},
                 {"environment", env.json}};
  cluster::gather_environment(header["environment"], gpu_ids.front());
  std::optional<ResultFile> file;
  try {
    file.emplace(path, header);
  } catch (const Error& e) {
    std::cerr << "nodebench: " << e.what() << "\n";
    return kExitUsage;
  }
  install_signal_handlers();
  if (cluster::root())
    std::cout << "nodebench " << NODEBENCH_VERSION << ": " << cases.size() << " case(s) x " << gpu_ids.size()
              << " GPU(s)" << (cluster::active() ? " x " + std::to_string(cluster::size()) + " MPI rank(s)" : "")
              << ", suite " << to_string(o.suite) << "; results: " << path << std::endl;

  MeasureConfig base;
  base.target_cv = o.target_cv;
  base.min_samples = o.min_samples;
  base.max_time_s = max_time;
  base.fixed_samples = o.repetitions;

  // Per-GPU state, created lazily on first use of the GPU.
  struct GpuState {
    std::unique_ptr<Measurer> measurer;
    std::unique_ptr<Stream> stream;
    std::string broken;  // set after an error that leaves the CUDA context unusable
  };
  std::map<int, GpuState> states;
  size_t total = 0;
  for (const Case& c : cases) total += c.multi_gpu ? 1 : gpu_ids.size();
  size_t done = 0;
  std::string run_error;

  // Runs one case (on one GPU, or once over every GPU of this process), records it and returns
  // the median time of its last record (for Google Benchmark).
  auto execute = [&](const Case& c, const std::vector<int>& ids) -> double {
    const int gpu_id = ids.front();
    const GpuInfo& gpu = env.gpus[size_t(gpu_id)];
    std::vector<const GpuInfo*> all;
    for (int i : ids) all.push_back(&env.gpus[size_t(i)]);
    RecordInput in;
    in.c = &c;
    in.gpus = ids;
    in.gpu = &gpu;
    in.nvml_available = nvml.available() && gpu.nvml_index.has_value();
    in.started_at = iso_utc(std::chrono::system_clock::now());
    const auto t0 = std::chrono::steady_clock::now();
    std::optional<CaseContext> ctx;
    GpuState& st = states[gpu_id];
    // Under MPI a multi-GPU case is one operation over every rank: all run it or none does.
    bool peers_ok = true;
    if (c.multi_gpu && cluster::active()) {
      bool mine = st.broken.empty() && int(ids.size()) >= c.min_gpus;
      try {
        mine = mine && (!c.available || c.available(gpu).ok);
      } catch (const std::exception&) {
        mine = false;
      }
      peers_ok = cluster::all_ok(mine) || !mine;
    }
    try {
      Availability a = c.available ? c.available(gpu) : Availability::yes();
      for (size_t k = 1; a.ok && k < all.size(); ++k)
        if (c.available) a = c.available(*all[k]);
      if (c.multi_gpu && int(ids.size()) < c.min_gpus) {
        in.status = "skipped";
        in.reason = "needs " + std::to_string(c.min_gpus) + " GPUs; " + std::to_string(ids.size()) +
                    (ids.size() == 1 ? " is" : " are") + " selected" +
                    (cluster::active() ? " in this process (under MPI each process drives one GPU)" : "");
      } else if (!a.ok) {
        in.status = "skipped";
        in.reason = a.reason;
      } else if (!peers_ok) {
        in.status = "skipped";
        in.reason = "another MPI rank cannot run this case";
      } else if (!st.broken.empty()) {
        in.status = "failed";
        in.reason = "not run: GPU " + std::to_string(gpu_id) + " is unusable after an earlier error (" + st.broken + ")";
      } else {
        DeviceGuard guard(gpu_id);
        if (!st.measurer) {
          st.measurer = std::make_unique<Measurer>(gpu_id, gpu.l2_bytes, &nvml, gpu.nvml_index);
          st.stream = std::make_unique<Stream>();
        }
        MeasureConfig cfg = base;
        cfg.l2 = o.l2.value_or(c.l2.value_or(L2Mode::hot));
        if (gpu.nvml_index) in.before = nvml.snapshot(*gpu.nvml_index);
        ctx.emplace(gpu, nvml, *st.measurer, st.stream->get(), cfg, all);
        try {
          c.run(*ctx);
          in.status = "ok";
        } catch (const SkipCase& s) {
          in.status = "skipped";
          in.reason = s.reason;
        } catch (const CudaError& e) {
          if (e.out_of_memory()) {
            in.status = "skipped";
            in.reason = std::string("out of memory: ") + e.what();
          } else {
            in.status = "failed";
            in.reason = e.what();
          }
        } catch (const std::exception& e) {
          in.status = "failed";
          in.reason = e.what();
        }
        if (in.status == "failed") {
          // A sticky error (illegal address, launch failure) poisons the context for good.
          const cudaError_t sync = cudaDeviceSynchronize();
          if (sync != cudaSuccess) st.broken = std::string(cudaGetErrorName(sync)) + " after " + c.id();
          (void)cudaGetLastError();
        }
        if (gpu.nvml_index) in.after = nvml.snapshot(*gpu.nvml_index);
        in.out = &ctx->output();
      }
    } catch (const std::exception& e) {
      in.status = "failed";
      in.reason = std::string("setup failed: ") + e.what();
    }
    in.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    // The case's record, and one per part it emitted (one per GPU pair, per GPU count, ...);
    // under MPI every rank's, at rank 0.
    CaseRecords made = make_case_records(in, env.gpus);
    std::vector<json> recs = cluster::gather_records(c.multi_gpu, std::move(made.records));
    if (cluster::root()) merge_analysis(*file, made.analysis);
    ++done;
    double median = 0;
    for (json& rec : recs) {
      if (!o.quiet) {
        std::string where;
        for (const auto& g : rec["gpus"]) where += (where.empty() ? "" : ",") + std::to_string(g.get<int>());
        where = (rec["gpus"].size() > 1 ? " gpus " : " gpu") + where;
        if (rec.contains("rank")) where = " rank" + std::to_string(rec["rank"].get<int>()) + where;
        std::cout << "[" << std::setw(int(std::to_string(total).size())) << done << "/" << total << "] "
                  << std::left << std::setw(52) << rec["id"].get<std::string>() << where << "  " << std::setw(8)
                  << rec["status"].get<std::string>() << headline(rec) << "  ("
                  << fmt(rec["duration_s"].get<double>(), 2) << " s)" << std::endl;
      }
      if (rec["stats"].is_object()) median = rec["stats"]["median"].get<double>();
      file->add(std::move(rec));
    }
    return median;
  };

  // Register every (case, GPU) pair with Google Benchmark; each benchmark runs once (one
  // iteration), inside which nodebench's own sampling loop takes the samples, and reports the
  // median as the iteration's manual time.
  try {
    int argc = 1;
    char arg0[] = "nodebench";
    char* argv[] = {arg0, nullptr};
    benchmark::Initialize(&argc, argv);
    std::vector<std::pair<const Case*, std::vector<int>>> plan;
    for (int gpu_id : gpu_ids)
      for (const Case& c : cases)
        if (!c.multi_gpu) plan.push_back({&c, {gpu_id}});
    for (const Case& c : cases)
      if (c.multi_gpu) plan.push_back({&c, gpu_ids});
    for (const auto& [cp, ids] : plan) {
      {
        const Case& c = *cp;
        std::string bm_name = c.id() + "/gpu";
        for (int i : ids) bm_name += std::to_string(i) + (i == ids.back() ? "" : ",");
        benchmark::RegisterBenchmark(bm_name.c_str(), [&, cp = cp, ids = ids](benchmark::State& state) {
          for (auto _ : state) {
            // Under MPI every rank stops at the same case.
            if (cluster::any(g_interrupted.load())) {
              g_interrupted.store(true);
              state.SetIterationTime(0);
              continue;
            }
            state.SetIterationTime(execute(*cp, ids));
          }
        })
            ->Iterations(1)
            ->UseManualTime();
      }
    }
    SilentReporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    benchmark::ClearRegisteredBenchmarks();
  } catch (const std::exception& e) {
    run_error = e.what();
  }

  std::vector<std::string> verdicts;
  try {
    bool relevant = false;
    for (const auto& r : file->doc()["records"])
      relevant = relevant || r["family"] == "gemm" || r["family"] == "peak" || r["family"] == "conv";
    if (relevant) {
      std::vector<GpuBrief> briefs;
      for (int i : gpu_ids) briefs.push_back({i, env.gpus[size_t(i)].name, env.gpus[size_t(i)].cc_major, env.gpus[size_t(i)].cc_minor});
      json a = fp16_vs_fp32(file->doc()["records"], briefs);
      verdicts = fp16_verdict_lines(a);
      file->set_analysis("fp16_vs_fp32", std::move(a));
    }
    bool conv_net = false;
    for (const auto& r : file->doc()["records"])
      conv_net = conv_net || (r["family"] == "conv" && r["params"].value("layer", "") == "resnet50_total");
    if (conv_net) {
      json b = batch_recommendation(file->doc()["records"], o.memory_fraction);
      for (auto& l : batch_recommendation_lines(b)) verdicts.push_back(l);
      file->set_analysis("batch_recommendation", std::move(b));
    }
  } catch (const std::exception& e) {
    verdicts.push_back(std::string("FP16-versus-FP32 analysis failed: ") + e.what());
  }

  const std::string status = !run_error.empty() ? "aborted" : g_interrupted.load() ? "interrupted" : "complete";
  try {
    file->finish(status, run_error);
  } catch (const Error& e) {
    std::cerr << "nodebench: could not write the result file: " << e.what() << "\n";
    return kExitCaseFailed;
  }
  if (!cluster::root()) {
    // Rank 0 reports the whole run; this rank's exit code says how its own part went.
    if (!run_error.empty()) std::cerr << "nodebench: rank " << cluster::rank() << ": run aborted: " << run_error << "\n";
    return status == "complete" ? kExitOk : kExitCaseFailed;
  }
  print_summary(file->doc(), std::cout);
  for (const auto& v : verdicts) std::cout << v << "\n";
  std::cout << "results: " << path << "\n";
  if (!run_error.empty()) std::cerr << "nodebench: run aborted: " << run_error << "\n";
  if (status == "interrupted") std::cerr << "nodebench: interrupted; the cases measured so far are in " << path << "\n";
  const json& s = file->doc()["summary"];
  if (status != "complete" || s["failed"].get<int>() > 0 || s["wrong"].get<int>() > 0) return kExitCaseFailed;
  return kExitOk;
}

}  // namespace nb
