#include "app/cli_options.hpp"

#include "bench/settings.hpp"
#include "run/formats.hpp"

namespace nb::cli {

namespace {

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
  // Split on commas after parsing (finish_selection): CLI11's own delimiter drops empty pieces and
  // then takes the next argument as the value (',,,' then --quiet made --quiet a family).
  sub->add_option("--family", o.families, "Only these families (repeat or comma-separate), e.g. gemm");
  sub->add_option("--filter", o.filter,
                  "Only cases whose id (family/case) matches this regular expression (ECMAScript syntax "
                  "without backreferences or lookaround, matched in linear time by the RE2 engine)")
      ->check(filter_pattern());
}

// The options of the output formats the command writes (run/formats.hpp): each its FILE.
void add_format_options(CLI::App* sub, FormatCommand command, RunOptions& o) {
  for (const OutputFormat* f : output_formats())
    if (f->for_command(command) && !f->option.empty()) sub->add_option(f->option, o.format_files[f->name], f->help);
}

// How each case is sampled.
void add_sampling(CLI::App* run, RunOptions& o, RawText& raw) {
  run->add_option("--repetitions", o.repetitions, "Take exactly N timed samples per case (turns off the adaptive stop)")
      ->check(count_in(1, 1000000));
  run->add_option("--max-time", raw.max_time, "Cap in seconds on sampling one case (default: 0.4 quick, 1.0 full)")
      ->check(number_in(0.001, 3600.0));
  run->add_option("--target-cv", o.target_cv, "Stop sampling a case once its coefficient of variation is at most this")
      ->check(number_in(0.0, 1.0))
      ->capture_default_str();
  run->add_option("--min-samples", o.min_samples, "Fewest samples before the adaptive stop may end a case")
      ->check(count_in(1, 1000000))
      ->capture_default_str();
  run->add_option("--l2", raw.l2, "hot: L2 keeps data between samples; cold: flush L2 before each sample "
                                  "(default: each family's own; GEMM hot)")
      ->check(CLI::IsMember({"hot", "cold"}));
  run->add_option("--budget", raw.budget,
                  "Plan the run to end within DURATION (e.g. 10m, 90s, 1h30m): before it starts, says which cases it "
                  "shortens or leaves out to fit, and records that in the result (plan)")
      ->type_name("DURATION")
      ->check(duration_text());
}

// What the run's analyses aim at, and how the GPUs are shared.
void add_analysis_and_mode(CLI::App* run, RunOptions& o) {
  run->add_option("--memory-fraction", o.memory_fraction,
                  "Batch-size recommendation: the largest fraction of device memory a batch may use")
      ->check(number_in(0.05, 1.0))
      ->capture_default_str();
  run->add_option("--global-batch", o.global_batch,
                  "Training recommendation: the global batch to reach, with gradient accumulation where needed")
      ->check(count_in(1, 1 << 24))
      ->capture_default_str();
  run->add_flag("--one-gpu-at-a-time", o.one_gpu_at_a_time,
                "Run every per-GPU case GPU after GPU (default: cases that share nothing run on every GPU at once; "
                "host-link and latency cases always run one GPU at a time)");
  run->add_option("--runs", o.runs,
                  "Repeat the whole run N times, each in a fresh process, and record each case's run-to-run spread "
                  "(run_to_run) in one combined file beside the N run files")
      ->check(count_in(1, 1000))
      ->capture_default_str();
}

}  // namespace

void add_list(CLI::App& app, ListCommand& c, RawText& raw) {
  CLI::App* list = app.add_subcommand("list", "List families and cases, and whether each can run on this node (and why not)");
  add_selection(list, c.selection, raw.suite);
  list->add_flag("--json", c.json, "Print JSON instead of a table");
  list->add_flag("--metrics", c.metrics,
                 "List the metrics each family declares (and the harness's own, on every record): JSON name, unit, "
                 "which way is better; --family keeps those families; no GPU needed");
}

