#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "app/cli.hpp"
#include "app/cli_options.hpp"
#include "base/error.hpp"
#include "app/runner.hpp"
#include "bench/settings.hpp"
#include "run/options.hpp"

using namespace nb;

static ParseOutcome parse(std::vector<std::string> a) {
  a.insert(a.begin(), "nodebench");
  return parse_cli(a);
}

TEST(Cli, RunDefaults) {
  auto p = parse({"run"});
  ASSERT_TRUE(p.command);
  EXPECT_EQ(std::string(p.command->name()), "run");
  EXPECT_EQ(p.command->as<RunCommand>()->options.suite, Suite::quick);
  EXPECT_EQ(p.command->as<RunCommand>()->options.gpus, "all");
  EXPECT_EQ(p.command->as<RunCommand>()->options.repetitions, 0u);
  EXPECT_FALSE(p.command->as<RunCommand>()->options.max_time_s.has_value());
  EXPECT_FALSE(p.command->as<RunCommand>()->options.l2.has_value());
}

TEST(Cli, RunWithEveryOption) {
  auto p = parse({"run", "--suite", "full", "--family", "gemm,other", "--family", "third", "--filter", "fp16",
                  "--gpus", "0,2", "--out", "/tmp/x", "--repetitions", "25", "--max-time", "2.5", "--target-cv",
                  "0.02", "--min-samples", "5", "--l2", "cold", "--quiet"});
  ASSERT_TRUE(p.command) << p.err;
  const RunOptions& o = p.command->as<RunCommand>()->options;
  EXPECT_EQ(o.suite, Suite::full);
  EXPECT_EQ(o.families, (std::vector<std::string>{"gemm", "other", "third"}));
  EXPECT_EQ(o.filter, "fp16");
  EXPECT_EQ(o.gpus, "0,2");
  EXPECT_EQ(o.out_dir, "/tmp/x");
  EXPECT_EQ(o.repetitions, 25u);
  EXPECT_DOUBLE_EQ(*o.max_time_s, 2.5);
  EXPECT_DOUBLE_EQ(o.target_cv, 0.02);
  EXPECT_EQ(o.min_samples, 5u);
  EXPECT_EQ(*o.l2, L2Mode::cold);
  EXPECT_TRUE(o.quiet);
}

TEST(Cli, ListAndEnv) {
  auto l = parse({"list", "--json", "--suite", "full"});
  ASSERT_TRUE(l.command);
  EXPECT_EQ(std::string(l.command->name()), "list");
  EXPECT_TRUE(l.command->as<ListCommand>()->json);
  auto e = parse({"env"});
  ASSERT_TRUE(e.command);
  EXPECT_EQ(std::string(e.command->name()), "env");
}

TEST(Cli, HelpAndVersionExitZero) {
  auto h = parse({"--help"});
  EXPECT_FALSE(h.command);
  EXPECT_EQ(h.exit_code, 0);
  EXPECT_NE(h.out.find("Exit codes"), std::string::npos);
  auto rh = parse({"run", "--help"});
  EXPECT_EQ(rh.exit_code, 0);
  EXPECT_NE(rh.out.find("--max-time"), std::string::npos);
  auto v = parse({"--version"});
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_NE(v.out.find("nodebench"), std::string::npos);
}

TEST(Cli, BadUsageExitsTwoWithMessageAndUsage) {
  for (auto args : std::vector<std::vector<std::string>>{
           {},                                   // no subcommand
           {"frobnicate"},                       // unknown subcommand
           {"run", "--suite", "medium"},         // not a suite
           {"run", "--repetitions", "0"},        // out of range
           {"run", "--repetitions", "many"},     // not a number
           {"run", "--max-time", "-1"},
           {"run", "--l2", "warm"},
           {"run", "--no-such-flag"},
           {"run", "--profiles", "/nonexistent.json"},
       }) {
    auto p = parse(args);
    EXPECT_FALSE(p.command);
    EXPECT_EQ(p.exit_code, 2) << (args.empty() ? "" : args.back());
    EXPECT_FALSE(p.err.empty());
    EXPECT_NE(p.err.find("Usage"), std::string::npos) << p.err;
  }
}

