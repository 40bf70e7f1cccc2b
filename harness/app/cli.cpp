#include "app/cli.hpp"

#include <algorithm>
#include <iostream>
#include <sstream>

#include <sys/stat.h>

#include "app/cli_options.hpp"
#include "bench/settings.hpp"
#include "cluster/mpi.hpp"
#include "run/formats.hpp"
#include "build_info.hpp"

namespace nb {

namespace {

const char* kAbout =
    "nodebench: benchmarks and checks for GPU nodes: cuBLAS GEMM in every precision, device memory,\n"
    "host link, latencies, peak arithmetic, cuDNN convolution with a batch-size sweep, a ResNet-50\n"
    "training step on cuDNN and cuBLAS, peer-to-peer and NCCL collectives; timing on CUDA events,\n"
    "statistics per case, versioned JSON results; node checks, checks of the installed PyTorch and\n"
    "TensorFlow, GPU monitoring and data-parallel advice.";

const char* kFooter =
    "Exit codes: 0 every case ok or skipped; 1 a case failed or gave a wrong result (or the run\n"
    "was interrupted), or for doctor, validate and frameworks a check failed; 2 bad usage; 3 no usable\n"
    "GPU (for monitor: NVML cannot be loaded).\n"
    "Results: one JSON file per run (schema: docs/SCHEMA.md), written atomically as the run goes; a signal\n"
    "(SIGINT, SIGTERM) ends a run within a second, the file keeping the cases measured so far.\n"
    "Readers (advise, doctor --from, validate --profile, --profiles, --algo-cache) take .json.gz as well as .json.\n"
    "Environment (read once at start, recorded in the result as 'settings'; a bad value exits 2):\n";
const char* kFooterEnd = "See docs/MULTIGPU.md for the NCCL settings.";

using Paths = std::vector<std::pair<std::string, std::string>>;

// The output files a command writes: `before`, then each output format's FILE (run/formats.hpp),
// then `after`, in the order they are judged.
Paths format_paths(FormatCommand command, const RunOptions& o, Paths before, const Paths& after) {
  for (const OutputFormat* f : output_formats())
    if (f->for_command(command) && !f->option.empty()) before.emplace_back(f->option, format_file(o, *f));
  before.insert(before.end(), after.begin(), after.end());
  return before;
}

// Whether `path` is an existing character device or FIFO (/dev/stdout, a pipe): written as a stream.
bool is_stream(const std::string& path) {
  struct stat st {};
  return !path.empty() && ::stat(path.c_str(), &st) == 0 && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode));
}

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
  FrameworksCommand frameworks;
  BurnCommand burn;

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
    cli::add_frameworks(app, frameworks);
    cli::add_burn(app, burn);
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
    cli::Problem p = cli::refuse_empty_values(*parsed_sub(), raw.monitor_opt);
    if (!p.message.empty()) return p;
    if (name == "list") {
      p = cli::finish_selection(list.selection, raw);
      cmd.what = list;
    } else if (name == "run") {
      p = cli::finish_run(run.options, raw, true);
      if (p.message.empty()) p = cli::check_run_inputs(run.options);
      if (p.message.empty()) p = cli::apply_setting_options(raw);
      // Where the run writes, judged before anything is measured (and before the GPU is probed).
      const RunOptions& o = run.options;
      if (p.message.empty())
        p = cli::check_output_paths(format_paths(kFormatRun, o, {{"--out-file", o.out_file}}, {{"--algo-cache", o.algo_cache_file}}),
                                    {{"--out", o.out_file.empty() ? o.out_dir : ""}});
      cmd.what = run;
    } else if (name == "doctor") {
      p = cli::finish_doctor(doctor.options);
      cmd.what = doctor;
    } else if (name == "validate") {
      p = cli::check_run_inputs(validate.run);
      if (p.message.empty())
        p = cli::check_output_paths(format_paths(kFormatValidate, validate.run, {}, {{"--algo-cache", validate.run.algo_cache_file}}),
                                    {{"--out", validate.run.out_dir}});
      cmd.what = validate;
    } else if (name == "monitor") {
      p = cli::finish_monitor(monitor.options);
      if (p.message.empty()) p = cli::check_run_inputs(RunOptions{});
      // A stream (/dev/stdout, a FIFO) takes csv or JSON lines; a prometheus textfile is replaced whole.
      if (p.message.empty() && (monitor.options.format == "prometheus" || !is_stream(monitor.options.out_file)))
        p = cli::check_output_paths({{"--out", monitor.options.out_file}}, {});
      cmd.what = monitor;
    } else if (name == "advise") {
      p = cli::finish_advise(advise);
      if (p.message.empty() && !is_stream(advise.options.json_file))
        p = cli::check_output_paths({{"--json", advise.options.json_file}}, {});
      const RunOptions& m = advise.run;
      if (p.message.empty() && advise.measure && !advise.list)
        p = cli::check_output_paths({{"--out-file", m.out_file}}, {{"--out", m.out_file.empty() ? m.out_dir : ""}});
      cmd.what = advise;
    } else if (name == "fatbin") {
      cmd.what = fatbin;
    } else if (name == "frameworks") {
      p = cli::finish_frameworks(frameworks.options);
      const auto& fo = frameworks.options;
      if (p.message.empty())
        p = cli::check_output_paths({{"--out", fo.out_file}, {"--junit", fo.junit_file}, {"--prometheus", fo.prometheus_file}}, {});
      cmd.what = frameworks;
    } else if (name == "burn") {
      p = cli::finish_burn(burn.options);
      if (p.message.empty()) p = cli::check_run_inputs(RunOptions{});
      if (p.message.empty())
        p = cli::check_output_paths({{"--out-file", burn.options.out_file}}, {{"--out", burn.options.out_dir}});
      cmd.what = burn;
    } else {
      cmd.what = env;
    }
    return p;
  }
};

}  // namespace

