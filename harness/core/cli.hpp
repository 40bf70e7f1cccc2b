// Command-line parsing. Pure: it reads arguments and returns a command or an error with its
// exit code and message, so that the parser is unit-tested without a GPU.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "benchmark.hpp"

namespace nb {

// Exit codes, documented in README.md and `nodebench --help`.
constexpr int kExitOk = 0;
constexpr int kExitCaseFailed = 1;  // a case failed or was wrong, or the run was interrupted
constexpr int kExitUsage = 2;
constexpr int kExitNoGpu = 3;

struct RunOptions {
  Suite suite = Suite::quick;
  std::vector<std::string> families;  // empty: all
  std::string filter;                 // ECMAScript regex on the case id; empty: all
  std::string gpus = "all";
  std::string out_dir = "results/runs";
  std::string out_file;               // explicit file name; overrides the generated one
  size_t repetitions = 0;             // > 0: exactly this many samples per case
  std::optional<double> max_time_s;   // per-case sampling cap; default by suite
  double target_cv = 0.01;
  size_t min_samples = 10;
  std::optional<L2Mode> l2;           // default: each case's own (GEMM: hot)
  std::string profiles_file;
  bool json = false;                  // list/env: JSON output
  bool quiet = false;
  double memory_fraction = 0.9;       // batch recommendation: the largest share of device memory
  int global_batch = 256;             // train recommendation: the global batch to reach
  bool one_gpu_at_a_time = false;     // run per-GPU cases GPU after GPU even where they share nothing
  size_t runs = 1;                    // > 1: the run repeated in separate processes
  std::string gbench_out;             // also write a Google Benchmark JSON file here
  // Algorithm cache (docs/SCHEMA.md, "Algorithm choice"): read at start (checked while parsing:
  // a malformed file is exit 2), used by the cuDNN and cuBLASLt choices, written back at the end.
  std::string algo_cache_file;        // empty: no file
  bool algo_search = false;           // ignore the file's entries, search again, then update it
  std::optional<double> monitor_interval_s;  // run --monitor[=S]: sample the GPUs into the result's timeline
  std::string images_dir;             // run --images DIR: the input family's files (NODEBENCH_INPUT_IMAGES)
};

// `nodebench monitor`.
struct MonitorOptions {
  double interval_s = 1;
  double duration_s = 0;        // 0: until interrupted
  std::string gpus = "all";     // NVML indices
  std::string format = "table"; // table, csv, jsonl, prometheus
  std::string out_file;         // empty: stdout (prometheus needs a file)
};

enum class CommandKind { list, run, env, doctor, validate, monitor, advise };

// `nodebench advise` (docs/ADVISE.md): read result files, predict data-parallel training.
struct AdviseOptions {
  std::vector<std::string> files;          // result files
  std::string gpus;                        // GPU counts per node, "1,2,4"; empty: the measured counts
  int nodes = 1;
  std::optional<double> inter_node_gbps;   // GB/s per node (bytes: 100 Gb/s Ethernet is 12.5)
  std::optional<double> step_ms;           // a framework's own one-GPU step time
  std::optional<double> params;            // its parameter count (default: ResNet-50's)
  std::optional<int> batch;                // the per-GPU batch of --step-ms (and of the what-if)
  std::string profile;                     // what-if: a device profile name
  std::string link;                        // what-if: pcie-gen3, pcie-gen4, nvlink
  std::optional<int> global_batch;         // accumulation steps to reach it
  double bucket_mib = 25;                  // gradient bucket (PyTorch DDP's default)
  std::string grad_dtype = "fp32";         // gradient bytes per parameter: fp32 4, fp16 2
  std::string image_dtype = "uint8";       // input bytes per image: uint8 150528, fp32 602112
  std::string json_file;                   // also write the advice as JSON here
};

// `doctor` and `validate` (docs/VALIDATE.md).
struct ValidateOptions {
  int level = 2;                 // 1 checks only; 2 plus quick bandwidth and GEMM; 3 every family, full sweeps
  std::string profile = "auto";  // auto, a model name of the thresholds file, or a thresholds FILE
  std::string junit_file;        // JUnit XML, when set
  std::string prometheus_file;   // node_exporter textfile, when set
  bool no_load = false;          // doctor: read the PCIe link without loading the GPU
  std::string doctor_from;       // doctor --from FILE: judge a captured node (no GPU needed)
  std::string doctor_archs;      // doctor --archs LIST: the binary's CUDA architectures, with --from
};

struct Command {
  CommandKind kind = CommandKind::run;
  RunOptions options;
  ValidateOptions validate;
  MonitorOptions monitor;
  AdviseOptions advise;
  std::vector<std::string> argv;  // as given, for the result file
};

struct ParseOutcome {
  std::optional<Command> command;  // set when there is something to do
  int exit_code = 0;               // when no command: 0 for --help/--version, 2 for errors
  std::string out;                 // text for stdout (help, version)
  std::string err;                 // text for stderr (error and usage)
};

ParseOutcome parse_cli(const std::vector<std::string>& args);  // args[0] is the program name

// The usage (--help text) of a subcommand: printed after a usage error found later (an unknown
// --family, say), as after a parse error.
std::string usage_of(const std::string& subcommand);

// A setting read from the environment: unset or empty gives nullopt; a value that is not a
// positive number (an integer where `integer`) throws nb::Error naming the variable. `run` and
// `validate` check the documented ones before starting (bad value: exit 2), so no case fails on one.
std::optional<double> env_positive(const char* name, bool integer);
// The documented settings (`--help`): NODEBENCH_CUDNN_WORKSPACE_MIB, NODEBENCH_NCCL_TIMEOUT_S.
void check_environment_settings();

// "all" or a comma-separated list of device indices; throws nb::Error with a message.
std::vector<int> parse_gpu_list(const std::string& text, int visible_count);

// The per-case sampling cap when --max-time is not given.
double default_max_time(Suite s);

}  // namespace nb