void add_run(CLI::App& app, RunCommand& c, RawText& raw) {
  RunOptions& o = c.options;
  CLI::App* run = app.add_subcommand("run", "Run benchmarks: progress per case, a summary table, and a JSON result file");
  add_selection(run, o, raw.suite);
  run->add_option("--gpus", o.gpus, "Devices to run on: 'all' or a list like 0,2 (CUDA indices)")->capture_default_str();
  run->add_option("--out", o.out_dir, "Folder for the result file")->capture_default_str();
  run->add_option("--out-file", o.out_file,
                  "Exact result file path (overrides --out's generated name); the run's alone while it runs (a second "
                  "run given the same FILE is refused, exit 2)");
  add_sampling(run, o, raw);
  run->add_option("--profiles", o.profiles_file, "Device profile file (expected peaks) instead of the built-in one")
      ->check(CLI::ExistingFile);
  run->add_flag("--quiet", o.quiet, "No progress lines, only the summary");
  add_analysis_and_mode(run, o);
  add_format_options(run, kFormatRun, o);
  add_algo_cache(run, o);
  raw.monitor_opt = run->add_option("--monitor", raw.monitor,
                                    "Sample the run's GPUs (utilisation, SM clock, power, memory) every S seconds "
                                    "(default 1) into the result's timeline, with each case's start and end marked; "
                                    "needs NVML")
                        ->expected(0, 1)
                        ->type_name("[=S]")
                        ->check(seconds_in(0.05, 3600, "'VALUE' is not an interval in seconds (0.05 to 3600)"));
  // Settings a family also offers as an option of run (e.g. the input family's --images DIR).
  for (const SettingSpec& s : setting_registry()) {
    if (s.run_option.empty()) continue;
    std::string help = s.help, value = "VALUE";
    if (!help.empty() && help[0] == '=') {  // "=DIR what it does"
      const size_t sp = help.find(' ');
      value = help.substr(1, sp == std::string::npos ? std::string::npos : sp - 1);
      help = sp == std::string::npos ? "" : help.substr(sp + 1);
    }
    run->add_option(s.run_option, raw.setting_options[s.name], help + " (as " + s.name + ")")->type_name(value);
  }
}

void add_env(CLI::App& app, EnvCommand& c) {
  CLI::App* env = app.add_subcommand("env", "Show the environment: host, driver, libraries, every GPU");
  env->add_flag("--json", c.json, "Print the environment as JSON (the result file's 'environment')");
}

void add_fatbin(CLI::App& app, FatbinCommand& c) {
  CLI::App* fb = app.add_subcommand(
      "fatbin",
      "List the GPU code in CUDA libraries or objects: the SASS and PTX architectures of their fatbin headers "
      "(.nv_fatbin, __nv_relfatbin), read without cuobjdump or a GPU (docs/FRAMEWORKS.md)");
  fb->add_option("files", c.files, "ELF64 shared libraries, executables or objects, or bare fatbin files")
      ->type_name("FILE")
      ->required();
  fb->add_flag("--json", c.json,
               "One JSON object per file and line: {\"file\", \"sass\": [\"sm_61\", ...], \"ptx\": [\"compute_90\", ...], "
               "\"containers\", \"entries\"}, or {\"file\", \"error\"}");
}

