// `advise`'s options, and what the parser checks once CLI11 has parsed (cli_options.hpp).
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

#include <sys/stat.h>
#include <unistd.h>

#include "app/cli_options.hpp"
#include "base/error.hpp"
#include "base/pattern.hpp"
#include "bench/algo_choice.hpp"
#include "bench/settings.hpp"
#include "advise/measure.hpp"
#include "check/doctor.hpp"
#include "cluster/mpi.hpp"

namespace nb::cli {

namespace {

std::string shown(double x) {
  std::ostringstream os;
  os << x;
  return os.str();
}

}  // namespace

CLI::Validator count_in(long long lo, long long hi) {
  const std::string range = "a whole number from " + std::to_string(lo) + " to " + std::to_string(hi);
  return CLI::Validator(
      [lo, hi, range](std::string& s) -> std::string {
        long long v = 0;
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (s.empty() || ec == std::errc::invalid_argument || end != s.data() + s.size())
          return "'" + s + "' is not a whole number (expected " + range + ")";
        if (ec == std::errc::result_out_of_range || v < lo || v > hi) return "'" + s + "' is out of range (expected " + range + ")";
        return "";
      },
      "INT in [" + std::to_string(lo) + " - " + std::to_string(hi) + "]");
}

CLI::Validator number_in(double lo, double hi) {
  const std::string range = "a number from " + shown(lo) + " to " + shown(hi);
  return CLI::Validator(
      [lo, hi, range](std::string& s) -> std::string {
        char* end = nullptr;
        errno = 0;
        const double v = s.empty() ? 0 : std::strtod(s.c_str(), &end);
        if (s.empty() || end != s.c_str() + s.size()) return "'" + s + "' is not a number (expected " + range + ")";
        if (!std::isfinite(v) || v < lo || v > hi) return "'" + s + "' is out of range (expected " + range + ")";
        return "";
      },
      "NUMBER in [" + shown(lo) + " - " + shown(hi) + "]");
}

CLI::Validator refusing(std::function<std::string(const std::string&)> why_not, std::string description) {
  return CLI::Validator(
      [why_not = std::move(why_not)](std::string& s) -> std::string {
        if (s.find_first_not_of(" \t") == std::string::npos) return "";  // refuse_empty_values says it
        return why_not(s);
      },
      std::move(description));
}

CLI::Validator filter_pattern() {
  return refusing(
      [](const std::string& s) -> std::string {
        try {
          Pattern re(s);  // linear time (base/pattern.hpp): std::regex can backtrack for ever
        } catch (const Error& e) {
          return e.what();
        }
        return "";
      },
      "REGEX");
}

CLI::Validator duration_text() {
  return refusing(
      [](const std::string& s) -> std::string {
        try {
          (void)parse_duration(s);
        } catch (const Error& e) {
          return e.what();
        }
        return "";
      },
      "DURATION");
}

CLI::Validator seconds_in(double lo, double hi, std::string refusal) {
  return refusing(
      [lo, hi, refusal = std::move(refusal)](const std::string& s) -> std::string {
        char* end = nullptr;
        const double x = std::strtod(s.c_str(), &end);
        if (end != s.c_str() && *end == '\0' && std::isfinite(x) && x >= lo && x <= hi) return "";
        std::string why = refusal;  // 'VALUE' in it: the value given
        if (const size_t at = why.find("VALUE"); at != std::string::npos) why.replace(at, 5, s);
        return why;
      },
      "SECONDS");
}

CLI::Validator compute_capability() {
  return refusing(
      [](const std::string& cc) -> std::string {
        if (!parse_cc(cc) || *parse_cc(cc) < 10) return "'" + cc + "' is not a compute capability (e.g. 6.1, 8.6, 12.0)";
        return "";
      },
      "CC");
}

Problem refuse_empty_values(const CLI::App& sub, const CLI::Option* skip) {
  for (const CLI::Option* opt : sub.get_options()) {
    if (opt == skip || opt->count() == 0 || opt->get_expected_max() == 0) continue;  // a flag takes no value
    for (const std::string& v : opt->results())
      if (v.find_first_not_of(" \t") == std::string::npos) {
        const std::string name = opt->get_lnames().empty() ? opt->get_name() : "--" + opt->get_lnames().front();
        return {name + ": an empty value (leave the option out for its default)", true};
      }
  }
  return {};
}

std::string unwritable(const std::string& path, bool folder) {
  namespace fs = std::filesystem;
  if (path.empty()) return "an empty path";
  const fs::path p(path);
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (folder) {
      if (!S_ISDIR(st.st_mode)) return "'" + path + "' is a file, not a folder";
      if (::access(path.c_str(), W_OK | X_OK) != 0) return "cannot write into the folder '" + path + "' (" + std::strerror(errno) + ")";
      return "";
    }
    if (S_ISDIR(st.st_mode)) return "'" + path + "' is a folder, not a file path";
    if (!S_ISREG(st.st_mode)) return "'" + path + "' is not a regular file (a device, FIFO or socket)";
    // An existing file is replaced through its folder (below), whatever its own mode.
  }
  // The first folder above that exists must be a folder one can write in (a file is replaced
  // through a temporary file beside it; missing folders are made).
  fs::path up = p.parent_path();
  for (;;) {
    const std::string u = up.empty() ? "." : up.string();
    if (::stat(u.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode)) return "'" + path + "' is under '" + u + "', which is a file, not a folder";
      if (::access(u.c_str(), W_OK | X_OK) != 0)
        return "cannot write '" + path + "': the folder '" + u + "' is not writable (" + std::strerror(errno) + ")";
      return "";
    }
    if (errno == ENOTDIR) {
      // A part of `up` is a file: name the first such part.
      fs::path part;
      for (const auto& piece : up) {
        part /= piece;
        if (::stat(part.c_str(), &st) == 0 && !S_ISDIR(st.st_mode))
          return "'" + path + "' is under '" + part.string() + "', which is a file, not a folder";
      }
    }
    if (up.empty() || up == up.parent_path()) return "";
    up = up.parent_path();
  }
}