TEST(Cli, InvalidRegexAndGpuListAreUsageErrors) {
  auto r = parse({"run", "--filter", "(unclosed"});
  EXPECT_FALSE(r.command);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("regular expression"), std::string::npos);
  auto g = parse({"run", "--gpus", "0,x"});
  EXPECT_FALSE(g.command);
  EXPECT_EQ(g.exit_code, 2);
  EXPECT_NE(g.err.find("'x'"), std::string::npos);
}

TEST(GpuList, AllListsAndRangeErrors) {
  EXPECT_EQ(parse_gpu_list("all", 3), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(parse_gpu_list("2,0,2", 3), (std::vector<int>{2, 0}));
  try {
    parse_gpu_list("4", 2);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sees 2 GPUs (0..1)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_gpu_list("-1", 2), Error);
  EXPECT_THROW(parse_gpu_list(",", 2), Error);
}

// SIGTERM from `timeout` arrives twice at once (to the child, then to its process group): the
// first stops the run after the current case, the duplicate is ignored, and only a signal that
// comes later than kInterruptRepeatNs ends the process.
TEST(Interrupt, DuplicateSignalIsIgnoredALaterOneTerminates) {
  int64_t first = 0;
  const int64_t t0 = 5'000'000'000;
  EXPECT_EQ(nb::interrupt_action(t0, first), nb::InterruptAction::stop_after_case);
  EXPECT_EQ(first, t0);
  EXPECT_EQ(nb::interrupt_action(t0 + 1'000, first), nb::InterruptAction::ignore);  // same instant
  EXPECT_EQ(nb::interrupt_action(t0 + nb::kInterruptRepeatNs - 1, first), nb::InterruptAction::ignore);
  EXPECT_EQ(nb::interrupt_action(t0 + nb::kInterruptRepeatNs, first), nb::InterruptAction::terminate);
  EXPECT_EQ(first, t0);  // the first signal's time is kept
}

// Environment settings: unset or empty is "not set" (the default); anything but a positive
// number is an error that names the variable and the value.
TEST(Environment, PositiveSettingsAreCheckedAndNamed) {
  const char* n = "NODEBENCH_NCCL_TIMEOUT_S";
  EXPECT_DOUBLE_EQ(nb::Settings::from_map({{n, ""}}).number(n), 120.0);
  EXPECT_DOUBLE_EQ(nb::Settings::from_map({{n, "0.5"}}).number(n), 0.5);
  EXPECT_THROW((void)nb::Settings::from_map({{"NODEBENCH_CUDNN_WORKSPACE_MIB", "0.5"}}), nb::Error);  // not whole
  for (const char* bad : {"0", "-3", "4G", "abc", "nan", "inf"}) {
    try {
      (void)nb::Settings::from_map({{n, bad}});
      ADD_FAILURE() << bad << " accepted";
    } catch (const nb::Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string(n) + "='" + bad + "'"), std::string::npos) << e.what();
    }
  }
}

// run --budget DURATION: hours, minutes and seconds, a plain number of seconds; anything else is
// refused with a message that says what is accepted.
TEST(Cli, BudgetDurations) {
  EXPECT_DOUBLE_EQ(nb::parse_duration("90s"), 90);
  EXPECT_DOUBLE_EQ(nb::parse_duration("10m"), 600);
  EXPECT_DOUBLE_EQ(nb::parse_duration("1h30m"), 5400);
  EXPECT_DOUBLE_EQ(nb::parse_duration("2h"), 7200);
  EXPECT_DOUBLE_EQ(nb::parse_duration("45"), 45);
  EXPECT_DOUBLE_EQ(nb::parse_duration("1.5m"), 90);
  EXPECT_DOUBLE_EQ(nb::parse_duration("1h30m20s"), 5420);
  for (const char* bad : {"", "m", "10x", "1h30", "-5m", "0", "1..5s", "99999999999999999999h", "1h1h", "30m1h", "5s5s",
                          "1m2m"})
    EXPECT_THROW((void)nb::parse_duration(bad), nb::Error) << bad;
  auto p = parse({"run", "--budget", "10m"});
  ASSERT_TRUE(p.command) << p.err;
  EXPECT_DOUBLE_EQ(*p.command->as<RunCommand>()->options.budget_s, 600);
  auto bad = parse({"run", "--budget", "soon"});
  EXPECT_FALSE(bad.command);
  EXPECT_EQ(bad.exit_code, nb::kExitUsage);
  EXPECT_NE(bad.err.find("--budget: 'soon' is not a duration"), std::string::npos) << bad.err;
}

TEST(Cli, LateUsageErrorsPrintTheMessageAndTheUsage) {
  for (auto args : std::vector<std::vector<std::string>>{
           {"run", "--filter", "["}, {"run", "--gpus", "abc"}, {"validate", "--gpus", "1,,2"}, {"list", "--filter", "(a"}}) {
    auto p = parse(args);
    EXPECT_FALSE(p.command);
    EXPECT_EQ(p.exit_code, 2);
    const size_t msg = p.err.find(args[1]);
    const size_t usage = p.err.find("Usage");
    EXPECT_NE(msg, std::string::npos) << p.err;
    ASSERT_NE(usage, std::string::npos) << p.err;
    EXPECT_LT(msg, usage) << p.err;  // the message first, then the usage
  }
}

TEST(Cli, UnknownCommandIsNamed) {
  auto p = parse({"bogus"});
  EXPECT_FALSE(p.command);
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_NE(p.err.find("'bogus'"), std::string::npos) << p.err;
  EXPECT_NE(p.err.find("Usage"), std::string::npos) << p.err;
  // A known command with an unknown word after it is still CLI11's error, naming the word.
  auto q = parse({"run", "bogus2"});
  EXPECT_EQ(q.exit_code, 2);
  EXPECT_NE(q.err.find("bogus2"), std::string::npos) << q.err;
  EXPECT_NE(usage_of("run").find("--family"), std::string::npos);
}

// Issue 38: a usage error is its message and one line pointing at the command's --help (the
// whole help, over 60 lines, scrolled the message away on a terminal).
TEST(Cli, AUsageErrorIsItsMessageAndOneLinePointingAtHelp) {
  for (auto args : std::vector<std::vector<std::string>>{{"run", "--budget", "0"},
                                                         {"run", "--repetitions", "0"},
                                                         {"run", "--no-such-flag"},
                                                         {"run", "--gpus", "abc"},
                                                         {"advise", "--bucket-mib", "nan"},
                                                         {"bogus"},
                                                         {}}) {
    const std::string what = args.empty() ? "(none)" : args.back();
    auto p = parse(args);
    EXPECT_FALSE(p.command) << what;
    EXPECT_EQ(p.exit_code, 2) << what;
    EXPECT_EQ(std::count(p.err.begin(), p.err.end(), '\n'), 2) << p.err;  // the message, the pointer
    const std::string sub = args.empty() || args[0] == "bogus" ? "" : " " + args[0];
    EXPECT_NE(p.err.find("\nUsage: nodebench" + sub + " "), std::string::npos) << p.err;
    EXPECT_NE(p.err.find("'nodebench" + sub + " --help'"), std::string::npos) << p.err;
    EXPECT_EQ(p.err.find("--target-cv"), std::string::npos) << p.err;  // not the option list
  }
}

// NaN and infinities are out of every range (a plain range check lets NaN through: every
// comparison with it is false); a count must be a whole number, and says so.
TEST(Cli, NumbersAreFiniteAndInTheirRangeAndCountsWhole) {
  const std::vector<std::vector<std::string>> bad = {
      {"run", "--max-time", "nan"},        {"run", "--max-time", "inf"},          {"run", "--memory-fraction", "nan"},
      {"run", "--target-cv", "nan"},       {"run", "--target-cv", "-inf"},        {"run", "--max-time", "1e400"},
      {"advise", "--bucket-mib", "nan"},   {"advise", "--inter-node-gbps", "nan"}, {"advise", "--step-ms", "inf"},
      {"advise", "--params", "nan"},       {"run", "--runs", "0"},                {"run", "--runs", "1001"},
      {"run", "--runs", "-1"},             {"run", "--min-samples", "2.5"},       {"run", "--global-batch", "1e3"},
      {"validate", "--level", "2.0"},      {"run", "--repetitions", "99999999999999999999"}};
  for (const auto& args : bad) {
    auto p = parse(args);
    EXPECT_FALSE(p.command) << args[1] << " " << args[2];
    EXPECT_EQ(p.exit_code, 2) << args[1] << " " << args[2];
    EXPECT_NE(p.err.find(args[1] + ": '" + args[2] + "' is "), std::string::npos) << p.err;
  }
  EXPECT_NE(parse({"run", "--min-samples", "2.5"}).err.find("'2.5' is not a whole number (expected a whole number from 1"),
            std::string::npos);
  EXPECT_NE(parse({"run", "--runs", "0"}).err.find("'0' is out of range (expected a whole number from 1 to 1000)"),
            std::string::npos);
  // The bounds themselves are accepted.
  for (const char* n : {"1", "1000"}) {
    auto p = parse({"run", "--runs", n});
    ASSERT_TRUE(p.command) << p.err;
    EXPECT_EQ(p.command->as<RunCommand>()->options.runs, size_t(std::stoul(n)));
  }
  auto m = parse({"run", "--max-time", "0.001", "--memory-fraction", "1", "--target-cv", "0"});
  ASSERT_TRUE(m.command) << m.err;
  EXPECT_DOUBLE_EQ(*m.command->as<RunCommand>()->options.max_time_s, 0.001);
}

// An empty value is a mistake, not "the default": named, exit 2.
TEST(Cli, EmptyValuesAreRefusedAndNamed) {
  for (auto args : std::vector<std::vector<std::string>>{{"run", "--gpus", ""},
                                                         {"run", "--budget", ""},
                                                         {"run", "--out-file", ""},
                                                         {"run", "--out", ""},
                                                         {"run", "--filter", ""},
                                                         {"validate", "--junit", ""},
                                                         {"monitor", "--gpus", ""},
                                                         {"doctor", "--from", ""},
                                                         {"advise", "--json", ""}}) {
    auto p = parse(args);
    EXPECT_FALSE(p.command) << args[1];
    EXPECT_EQ(p.exit_code, 2) << args[1];
    EXPECT_EQ(p.err.rfind("nodebench: " + args[1] + ": an empty value", 0), 0u) << p.err;
  }
  // ',,,' then --quiet: the flag is a flag, not a family; an empty name among names is named.
  for (const char* given : {",,,", "gemm,,memory", "gemm,", ","}) {
    auto q = parse({"run", "--family", given, "--quiet"});
    EXPECT_EQ(q.exit_code, 2) << given;
    EXPECT_EQ(q.err.find("'--quiet'"), std::string::npos) << q.err;
    EXPECT_EQ(q.err.rfind(std::string("nodebench: --family: '") + given + "' has an empty family name", 0), 0u) << q.err;
  }
  auto two = parse({"list", "--family", "gemm,memory", "--family", "peak"});
  ASSERT_TRUE(two.command) << two.err;
  EXPECT_EQ(two.command->as<ListCommand>()->selection.families, (std::vector<std::string>{"gemm", "memory", "peak"}));
}

// Where a command writes, judged before it runs: a folder as a file, a file as a folder, a path
// under a file, a device; a new file in a folder still to be made is fine.
TEST(Cli, OutputPathsAreJudgedBeforeTheRun) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(NB_TEST_OUTPUT_DIR) / "cli_output_paths";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string file = (dir / "a_file.json").string();
  std::ofstream(file) << "{}";
  using nb::cli::unwritable;
  EXPECT_EQ(unwritable(dir.string(), false), "'" + dir.string() + "' is a folder, not a file path");
  EXPECT_EQ(unwritable(file, true), "'" + file + "' is a file, not a folder");
  EXPECT_EQ(unwritable(file + "/r.json", false), "'" + file + "/r.json' is under '" + file + "', which is a file, not a folder");
  EXPECT_EQ(unwritable(file + "/x/y/r.json", false),
            "'" + file + "/x/y/r.json' is under '" + file + "', which is a file, not a folder");
  EXPECT_EQ(unwritable(file + "/sub", true), "'" + file + "/sub' is under '" + file + "', which is a file, not a folder");
  EXPECT_EQ(unwritable("/dev/null", false), "'/dev/null' is not a regular file (a device, FIFO or socket)");
  EXPECT_EQ(unwritable((dir / "new" / "deeper" / "r.json").string(), false), "");
  EXPECT_EQ(unwritable((dir / "new_folder").string(), true), "");
  EXPECT_EQ(unwritable(file, false), "");  // an existing file is replaced
  EXPECT_EQ(unwritable("relative_new_file.json", false), "");
  // Through the parser: the run is refused before anything (exit 2, the option named).
  for (auto args : std::vector<std::vector<std::string>>{{"run", "--out-file", dir.string()},
                                                         {"run", "--out", file},
                                                         {"run", "--gbench-out", file + "/g.json"},
                                                         {"validate", "--prometheus", dir.string()},
                                                         {"monitor", "--out", dir.string()}}) {
    auto p = parse(args);
    EXPECT_FALSE(p.command) << args[1];
    EXPECT_EQ(p.exit_code, 2) << args[1];
    EXPECT_EQ(p.err.rfind("nodebench: " + args[1] + ": '", 0), 0u) << p.err;
  }
  auto ok = parse({"run", "--out-file", (dir / "made" / "r.json").string()});
  EXPECT_TRUE(ok.command) << ok.err;
}

