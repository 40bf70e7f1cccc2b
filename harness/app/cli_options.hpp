// The options of each subcommand, declared on CLI11 (cli_options.cpp), and the checks that need
// the parsed values (cli_checks.cpp). Internal to the command-line parser (cli.cpp).
#pragma once
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

void add_list(CLI::App& app, ListCommand& c, RawText& raw);
void add_run(CLI::App& app, RunCommand& c, RawText& raw);
void add_env(CLI::App& app, EnvCommand& c);
void add_doctor(CLI::App& app, DoctorCommand& c);
void add_validate(CLI::App& app, ValidateCommand& c);
void add_monitor(CLI::App& app, MonitorCommand& c);
void add_advise(CLI::App& app, AdviseCommand& c);
void add_fatbin(CLI::App& app, FatbinCommand& c);

// After parsing: the typed values and the checks CLI11 cannot make. An empty string when all is
// well, else the message (without "nodebench: "); `usage` says whether the command's usage follows.
struct Problem {
  std::string message;
  bool usage = true;
};
Problem finish_run(RunOptions& o, const RawText& raw, bool is_run);
Problem finish_selection(RunOptions& o, const RawText& raw);
Problem finish_doctor(const DoctorOptions& o);
Problem finish_monitor(const MonitorOptions& o);
// The environment settings and the files named by options (read before anything runs).
Problem check_run_inputs(const RunOptions& o);
// run's options of declared settings (SettingSpec::run_option) applied over the environment's.
Problem apply_setting_options(const RawText& raw);

}  // namespace nb::cli
