// The library core of a run: a Plan (which cases, on which GPUs, how measured) executed over a
// Session by run_plan, which appends records to a ResultFile (kept in memory, and on disk when
// it has a path) and returns how the run ended. `run` and `validate` are thin commands over it;
// nothing re-reads a result file to learn what it just measured.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/benchmark.hpp"
#include "run/result.hpp"
#include "run/session.hpp"

namespace nb {

struct Plan {
  std::vector<Case> cases;
  std::vector<int> gpus;          // this process's GPUs (under MPI: one)
  MeasureConfig base;             // target CV, sample counts, time cap
  std::optional<L2Mode> l2;       // forced L2 mode; else each case's own
  bool concurrent = true;         // cases that share nothing run on every GPU at once
  double memory_fraction = 0.9;   // for the analyses
  int global_batch = 256;
  std::string algo_cache_file;    // read before the cases, written back after (rank 0)
  bool algo_search = false;       // search again even where the cache has a choice
  // run --monitor: sample the GPUs every this many seconds into the result's `timeline`, with
  // each step's start and end marked (docs/SCHEMA.md, "Timeline").
  std::optional<double> monitor_interval_s;
};

// The most points per GPU a result's timeline keeps (longer runs are down-sampled).
constexpr size_t kTimelineMaxPoints = 600;

// How each (case, GPUs) pair is run, in order: first the per-GPU cases of families that share
// nothing (every GPU at once when `concurrent` and there are several, else GPU after GPU), then
// the per-GPU cases that share the host (GPU after GPU), then the multi-GPU cases.
enum class RunMode { alone, concurrent };
const char* to_string(RunMode m);
struct Step {
  const Case* c = nullptr;
  std::vector<int> gpus;
  RunMode mode = RunMode::alone;
  int wave = 0;  // steps of one wave with mode concurrent run together, one thread per GPU
};
std::vector<Step> schedule(const Plan& plan);

struct RunHooks {
  // After each record is added (progress lines); called under the run's lock.
  std::function<void(const nlohmann::json& record, size_t done, size_t total)> on_record;
  // Checked before each case: true stops the run ("interrupted").
  std::function<bool()> stop_requested;
};

struct RunOutcome {
  std::string status;  // complete, interrupted, aborted
  std::string error;   // why aborted
  std::vector<std::string> verdict_lines;  // from the analyses
};

// Runs the plan, adding records and analyses to `file`, and finishes the file.
RunOutcome run_plan(const Plan& plan, Session& session, ResultFile& file, const RunHooks& hooks = {});

// Cases of the registered families for a suite, restricted to families and a filter (each case's
// shares_host set from its family). Throws nb::Error naming an unknown family or a bad regex.
std::vector<Case> select_cases(Suite suite, const std::vector<std::string>& families, const std::string& filter);

// Runs every registered analysis that applies to the records; puts each into the file's
// analysis and returns the lines to print.
std::vector<std::string> run_analyses(ResultFile& file, const AnalysisContext& ctx);

}  // namespace nb