void add_frameworks(CLI::App& app, FrameworksCommand& c) {
  FrameworksOptions& o = c.options;
  CLI::App* fw = app.add_subcommand(
      "frameworks",
      "Check the PyTorch, TensorFlow and JAX of your Python environments on this node: their builds, the code they and "
      "every CUDA library they load carry for each GPU, the GPUs they see against NVML's, and a matmul and a "
      "convolution with batch norm on each GPU (docs/FRAMEWORKS.md)");
  fw->add_option("--python", o.pythons,
                 "Probe this interpreter (repeatable) instead of the defaults: python3 on PATH, $VIRTUAL_ENV's and "
                 "$CONDA_PREFIX's python")
      ->type_name("PATH");
  fw->add_option("--for-cc", o.for_cc,
                 "Judge for GPUs of these compute capabilities instead of this node's (e.g. 6.1 for a P40): versions, arch "
                 "lists and library code only, no GPU needed, no operation run")
      ->type_name("CC,...")
      ->delimiter(',')
      ->check(compute_capability());
  fw->add_flag("--json", o.json, "Print the report (the probes' answers, the libraries' architectures, the checks) as JSON");
  fw->add_option("--out", o.out_file, "Also write the JSON report to FILE")->type_name("FILE");
  fw->add_option("--from", o.from, "Judge a report written by --json or --out elsewhere instead of probing here")
      ->type_name("FILE");
  fw->add_option("--timeout", o.timeout_s, "Seconds each probe process may take (an import that hangs is a finding)")
      ->check(number_in(1.0, 86400.0))
      ->capture_default_str();
  fw->add_option("--junit", o.junit_file, "Also write the checks as JUnit XML to FILE")->type_name("FILE");
  fw->add_option("--prometheus", o.prometheus_file, "Also write the checks as a node_exporter textfile to FILE")
      ->type_name("FILE");
  fw->add_flag("--bench", o.bench,
               "Also train a synthetic ResNet-50 in each framework that sees a GPU (minutes): PyTorch and TensorFlow, on one "
               "GPU and on all of them through the framework's data-parallel path, in its default settings, with mixed "
               "precision, and in its fast settings (channels_last, mixed precision from cc 7.0, torch.compile or XLA); "
               "images/s per mode as records in the report, with verdicts on scaling, the fast settings and mixed precision");
  fw->add_option("--bench-seconds", o.bench_seconds, "Timed seconds per bench mode, after its warm-up steps")
      ->check(number_in(0.1, 3600.0))
      ->capture_default_str();
  fw->add_option("--bench-timeout", o.bench_timeout_s,
                 "Seconds one bench mode may take in all (import, warm-up, compilation, timing); one that overruns is ended "
                 "with its processes and is a finding")
      ->check(number_in(1.0, 86400.0))
      ->capture_default_str();
  fw->add_option("--bench-batch", o.bench_batch, "Images per GPU and step of the bench")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
}

void add_doctor(CLI::App& app, DoctorCommand& c) {
  DoctorOptions& o = c.options;
  CLI::App* doctor = app.add_subcommand(
      "doctor", "Check the node: driver, libraries, GPU visibility, PCIe links, ECC, clocks, peers; each problem with its fix");
  doctor->add_flag("--json", o.json, "Print the checks as JSON");
  doctor->add_flag("--no-load", o.no_load, "Read PCIe links without loading the GPUs (links train down at idle)");
  doctor->add_option("--from", o.from,
                     "Judge a node captured elsewhere instead of this one, no GPU needed: FILE is an `env --json` "
                     "capture, a result file or a `doctor --json` report, plain or gzip-compressed (.json.gz)")
      ->type_name("FILE");
  doctor->add_option("--archs", o.archs,
                     "With --from: the CUDA architectures of the binary the node runs (CMake notation, e.g. 61-real), "
                     "where the capture does not record them")
      ->type_name("LIST");
}