// The checks CLI11's validators make while parsing: each refusal is the option's one line, exit 2,
// and the usage line; the value given is converted once accepted.
TEST(Cli, ValidatorsRefuseWithTheOptionsOwnLine) {
  struct Bad {
    std::vector<std::string> args;
    std::string line;
  };
  const std::vector<Bad> bad = {
      {{"monitor", "--interval", "0"}, "--interval: must be 0.05 to 3600 seconds"},
      {{"monitor", "--interval", "nan"}, "--interval: must be 0.05 to 3600 seconds"},
      {{"monitor", "--duration", "-1"}, "--duration: must be a number of seconds from 0 to 1e9 (0: until interrupted)"},
      {{"run", "--monitor=fast"}, "--monitor: 'fast' is not an interval in seconds (0.05 to 3600)"},
      {{"run", "--monitor=0.01"}, "--monitor: '0.01' is not an interval in seconds (0.05 to 3600)"},
      {{"frameworks", "--for-cc", "6.1,0.5"}, "--for-cc: '0.5' is not a compute capability (e.g. 6.1, 8.6, 12.0)"},
      {{"burn", "--duration", "soon"}, "--duration: 'soon' is not a duration"},
      {{"list", "--filter", "(?=gemm)"}, "--filter: '(?=gemm)' is not a valid regular expression (lookaround '(?='"},
      {{"monitor", "--interval", ""}, "--interval: an empty value (leave the option out for its default)"},
  };
  for (const auto& b : bad) {
    const auto p = parse(b.args);
    EXPECT_FALSE(p.command) << b.line;
    EXPECT_EQ(p.exit_code, nb::kExitUsage) << b.line;
    EXPECT_EQ(p.err.rfind("nodebench: " + b.line, 0), 0u) << p.err;
    EXPECT_NE(p.err.find("\nUsage: nodebench "), std::string::npos) << p.err;
  }
  const auto ok = parse({"run", "--monitor=0.25", "--budget", "1h30m"});
  ASSERT_TRUE(ok.command) << ok.err;
  EXPECT_DOUBLE_EQ(*ok.command->as<RunCommand>()->options.monitor_interval_s, 0.25);
  EXPECT_DOUBLE_EQ(*ok.command->as<RunCommand>()->options.budget_s, 5400);
  const auto burn = parse({"burn", "--duration", "2m"});
  ASSERT_TRUE(burn.command) << burn.err;
  EXPECT_DOUBLE_EQ(burn.command->as<BurnCommand>()->options.duration_s, 120);
}