Problem check_output_paths(const std::vector<std::pair<std::string, std::string>>& files,
                           const std::vector<std::pair<std::string, std::string>>& folders) {
  for (const auto& [opt, path] : files)
    if (!path.empty())
      if (const std::string why = unwritable(path, false); !why.empty()) return {opt + ": " + why, false};
  for (const auto& [opt, path] : folders)
    if (!path.empty())
      if (const std::string why = unwritable(path, true); !why.empty()) return {opt + ": " + why, false};
  return {};
}

void add_advise(CLI::App& app, AdviseCommand& c) {
  AdviseOptions& a = c.options;
  CLI::App* advise = app.add_subcommand(
      "advise",
      "Predict data-parallel training from result files: step time, images/s, efficiency and the bottleneck per "
      "GPU count, batch and accumulation, and the strategy to use (docs/ADVISE.md)");
  advise->add_option("files", a.files,
                     "Result files (nccl all-reduce, hostlink, train or conv, train_dp records), plain or gzip-compressed "
                     "(.json.gz); regular files of at most 256 MiB")
      ->type_name("RESULT.json[.gz]");
  advise->add_option("--gpus", a.gpus, "GPU counts (per node) to predict, e.g. 1,2,4,8 (default: the measured counts)")
      ->type_name("N,...");
  advise->add_option("--nodes", a.nodes, "Nodes, each with --gpus GPUs (above 1 needs --inter-node-gbps)")
      ->check(count_in(1, 1 << 16))
      ->capture_default_str();
  advise->add_option("--inter-node-gbps", a.inter_node_gbps,
                     "Network bandwidth between nodes in GB/s per node (bytes: 100 Gb/s Ethernet is 12.5)")
      ->check(number_in(1e-3, 1e6));
  advise->add_option("--step-ms", a.step_ms, "A framework's own one-GPU step time in ms (with --batch): predict its "
                                             "multi-GPU throughput")
      ->check(number_in(1e-3, 1e7));
  advise->add_option("--params", a.params, "Parameter count of that model (default: ResNet-50, 25557032)")
      ->check(number_in(1.0, 1e13));
  advise->add_option("--batch", a.batch, "Per-GPU batch of --step-ms, and of the --profile what-if (default 64)")
      ->check(count_in(1, 1 << 20));
  advise->add_option("--profile", a.profile,
                     "What-if for hardware not at hand: a device profile name (e.g. \"Tesla P40\"), with --gpus and "
                     "--link; labelled 'predicted from profile, not measured'");
  advise->add_option("--link", a.link, "What-if link between the GPUs")
      ->check(CLI::IsMember({"pcie-gen3", "pcie-gen4", "nvlink"}));
  advise->add_option("--global-batch", a.global_batch, "Global batch to reach: gradient accumulation steps per count")
      ->check(count_in(1, 1 << 24));
  advise->add_option("--bucket-mib", a.bucket_mib, "Gradient bucket size in MiB (PyTorch DDP's default is 25)")
      ->check(number_in(0.001, 1e6))
      ->capture_default_str();
  advise->add_option("--grad-dtype", a.grad_dtype, "Gradient type all-reduced: fp32 (4 bytes, as AMP's FP32 master "
                                                   "weights) or fp16 (2 bytes)")
      ->check(CLI::IsMember({"fp32", "fp16"}))
      ->capture_default_str();
  advise->add_option("--image-dtype", a.image_dtype, "Input image type copied from the host: uint8 (150528 B) or fp32")
      ->check(CLI::IsMember({"uint8", "fp32"}))
      ->capture_default_str();
  advise->add_option("--json", a.json_file, "Also write the advice as JSON to FILE")->type_name("FILE");
  advise->add_flag("--measure", c.measure,
                   "Measure this node first: run the cases the advice reads (each family declares them), write the "
                   "result file as `run` does, then advise over it (no result files or --profile with it)");
  advise->add_flag("--list", c.list, "With --measure: print the cases it would run and stop (needs no GPU)");
  advise->add_option("--suite", c.suite, "With --measure: which sweep of those cases, quick (default) or full")
      ->check(CLI::IsMember({"quick", "full"}));
  advise->add_option("--out", c.run.out_dir, "With --measure: folder for the result file (default: results/runs)")
      ->type_name("DIR");
  advise->add_option("--out-file", c.run.out_file, "With --measure: the result file's exact path")->type_name("FILE");
}

