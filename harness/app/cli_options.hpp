// The options of each subcommand, declared on CLI11 (cli_options.cpp), and the checks that need
// the parsed values (cli_checks.cpp). Internal to the command-line parser (cli.cpp).
#pragma once
#include <functional>
#include <map>
#include <string>

#include <CLI/CLI.hpp>

#include "app/cli.hpp"

namespace nb::cli {

// Values CLI11 parses as text and the parser turns into typed options after parsing.
struct RawText {
  std::string suite = "quick";
  std::string l2;
  double max_time = -1;
  std::string monitor;  // run --monitor[=S]
  std::string budget;   // run --budget DURATION
  CLI::Option* monitor_opt = nullptr;
  std::map<std::string, std::string> setting_options;  // run's options of declared settings (run_option)
};

// Validators that say what they expect: a whole number from lo to hi (CLI11's Range alone says
// "Value 2.5 not in range"), and a finite number from lo to hi (NaN passes a plain range check:
// every comparison with it is false).
CLI::Validator count_in(long long lo, long long hi);
CLI::Validator number_in(double lo, double hi);
// A validator from a check that returns why a value is refused ("" when it is fine), said by
// CLI11 as "--option: <why>" (exit 2). A blank value passes: refuse_empty_values names it.
CLI::Validator refusing(std::function<std::string(const std::string&)> why_not, std::string description);
// The checks of option values made while parsing: a filter RE2 compiles (--filter), a duration
// (--budget, burn --duration), seconds in a range with the option's own message (monitor
// --interval, --duration, run --monitor=S), a compute capability (frameworks --for-cc).
CLI::Validator filter_pattern();
CLI::Validator duration_text();
CLI::Validator seconds_in(double lo, double hi, std::string refusal);  // "VALUE" in refusal: the value
CLI::Validator compute_capability();

void add_list(CLI::App& app, ListCommand& c, RawText& raw);
void add_run(CLI::App& app, RunCommand& c, RawText& raw);
void add_env(CLI::App& app, EnvCommand& c);
void add_doctor(CLI::App& app, DoctorCommand& c);
void add_validate(CLI::App& app, ValidateCommand& c);
void add_monitor(CLI::App& app, MonitorCommand& c);
void add_advise(CLI::App& app, AdviseCommand& c);
void add_fatbin(CLI::App& app, FatbinCommand& c);
void add_frameworks(CLI::App& app, FrameworksCommand& c);
void add_burn(CLI::App& app, BurnCommand& c);

// After parsing: the typed values and the checks CLI11 cannot make. An empty string when all is
// well, else the message (without "nodebench: "); `usage` says whether the command's usage follows.
struct Problem {
  std::string message;
  bool usage = true;
};
Problem finish_run(RunOptions& o, const RawText& raw, bool is_run);
Problem finish_selection(RunOptions& o, const RawText& raw);
// advise's --measure and what goes with it (--list, --suite, --out, --out-file: only with it, and
// then no result files or --profile); the run's selections from the advise contributions.
Problem finish_advise(AdviseCommand& c);
Problem finish_doctor(const DoctorOptions& o);
Problem finish_burn(BurnOptions& o);
Problem finish_monitor(const MonitorOptions& o);
Problem finish_frameworks(FrameworksOptions& o);
// The environment settings and the files named by options (read before anything runs).
Problem check_run_inputs(const RunOptions& o);
// Every option of `sub` given an empty value ('--gpus ""'), named: an empty value is a mistake, not
// "the default" (leave the option out for that). `skip` is an option whose empty value means
// something (run --monitor).
Problem refuse_empty_values(const CLI::App& sub, const CLI::Option* skip);
// Why `path` cannot be written as a file (is a folder, not a regular file, under a file, in a
// folder that cannot be written), or, with `folder`, used as the folder files are written into;
// empty when it can. Judged before anything runs, so that no measurement is lost to the path.
std::string unwritable(const std::string& path, bool folder);
// The output paths of run, validate, monitor and advise, each judged (unwritable) and named.
Problem check_output_paths(const std::vector<std::pair<std::string, std::string>>& files,
                           const std::vector<std::pair<std::string, std::string>>& folders);
// run's options of declared settings (SettingSpec::run_option) applied over the environment's.
Problem apply_setting_options(const RawText& raw);

}  // namespace nb::cli
