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

struct ListCommand {
  RunOptions selection;  // suite, families, filter
  bool json = false;
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
};
// `nodebench fatbin FILE...`: the SASS and PTX architectures in each library's fatbin headers.
struct FatbinCommand {
  std::vector<std::string> files;
  bool json = false;
};

struct Command {
  std::variant<ListCommand, RunCommand, EnvCommand, DoctorCommand, ValidateCommand, MonitorCommand, AdviseCommand,
               FatbinCommand>
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
  std::string err;                 // text for stderr (error and usage)
};

ParseOutcome parse_cli(const std::vector<std::string>& args);  // args[0] is the program name

// The usage (--help text) of a subcommand: printed after a usage error found later (an unknown
// --family, say), as after a parse error.
std::string usage_of(const std::string& subcommand);

// Parses every declared NODEBENCH_* setting into the settings in force (bench/settings.hpp);
// throws nb::Error naming a bad one, warns on stderr about names that are no setting.
void check_environment_settings();

}  // namespace nb
