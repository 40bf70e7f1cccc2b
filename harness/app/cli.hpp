// Command-line parsing. Pure: it reads arguments and returns a command or an error with its
// exit code and message, so that the parser is unit-tested without a GPU.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "advise/options.hpp"
#include "base/exit_codes.hpp"
#include "bench/benchmark.hpp"
#include "check/options.hpp"
#include "run/options.hpp"

namespace nb {

// `nodebench monitor`.
struct MonitorOptions {
  double interval_s = 1;
  double duration_s = 0;        // 0: until interrupted
  std::string gpus = "all";     // NVML indices
  std::string format = "table"; // table, csv, jsonl, prometheus
  std::string out_file;         // empty: stdout (prometheus needs a file)
};

enum class CommandKind { list, run, env, doctor, validate, monitor, advise };

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

}  // namespace nb