void add_validate(CLI::App& app, ValidateCommand& c) {
  ValidateOptions& v = c.options;
  RunOptions& o = c.run;
  CLI::App* validate = app.add_subcommand(
      "validate", "Judge the node: doctor, then benchmarks by level against the device profile's thresholds");
  validate->add_option("--profile", v.profile,
                       "Thresholds: auto (by GPU model), a model name of the thresholds file, or a thresholds FILE "
                       "(plain or gzip-compressed)")
      ->capture_default_str();
  validate->add_option("--level", v.level,
                       "1 checks only (seconds); 2 plus quick bandwidth and GEMM (about a minute); 3 every family, full sweeps; "
                       "4 level 2 and the burn (every GPU under full load for NODEBENCH_BURN_DURATION seconds, default 600)")
      ->check(count_in(1, 4))
      ->capture_default_str();
  validate->add_option("--out", o.out_dir, "Folder for the result file")->capture_default_str();
  add_format_options(validate, kFormatValidate, o);
  validate->add_option("--gpus", o.gpus, "Devices to benchmark: 'all' or a list like 0,2 (CUDA indices)")->capture_default_str();
  validate->add_flag("--quiet", o.quiet, "No progress lines");
  add_algo_cache(validate, o);
}

void add_monitor(CLI::App& app, MonitorCommand& c) {
  MonitorOptions& mo = c.options;
  CLI::App* monitor = app.add_subcommand(
      "monitor", "Watch the GPUs through NVML: utilisation, memory, temperature, power, clocks, throttle reasons, "
                 "PCIe and NVLink throughput, ECC; a live table, CSV, JSON lines or a Prometheus textfile");
  monitor->add_option("--interval", mo.interval_s, "Seconds between samples")
      ->check(seconds_in(0.05, 3600, "must be 0.05 to 3600 seconds"))
      ->capture_default_str();
  monitor->add_option("--duration", mo.duration_s, "Stop after S seconds (default: until Ctrl-C)")
      ->check(seconds_in(0, 1e9, "must be a number of seconds from 0 to 1e9 (0: until interrupted)"));
  monitor->add_option("--gpus", mo.gpus, "GPUs to watch: 'all' or a list like 0,2 (NVML indices, as nvidia-smi numbers them)")
      ->capture_default_str();
  monitor->add_option("--format", mo.format, "table (redrawn on a terminal), csv, jsonl, or prometheus (a node_exporter textfile)")
      ->check(CLI::IsMember({"table", "csv", "jsonl", "prometheus"}))
      ->capture_default_str();
  monitor->add_option("--out", mo.out_file,
                      "Write to FILE instead of stdout; with --format prometheus, FILE is replaced atomically after each "
                      "sample (required)")
      ->type_name("FILE");
}

void add_burn(CLI::App& app, BurnCommand& c) {
  BurnOptions& o = c.options;
  CLI::App* burn = app.add_subcommand(
      "burn", "Burn-in: every selected GPU under sustained full load at once (the fastest dense GEMM, each result "
              "checked bit for bit, and a memory test), a timeline per GPU from NVML; Ctrl-C stops it and keeps "
              "what was measured. Judge it with validate --level 4 (docs/VALIDATE.md)");
  burn->add_option("--duration", o.duration, "How long to load the GPUs (e.g. 10m, 60s, 1h; a plain number is seconds)")
      ->type_name("DURATION")
      ->check(duration_text())
      ->capture_default_str();
  burn->add_option("--precision", o.precision,
                   "GEMM precision: auto (the GPU's fastest: fp16 tensor cores from cc 7.0, fp32 before), fp64, fp32, "
                   "tf32, fp16, bf16")
      ->check(CLI::IsMember({"auto", "fp64", "fp32", "tf32", "fp16", "bf16"}))
      ->capture_default_str();
  burn->add_option("--gpus", o.gpus, "Devices to load: 'all' or a list like 0,2 (CUDA indices)")->capture_default_str();
  burn->add_option("--out", o.out_dir, "Folder for the result file")->capture_default_str();
  burn->add_option("--out-file", o.out_file,
                   "The result FILE (default: nodebench-burn-<UTC time>.json in --out); the timeline is written beside "
                   "it as <FILE without .json>.timeline.jsonl")
      ->type_name("FILE");
  burn->add_flag("--quiet", o.quiet, "No run progress lines (each GPU's burn line every 10 s, on stderr, remains)");
}

}  // namespace nb::cli
