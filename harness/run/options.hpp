// The options of a run (`run`, and the run inside `validate` and `advise`), as the command line
// gives them; make_plan (plan.hpp) turns them into a Plan.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bench/benchmark.hpp"

namespace nb {

struct RunOptions {
  Suite suite = Suite::quick;
  std::vector<std::string> families;  // empty: all
  std::string filter;                 // ECMAScript regex on the case id; empty: all
  // When not empty, instead of families and filter: the union of these selections, each a family
  // and a filter over its case ids (advise --measure: the cases the advise contributions read).
  std::vector<std::pair<std::string, std::string>> selections;
  std::string gpus = "all";
  std::string out_dir = "results/runs";
  std::string out_file;               // explicit file name; overrides the generated one
  size_t repetitions = 0;             // > 0: exactly this many samples per case
  std::optional<double> max_time_s;   // per-case sampling cap; default by suite
  double target_cv = 0.01;
  size_t min_samples = 10;
  std::optional<L2Mode> l2;           // default: each case's own (GEMM: hot)
  std::string profiles_file;
  bool quiet = false;
  double memory_fraction = 0.9;       // batch recommendation: the largest share of device memory
  int global_batch = 256;             // train recommendation: the global batch to reach
  bool one_gpu_at_a_time = false;     // run per-GPU cases GPU after GPU even where they share nothing
  size_t runs = 1;                    // > 1: the run repeated in separate processes
  // The FILE of each output format asked for by its option (run/formats.hpp), by format name:
  // "gbench" (--gbench-out), "junit" and "prometheus" (validate).
  std::map<std::string, std::string> format_files;
  // Algorithm cache (docs/SCHEMA.md, "Algorithm choice"): read at start (checked while parsing:
  // a malformed file is exit 2), used by the cuDNN and cuBLASLt choices, written back at the end.
  std::string algo_cache_file;        // empty: no file
  bool algo_search = false;           // ignore the file's entries, search again, then update it
  std::optional<double> monitor_interval_s;  // run --monitor[=S]: sample the GPUs into the result's timeline
  std::optional<double> budget_s;     // run --budget: plan the cases to end within this many seconds
};

// "all" or a comma-separated list of device indices; throws nb::Error with a message.
std::vector<int> parse_gpu_list(const std::string& text, int visible_count);

// "90s", "10m", "1h30m", "2h", "45" (seconds) -> seconds; throws nb::Error saying what is accepted.
double parse_duration(const std::string& text);

// The per-case sampling cap when --max-time is not given.
double default_max_time(Suite s);

}  // namespace nb
