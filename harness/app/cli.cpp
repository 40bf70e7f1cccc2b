#include "app/cli.hpp"

#include <algorithm>
#include <iostream>
#include <sstream>

#include "app/cli_options.hpp"
#include "bench/settings.hpp"
#include "cluster/mpi.hpp"
#include "build_info.hpp"

namespace nb {

namespace {

const char* kAbout =
    "nodebench: benchmarks and checks for GPU nodes: cuBLAS GEMM in every precision, device memory,\n"
    "host link, latencies, peak arithmetic, cuDNN convolution with a batch-size sweep, a ResNet-50\n"
    "training step on cuDNN and cuBLAS, peer-to-peer and NCCL collectives; timing on CUDA events,\n"
    "statistics per case, versioned JSON results; node checks, GPU monitoring and data-parallel advice.";

const char* kFooter =
    "Exit codes: 0 every case ok or skipped; 1 a case failed or gave a wrong result (or the run\n"
    "was interrupted), or for doctor and validate a check failed; 2 bad usage; 3 no usable GPU (for\n"
    "monitor: NVML cannot be loaded).\n"
    "Results: one JSON file per run (schema: docs/SCHEMA.md), written atomically as the run goes.\n"
    "Environment (read once at start, recorded in the result as 'settings'; a bad value exits 2):\n";
const char* kFooterEnd = "See docs/MULTIGPU.md for the NCCL settings.";

// Every subcommand's options bound to its own command value; the parsed one is kept.
struct Parser {
  CLI::App app{kAbout, "nodebench"};
  cli::RawText raw;
  ListCommand list;
  RunCommand run;
  EnvCommand env;
  DoctorCommand doctor;
  ValidateCommand validate;
  MonitorCommand monitor;
  AdviseCommand advise;
  FatbinCommand fatbin;

  Parser() {
    app.set_version_flag("--version", std::string("nodebench ") + NODEBENCH_VERSION + " (" + NODEBENCH_GIT_COMMIT + ")");
    app.require_subcommand(1);
    app.footer(std::string(kFooter) + settings_help() + kFooterEnd);
    cli::add_list(app, list, raw);
    cli::add_run(app, run, raw);
    cli::add_env(app, env);
    cli::add_doctor(app, doctor);
    cli::add_validate(app, validate);
    cli::add_monitor(app, monitor);
    cli::add_advise(app, advise);
    cli::add_fatbin(app, fatbin);
  }
  std::vector<std::string> names() {
    std::vector<std::string> out;
    for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) out.push_back(sub->get_name());
    return out;
  }
  const CLI::App* parsed_sub() const { return app.get_subcommands().empty() ? &app : app.get_subcommands().front(); }
  // The command that was parsed, its typed values finished and checked.
  cli::Problem finish(Command& cmd) {
    const std::string name = parsed_sub()->get_name();
    cli::Problem p;
    if (name == "list") {
      p = cli::finish_selection(list.selection, raw);
      cmd.what = list;
    } else if (name == "run") {
      p = cli::finish_run(run.options, raw, true);
      if (p.message.empty()) p = cli::check_run_inputs(run.options);
      if (p.message.empty()) p = cli::apply_setting_options(raw);
      cmd.what = run;
    } else if (name == "doctor") {
      p = cli::finish_doctor(doctor.options);
      cmd.what = doctor;
    } else if (name == "validate") {
      p = cli::check_run_inputs(validate.run);
      cmd.what = validate;
    } else if (name == "monitor") {
      p = cli::finish_monitor(monitor.options);
      if (p.message.empty()) p = cli::check_run_inputs(RunOptions{});
      cmd.what = monitor;
    } else if (name == "advise") {
      cmd.what = advise;
    } else if (name == "fatbin") {
      cmd.what = fatbin;
    } else {
      cmd.what = env;
    }
    return p;
  }
};

}  // namespace

const char* Command::name() const {
  static const char* const kNames[] = {"list", "run", "env", "doctor", "validate", "monitor", "advise", "fatbin"};
  return kNames[what.index()];
}

void check_environment_settings() {
  std::vector<std::string> unknown;
  set_current_settings(Settings::from_environment(&unknown));
  mpi::set_launch_override(current_settings().tristate("NODEBENCH_MPI"));
  for (const auto& n : unknown) std::cerr << "nodebench: warning: " << n << " is not a nodebench setting (ignored)\n";
}

ParseOutcome parse_cli(const std::vector<std::string>& args) {
  ParseOutcome res;
  Parser p;
  // An unknown command is named (CLI11 alone says only that a subcommand is required).
  const std::vector<std::string> names = p.names();
  if (args.size() >= 2 && !args[1].empty() && args[1][0] != '-' &&
      std::find(names.begin(), names.end(), args[1]) == names.end()) {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    res.exit_code = kExitUsage;
    res.err = "nodebench: unknown command '" + args[1] + "' (expected one of: " + list + ")\n\n" + p.app.help();
    return res;
  }
  std::vector<std::string> rev(args.begin() + (args.empty() ? 0 : 1), args.end());
  std::reverse(rev.begin(), rev.end());
  std::ostringstream out, err;
  try {
    p.app.parse(rev);
  } catch (const CLI::ParseError& e) {
    const int rc = p.app.exit(e, out, err);
    res.out = out.str();
    res.err = err.str();
    res.exit_code = rc == 0 ? kExitOk : kExitUsage;  // 0: --help, --version
    if (rc != 0) res.err += "\n" + p.parsed_sub()->help();  // the usage of the subcommand that failed
    return res;
  }
  Command cmd;
  cmd.argv = args;
  const cli::Problem problem = p.finish(cmd);
  if (!problem.message.empty()) {
    res.exit_code = kExitUsage;
    res.err = "nodebench: " + problem.message + "\n" + (problem.usage ? "\n" + p.parsed_sub()->help() : "");
    return res;
  }
  res.command = std::move(cmd);
  return res;
}

std::string usage_of(const std::string& subcommand) {
  ParseOutcome h = parse_cli({"nodebench", subcommand, "--help"});
  return h.out;
}

}  // namespace nb
