#include "app/cli.hpp"
#include "bench/settings.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <regex>
#include <set>
#include <sstream>

#include <CLI/CLI.hpp>

#include "bench/algo_choice.hpp"
#include "base/error.hpp"

#include "build_info.hpp"

namespace nb {

namespace {

const char* kFooter =
    "Exit codes: 0 every case ok or skipped; 1 a case failed or gave a wrong result (or the run\n"
    "was interrupted), or for doctor and validate a check failed; 2 bad usage; 3 no usable GPU (for\n"
    "monitor: NVML cannot be loaded).\n"
    "Results: one JSON file per run (schema: docs/SCHEMA.md), written atomically as the run goes.\n"
    "Environment (read once at start, recorded in the result as 'settings'; a bad value exits 2):\n";
const char* kFooterEnd = "See docs/MULTIGPU.md for the NCCL settings.";

void add_algo_cache(CLI::App* sub, RunOptions& o) {
  sub->add_option("--algo-cache", o.algo_cache_file,
                  "Algorithm cache FILE (cuDNN and cuBLASLt choices): read at start, its choices used instead of a "
                  "search, new choices added and the file updated at the end; recorded in the result (algo_cache). "
                  "A missing FILE starts empty")
      ->type_name("FILE");
  sub->add_flag("--algo-search", o.algo_search,
                "Ignore the cached choices: search again, then update the --algo-cache file");
}

void add_selection(CLI::App* sub, RunOptions& o, std::string& suite) {
  sub->add_option("--suite", suite, "Which sweep: quick (a minute) or full (every size and precision)")
      ->check(CLI::IsMember({"quick", "full"}))
      ->capture_default_str();
  sub->add_option("--family", o.families, "Only these families (repeat or comma-separate), e.g. gemm")
      ->delimiter(',');
  sub->add_option("--filter", o.filter, "Only cases whose id (family/case) matches this regular expression");
}

}  // namespace

std::optional<double> env_positive(const char* name, bool integer) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  char* end = nullptr;
  const double x = std::strtod(v, &end);
  if (end == v || *end != '\0' || !(x > 0) || !std::isfinite(x) || (integer && x != std::floor(x)))
    throw Error(std::string(name) + "='" + v + "': must be a positive " + (integer ? "whole number" : "number"));
  return x;
}

void check_environment_settings() {
  std::vector<std::string> unknown;
  set_current_settings(Settings::from_environment(&unknown));
  for (const auto& n : unknown) std::cerr << "nodebench: warning: " << n << " is not a nodebench setting (ignored)\n";
}