const char* Command::name() const {
  static const char* const kNames[] = {"list", "run", "env", "doctor", "validate", "monitor", "advise", "fatbin", "frameworks", "burn"};
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
    res.err = "nodebench: unknown command '" + args[1] + "' (expected one of: " + list + ")\n" + usage_line("");
    return res;
  }
  std::vector<std::string> rev(args.begin() + (args.empty() ? 0 : 1), args.end());
  std::reverse(rev.begin(), rev.end());
  std::ostringstream out, err;
  try {
    p.app.parse(rev);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {  // --help, --version
      p.app.exit(e, out, err);
      res.out = out.str();
      res.err = err.str();
      res.exit_code = kExitOk;
      return res;
    }
    // The message, then one line pointing at the help of the command that failed (the whole help
    // would scroll the message away).
    res.exit_code = kExitUsage;
    res.err = "nodebench: " + std::string(e.what()) + "\n" + usage_line(p.parsed_sub()->get_name());
    return res;
  }
  Command cmd;
  cmd.argv = args;
  const cli::Problem problem = p.finish(cmd);
  if (!problem.message.empty()) {
    res.exit_code = kExitUsage;
    res.err = "nodebench: " + problem.message + "\n" + (problem.usage ? usage_line(p.parsed_sub()->get_name()) : "");
    return res;
  }
  res.command = std::move(cmd);
  return res;
}

std::string usage_line(const std::string& subcommand) {
  const std::string cmd = "nodebench" + (subcommand.empty() || subcommand == "nodebench" ? "" : " " + subcommand);
  return "Usage: " + cmd + (subcommand.empty() || subcommand == "nodebench" ? " COMMAND [OPTIONS]" : " [OPTIONS]") + "; '" +
         cmd + " --help' lists " + (subcommand.empty() || subcommand == "nodebench" ? "the commands" : "its options") + "\n";
}

std::string usage_of(const std::string& subcommand) {
  ParseOutcome h = parse_cli({"nodebench", subcommand, "--help"});
  return h.out;
}

}  // namespace nb