Problem finish_advise(AdviseCommand& c) {
  const bool out_given = c.run.out_dir != RunOptions{}.out_dir || !c.run.out_file.empty();
  if (!c.measure) {
    if (c.list || !c.suite.empty() || out_given)
      return {"--list, --suite, --out and --out-file go with --measure (nodebench advise --measure --list)"};
    return {};
  }
  if (!c.options.files.empty() || !c.options.profile.empty())
    return {"--measure advises from this node's own run: give no result files or --profile with it"};
  c.run.suite = *parse_suite(c.suite.empty() ? "quick" : c.suite);
  c.run.selections = advise::measure_selections();
  return {};
}

Problem finish_selection(RunOptions& o, const RawText& raw) {
  o.suite = *parse_suite(raw.suite);
  std::vector<std::string> families;
  for (const std::string& given : o.families) {
    size_t from = 0;
    for (;;) {
      const size_t comma = given.find(',', from);
      const std::string name = given.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
      if (name.empty()) return {"--family: '" + given + "' has an empty family name (e.g. --family gemm,memory)"};
      families.push_back(name);
      if (comma == std::string::npos) break;
      from = comma + 1;
    }
  }
  o.families = std::move(families);  // the filter: checked while parsing (filter_pattern)
  return {};
}

Problem finish_run(RunOptions& o, const RawText& raw, bool is_run) {
  if (Problem p = finish_selection(o, raw); !p.message.empty()) return p;
  if (raw.max_time > 0) o.max_time_s = raw.max_time;
  if (raw.l2 == "hot") o.l2 = L2Mode::hot;
  if (raw.l2 == "cold") o.l2 = L2Mode::cold;
  if (!raw.budget.empty()) o.budget_s = parse_duration(raw.budget);  // checked while parsing (duration_text)
  if (is_run && raw.monitor_opt && raw.monitor_opt->count() > 0)  // S checked while parsing (seconds_in)
    o.monitor_interval_s = raw.monitor.empty() ? 1.0 : std::strtod(raw.monitor.c_str(), nullptr);
  return {};
}

Problem finish_doctor(const DoctorOptions& o) {
  if (!o.archs.empty() && o.from.empty())
    return {"doctor --archs: needs --from FILE (on the node, doctor reads this binary's own)"};
  return {};
}

Problem finish_frameworks(FrameworksOptions& o) {
  if (!o.from.empty() && (!o.pythons.empty() || !o.for_cc.empty()))
    return {"frameworks --from: judges the report as it was gathered; --python and --for-cc apply when probing"};
  if (o.bench && !o.from.empty()) return {"frameworks --bench: runs here; --from judges a report's bench records as they are"};
  if (o.bench && !o.for_cc.empty()) return {"frameworks --bench: trains on this node's GPUs; --for-cc judges without them"};
  return {};
}

Problem finish_burn(BurnOptions& o) {
  o.duration_s = parse_duration(o.duration);  // checked while parsing (duration_text)
  return {};
}

Problem finish_monitor(const MonitorOptions& mo) {
  if (mo.format == "prometheus" && mo.out_file.empty())
    return {"--out: --format prometheus writes a textfile; give its path, e.g. "
            "--out /var/lib/node_exporter/textfile_collector/nodebench.prom",
            false};
  if (mo.gpus != "all") {
    try {
      (void)parse_gpu_list(mo.gpus, 1 << 20);
    } catch (const Error& e) {
      return {e.what(), false};
    }
  }
  return {};
}

Problem apply_setting_options(const RawText& raw) {
  Settings s = current_settings();
  for (const auto& [name, value] : raw.setting_options) {
    if (value.empty()) continue;
    for (const SettingSpec& spec : setting_registry()) {
      if (spec.name != name) continue;
      if (spec.check)
        if (const std::string why = spec.check(value); !why.empty()) return {spec.run_option + ": " + why};
      try {
        s = s.with(name, value);
      } catch (const Error& e) {
        return {spec.run_option + ": " + e.what()};
      }
    }
  }
  set_current_settings(s);
  mpi::set_launch_override(s.tristate("NODEBENCH_MPI"));
  return {};
}

Problem check_run_inputs(const RunOptions& o) {
  try {
    check_environment_settings();
  } catch (const Error& e) {
    return {e.what(), false};  // an environment variable, not an option: no usage
  }
  if (!o.algo_cache_file.empty()) {
    try {
      AlgoCache probe;  // read once here so that a malformed file stops the command before it starts
      probe.load(o.algo_cache_file);
    } catch (const Error& e) {
      return {std::string("--algo-cache: ") + e.what()};
    }
  }
  if (o.gpus != "all") {
    try {
      (void)parse_gpu_list(o.gpus, 1 << 20);  // syntax only; indices are checked against the node
    } catch (const Error& e) {
      return {e.what()};
    }
  }
  return {};
}

}  // namespace nb::cli
