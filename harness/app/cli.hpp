// Command-line parsing. Pure: it reads arguments and returns a command or an error with its
// exit code and message, so that the parser is unit-tested without a GPU. Each subcommand has
// its own type, holding the options of the layer that carries it out (run/options.hpp,
// check/options.hpp, advise/options.hpp).
#pragma once
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "advise/options.hpp"
#include "base/exit_codes.hpp"
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

// `nodebench burn`: the burn family's one case on every selected GPU at once.
struct BurnOptions {
  std::string duration = "10m";   // as --budget: 90s, 10m, 1h30m, or seconds
  double duration_s = 600;        // parsed
  std::string precision = "auto"; // auto, fp64, fp32, tf32, fp16, bf16
  std::string gpus = "all";       // CUDA indices
  std::string out_dir = "results/runs";
  std::string out_file;           // the result file; the timeline goes beside it (.timeline.jsonl)
  bool quiet = false;
};

struct ListCommand {
  RunOptions selection;  // suite, families, filter
  bool json = false;
  bool metrics = false;  // the declared metrics instead of the cases
};
struct RunCommand {
  RunOptions options;
};
struct EnvCommand {
  bool json = false;
};
struct DoctorCommand {
  DoctorOptions options;
};
struct ValidateCommand {
  ValidateOptions options;
  RunOptions run;  // --gpus, --out, --quiet, --algo-cache of the benchmarks it runs
};
struct MonitorCommand {
  MonitorOptions options;
};
struct AdviseCommand {
  AdviseOptions options;
  // --measure: first run, through the run pipeline, the cases the registered advise contributions
  // read (run.selections), writing the result file as `run` does (run.out_dir, run.out_file), then
  // advise over its records; --list: print that plan and stop (no GPU needed).
  bool measure = false, list = false;
  RunOptions run;
  std::string suite;  // --suite as given ("": not given)
};
struct FrameworksCommand {
  FrameworksOptions options;
};
// `nodebench fatbin FILE...`: the SASS and PTX architectures in each library's fatbin headers.
struct FatbinCommand {
  std::vector<std::string> files;
  bool json = false;
};
struct BurnCommand {
  BurnOptions options;
};

struct Command {
  std::variant<ListCommand, RunCommand, EnvCommand, DoctorCommand, ValidateCommand, MonitorCommand, AdviseCommand,
               FatbinCommand, FrameworksCommand, BurnCommand>
      what;
  std::vector<std::string> argv;  // as given, for the result file
  template <class T>
  const T* as() const {
    return std::get_if<T>(&what);
  }
  const char* name() const;  // "run", "validate", ...
};

struct ParseOutcome {
  std::optional<Command> command;  // set when there is something to do
  int exit_code = 0;               // when no command: 0 for --help/--version, 2 for errors
  std::string out;                 // text for stdout (help, version)
  std::string err;                 // text for stderr (the error and one line pointing at --help)
};

ParseOutcome parse_cli(const std::vector<std::string>& args);  // args[0] is the program name

// The usage (--help text) of a subcommand (tests, and what --help prints).
std::string usage_of(const std::string& subcommand);
// The one line a usage error ends with: the command's synopsis and where its options are listed.
std::string usage_line(const std::string& subcommand);

// Parses every declared NODEBENCH_* setting into the settings in force (bench/settings.hpp);
// throws nb::Error naming a bad one, warns on stderr about names that are no setting.
void check_environment_settings();

}  // namespace nb