ParseOutcome parse_cli(const std::vector<std::string>& args) {
  ParseOutcome res;
  Command cmd;
  cmd.argv = args;
  RunOptions& o = cmd.options;
  std::string suite = "quick";
  std::string l2;
  double max_time = -1;

  CLI::App app{
      "nodebench: benchmarks and checks for GPU nodes: cuBLAS GEMM in every precision, device memory,\n"
      "host link, latencies, peak arithmetic, cuDNN convolution with a batch-size sweep, a ResNet-50\n"
      "training step on cuDNN and cuBLAS, peer-to-peer and NCCL collectives; timing on CUDA events,\n"
      "statistics per case, versioned JSON results; node checks, GPU monitoring and data-parallel advice.",
      "nodebench"};
  app.set_version_flag("--version", std::string("nodebench ") + NODEBENCH_VERSION + " (" + NODEBENCH_GIT_COMMIT + ")");
  app.require_subcommand(1);
  app.footer(std::string(kFooter) + settings_help() + kFooterEnd);

  CLI::App* list = app.add_subcommand("list", "List families and cases, and whether each can run on this node (and why not)");
  add_selection(list, o, suite);
  list->add_flag("--json", o.json, "Print JSON instead of a table");

  CLI::App* run = app.add_subcommand("run", "Run benchmarks: progress per case, a summary table, and a JSON result file");
  add_selection(run, o, suite);
  run->add_option("--gpus", o.gpus, "Devices to run on: 'all' or a list like 0,2 (CUDA indices)")->capture_default_str();
  run->add_option("--out", o.out_dir, "Folder for the result file")->capture_default_str();
  run->add_option("--out-file", o.out_file, "Exact result file path (overrides --out's generated name)");
  run->add_option("--repetitions", o.repetitions,
                  "Take exactly N timed samples per case (turns off the adaptive stop)")
      ->check(CLI::Range(size_t(1), size_t(1000000)));
  run->add_option("--max-time", max_time,
                  "Cap in seconds on sampling one case (default: 0.4 quick, 1.0 full)")
      ->check(CLI::Range(0.001, 3600.0));
  run->add_option("--target-cv", o.target_cv,
                  "Stop sampling a case once its coefficient of variation is at most this")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  run->add_option("--min-samples", o.min_samples, "Fewest samples before the adaptive stop may end a case")
      ->check(CLI::Range(size_t(1), size_t(1000000)))
      ->capture_default_str();
  run->add_option("--l2", l2, "hot: L2 keeps data between samples; cold: flush L2 before each sample "
                              "(default: each family's own; GEMM hot)")
      ->check(CLI::IsMember({"hot", "cold"}));
  run->add_option("--profiles", o.profiles_file, "Device profile file (expected peaks) instead of the built-in one")
      ->check(CLI::ExistingFile);
  run->add_flag("--quiet", o.quiet, "No progress lines, only the summary");
  run->add_option("--memory-fraction", o.memory_fraction,
                  "Batch-size recommendation: the largest fraction of device memory a batch may use")
      ->check(CLI::Range(0.05, 1.0))
      ->capture_default_str();
  run->add_option("--global-batch", o.global_batch,
                  "Training recommendation: the global batch to reach, with gradient accumulation where needed")
      ->check(CLI::Range(1, 1 << 24))
      ->capture_default_str();
  run->add_flag("--one-gpu-at-a-time", o.one_gpu_at_a_time,
                "Run every per-GPU case GPU after GPU (default: cases that share nothing run on every GPU at once; "
                "host-link and latency cases always run one GPU at a time)");
  run->add_option("--runs", o.runs,
                  "Repeat the whole run N times, each in a fresh process, and record each case's run-to-run spread "
                  "(run_to_run) in one combined file beside the N run files")
      ->check(CLI::Range(size_t(1), size_t(1000)))
      ->capture_default_str();
  run->add_option("--gbench-out", o.gbench_out,
                  "Also write the samples as a Google Benchmark JSON file (for its tools/compare.py and dashboards)");
  add_algo_cache(run, o);
  std::string monitor_text;
  CLI::Option* monitor_opt =
      run->add_option("--monitor", monitor_text,
                      "Sample the run's GPUs (utilisation, SM clock, power, memory) every S seconds (default 1) into "
                      "the result's timeline, with each case's start and end marked; needs NVML")
          ->expected(0, 1)
          ->type_name("[=S]");

  CLI::App* env = app.add_subcommand("env", "Show the environment: host, driver, libraries, every GPU");
  env->add_flag("--json", o.json, "Print the environment as JSON (the result file's 'environment')");

  ValidateOptions& v = cmd.validate;
  CLI::App* doctor = app.add_subcommand(
      "doctor", "Check the node: driver, libraries, GPU visibility, PCIe links, ECC, clocks, peers; each problem with its fix");
  doctor->add_flag("--json", o.json, "Print the checks as JSON");
  doctor->add_flag("--no-load", v.no_load, "Read PCIe links without loading the GPUs (links train down at idle)");
  doctor->add_option("--from", v.doctor_from,
                     "Judge a node captured elsewhere instead of this one, no GPU needed: FILE is an `env --json` "
                     "capture, a result file or a `doctor --json` report")
      ->type_name("FILE");
  CLI::Option* archs = doctor->add_option(
      "--archs", v.doctor_archs,
      "With --from: the CUDA architectures of the binary the node runs (CMake notation, e.g. 61-real), "
      "where the capture does not record them");
  archs->type_name("LIST");

  CLI::App* validate = app.add_subcommand(
      "validate", "Judge the node: doctor, then benchmarks by level against the device profile's thresholds");
  validate->add_option("--profile", v.profile,
                       "Thresholds: auto (by GPU model), a model name of the thresholds file, or a thresholds FILE")
      ->capture_default_str();
  validate->add_option("--level", v.level,
                       "1 checks only (seconds); 2 plus quick bandwidth and GEMM (about a minute); 3 every family, full sweeps")
      ->check(CLI::Range(1, 3))
      ->capture_default_str();
  validate->add_option("--out", o.out_dir, "Folder for the result file")->capture_default_str();
  validate->add_option("--junit", v.junit_file, "Write the verdicts as JUnit XML to FILE");
  validate->add_option("--prometheus", v.prometheus_file, "Write the verdicts as a node_exporter textfile (.prom) to FILE");
  validate->add_option("--gpus", o.gpus, "Devices to benchmark: 'all' or a list like 0,2 (CUDA indices)")->capture_default_str();
  validate->add_flag("--quiet", o.quiet, "No progress lines");
  add_algo_cache(validate, o);

  MonitorOptions& mo = cmd.monitor;
  CLI::App* monitor = app.add_subcommand(
      "monitor", "Watch the GPUs through NVML: utilisation, memory, temperature, power, clocks, throttle reasons, "
                 "PCIe and NVLink throughput, ECC; a live table, CSV, JSON lines or a Prometheus textfile");
  monitor->add_option("--interval", mo.interval_s, "Seconds between samples")->capture_default_str();
  monitor->add_option("--duration", mo.duration_s, "Stop after S seconds (default: until Ctrl-C)");
  monitor->add_option("--gpus", mo.gpus, "GPUs to watch: 'all' or a list like 0,2 (NVML indices, as nvidia-smi numbers them)")
      ->capture_default_str();
  monitor->add_option("--format", mo.format, "table (redrawn on a terminal), csv, jsonl, or prometheus (a node_exporter textfile)")
      ->check(CLI::IsMember({"table", "csv", "jsonl", "prometheus"}))
      ->capture_default_str();
  monitor->add_option("--out", mo.out_file,
                      "Write to FILE instead of stdout; with --format prometheus, FILE is replaced atomically after each "
                      "sample (required)")
      ->type_name("FILE");

  AdviseOptions& a = cmd.advise;
  CLI::App* advise = app.add_subcommand(
      "advise",
      "Predict data-parallel training from result files: step time, images/s, efficiency and the bottleneck per "
      "GPU count, batch and accumulation, and the strategy to use (docs/ADVISE.md)");
  advise->add_option("files", a.files, "Result files (nccl all-reduce, hostlink, train or conv, train_dp records)")
      ->type_name("RESULT.json");
  advise->add_option("--gpus", a.gpus, "GPU counts (per node) to predict, e.g. 1,2,4,8 (default: the measured counts)")
      ->type_name("N,...");
  advise->add_option("--nodes", a.nodes, "Nodes, each with --gpus GPUs (above 1 needs --inter-node-gbps)")
      ->check(CLI::Range(1, 1 << 16))
      ->capture_default_str();
  advise->add_option("--inter-node-gbps", a.inter_node_gbps,
                     "Network bandwidth between nodes in GB/s per node (bytes: 100 Gb/s Ethernet is 12.5)")
      ->check(CLI::Range(1e-3, 1e6));
  advise->add_option("--step-ms", a.step_ms, "A framework's own one-GPU step time in ms (with --batch): predict its "
                                             "multi-GPU throughput")
      ->check(CLI::Range(1e-3, 1e7));
  advise->add_option("--params", a.params, "Parameter count of that model (default: ResNet-50, 25557032)")
      ->check(CLI::Range(1.0, 1e13));
  advise->add_option("--batch", a.batch, "Per-GPU batch of --step-ms, and of the --profile what-if (default 64)")
      ->check(CLI::Range(1, 1 << 20));
  advise->add_option("--profile", a.profile,
                     "What-if for hardware not at hand: a device profile name (e.g. \"Tesla P40\"), with --gpus and "
                     "--link; labelled 'predicted from profile, not measured'");
  advise->add_option("--link", a.link, "What-if link between the GPUs")
      ->check(CLI::IsMember({"pcie-gen3", "pcie-gen4", "nvlink"}));
  advise->add_option("--global-batch", a.global_batch, "Global batch to reach: gradient accumulation steps per count")
      ->check(CLI::Range(1, 1 << 24));
  advise->add_option("--bucket-mib", a.bucket_mib, "Gradient bucket size in MiB (PyTorch DDP's default is 25)")
      ->check(CLI::Range(0.001, 1e6))
      ->capture_default_str();
  advise->add_option("--grad-dtype", a.grad_dtype, "Gradient type all-reduced: fp32 (4 bytes, as AMP's FP32 master "
                                                   "weights) or fp16 (2 bytes)")
      ->check(CLI::IsMember({"fp32", "fp16"}))
      ->capture_default_str();
  advise->add_option("--image-dtype", a.image_dtype, "Input image type copied from the host: uint8 (150528 B) or fp32")
      ->check(CLI::IsMember({"uint8", "fp32"}))
      ->capture_default_str();
  advise->add_option("--json", a.json_file, "Also write the advice as JSON to FILE")->type_name("FILE");

  // An unknown command is named (CLI11 alone says only that a subcommand is required).
  auto is_command = [&](const std::string& name) {
    for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
      if (sub->get_name() == name) return true;
    return false;
  };
  if (args.size() >= 2 && !args[1].empty() && args[1][0] != '-' && !is_command(args[1])) {
    res.exit_code = kExitUsage;
    std::string names;
    for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
      names += (names.empty() ? "" : ", ") + sub->get_name();
    res.err = "nodebench: unknown command '" + args[1] + "' (expected one of: " + names + ")\n\n" + app.help();
    return res;
  }

  std::vector<std::string> rev(args.begin() + (args.empty() ? 0 : 1), args.end());
  std::reverse(rev.begin(), rev.end());
  std::ostringstream out, err;
  try {
    app.parse(rev);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e, out, err);
    res.out = out.str();
    res.err = err.str();
    if (rc == 0) {
      res.exit_code = kExitOk;  // --help, --version
    } else {
      res.exit_code = kExitUsage;
      // app.exit prints the message; add the usage of the subcommand that failed.
      const CLI::App* failed = app.get_subcommands().empty() ? &app : app.get_subcommands().front();
      res.err += "\n" + failed->help();
    }
    return res;
  }

  // A usage error found after parsing: the message, then the usage of the command (as README says).
  auto usage_error = [&](const std::string& message) {
    const CLI::App* sub = app.get_subcommands().empty() ? &app : app.get_subcommands().front();
    res.exit_code = kExitUsage;
    res.err = "nodebench: " + message + "\n\n" + sub->help();
    return res;
  };

  if (list->parsed()) cmd.kind = CommandKind::list;
  else if (run->parsed()) cmd.kind = CommandKind::run;
  else if (doctor->parsed()) cmd.kind = CommandKind::doctor;
  else if (validate->parsed()) cmd.kind = CommandKind::validate;
  else if (monitor->parsed()) cmd.kind = CommandKind::monitor;
  else if (advise->parsed()) cmd.kind = CommandKind::advise;
  else cmd.kind = CommandKind::env;

  if (cmd.kind == CommandKind::doctor && !v.doctor_archs.empty() && v.doctor_from.empty()) {
    res.exit_code = kExitUsage;
    res.err = "nodebench: doctor --archs: needs --from FILE (on the node, doctor reads this binary's own)\n" + doctor->help();
    return res;
  }
  o.suite = *parse_suite(suite);
  if (max_time > 0) o.max_time_s = max_time;
  if (l2 == "hot") o.l2 = L2Mode::hot;
  if (l2 == "cold") o.l2 = L2Mode::cold;
  if (!o.filter.empty()) {
    try {
      std::regex re(o.filter);
    } catch (const std::regex_error& e) {
      return usage_error("--filter: '" + o.filter + "' is not a valid regular expression (" + e.what() + ")");
    }
  }
  auto usage = [&](const std::string& msg) {
    res.exit_code = kExitUsage;
    res.err = "nodebench: " + msg + "\n";
    return res;
  };
  if (cmd.kind == CommandKind::run && monitor_opt->count() > 0) {
    if (monitor_text.empty()) {
      o.monitor_interval_s = 1.0;
    } else {
      char* end = nullptr;
      const double x = std::strtod(monitor_text.c_str(), &end);
      if (end == monitor_text.c_str() || *end != '\0' || !std::isfinite(x) || x < 0.05 || x > 3600)
        return usage("--monitor: '" + monitor_text + "' is not an interval in seconds (0.05 to 3600)");
      o.monitor_interval_s = x;
    }
  }
  if (cmd.kind == CommandKind::monitor) {
    if (!std::isfinite(mo.interval_s) || mo.interval_s < 0.05 || mo.interval_s > 3600)
      return usage("--interval: must be 0.05 to 3600 seconds");
    if (!std::isfinite(mo.duration_s) || mo.duration_s < 0)
      return usage("--duration: must be a number of seconds >= 0 (0: until interrupted)");
    if (mo.format == "prometheus" && mo.out_file.empty())
      return usage("--out: --format prometheus writes a textfile; give its path, e.g. "
                   "--out /var/lib/node_exporter/textfile_collector/nodebench.prom");
    if (mo.gpus != "all") {
      try {
        (void)parse_gpu_list(mo.gpus, 1 << 20);
      } catch (const Error& e) {
        return usage(e.what());
      }
    }
  }
  if (cmd.kind == CommandKind::run || cmd.kind == CommandKind::validate || cmd.kind == CommandKind::monitor) {
    try {
      check_environment_settings();
    } catch (const Error& e) {
      res.exit_code = kExitUsage;  // an environment variable, not an option: no usage
      res.err = std::string("nodebench: ") + e.what() + "\n";
      return res;
    }
    if (!o.algo_cache_file.empty()) {
      try {
        AlgoCache probe;  // read once here so that a malformed file stops the command before it starts
        probe.load(o.algo_cache_file);
      } catch (const Error& e) {
        return usage_error(std::string("--algo-cache: ") + e.what());
      }
    }
    if (o.gpus != "all") {
      try {
        (void)parse_gpu_list(o.gpus, 1 << 20);  // syntax only; indices are checked against the node
      } catch (const Error& e) {
        return usage_error(e.what());
      }
    }
  }
  res.command = std::move(cmd);
  return res;
}

std::string usage_of(const std::string& subcommand) {
  ParseOutcome h = parse_cli({"nodebench", subcommand, "--help"});
  return h.out;
}

}  // namespace nb
