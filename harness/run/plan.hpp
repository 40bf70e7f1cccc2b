// The library core of a run: a Plan (which cases, on which GPUs, how measured) made from the
// options by make_plan, and executed over a Session by run_plan, which appends records to a
// RunDocument and tells the Reporters (the result file, the console, ...) as it goes.
// `run` and `validate` are thin commands over it; nothing re-reads a result file to learn what
// it just measured.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/benchmark.hpp"
#include "run/estimate.hpp"
#include "run/options.hpp"
#include "run/reporter.hpp"
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
  // run --monitor: sample the GPUs every this many seconds into the result's timeline, with
  // each step's start and end marked (docs/SCHEMA.md, "Timeline").
  std::optional<double> monitor_interval_s;
  // What --budget did (docs/SCHEMA.md, "plan"): null without a budget.
  nlohmann::json budget = nullptr;
};

// The one way from options to a plan (run, validate; run/pipeline.hpp): the cases the options
// select (select_cases: suite, families, filter; throws nb::Error naming a bad one), the sampling
// config of the suite, the GPUs, and with a --budget the cases shortened or left out to fit
// (`budget`). The session's GPUs give the cases' costs.
Plan make_plan(const RunOptions& o, const Session& session, std::vector<int> gpus);

// The most points per GPU a result's timeline keeps (longer runs are down-sampled).
constexpr size_t kTimelineMaxPoints = 600;

// How each (case, GPUs) pair is run, in order: first the per-GPU cases of families that share
// nothing (every GPU at once when `concurrent` and there are several, else GPU after GPU), then
// the per-GPU cases that share the host (GPU after GPU), then the host-only cases (once each, on
// no GPU: `gpus` empty), then the multi-GPU cases (none without GPUs).
enum class RunMode { alone, concurrent };
const char* to_string(RunMode m);
struct Step {
  const Case* c = nullptr;
  std::vector<int> gpus;
  RunMode mode = RunMode::alone;
  int wave = 0;  // steps of one wave with mode concurrent run together, one thread per GPU
};
std::vector<Step> schedule(const Plan& plan);

// What a plan costs (case_cost, wave_costs, predicted_duration): run/estimate.hpp; here the wave
// costs on the session's own GPUs.
std::vector<CostUnit> wave_costs(const Plan& plan, const Session& session, const std::vector<Step>& steps);

struct RunHooks {
  // Checked before each case: true stops the run ("interrupted").
  std::function<bool()> stop_requested;
  // Given, once the run has started, `end_now(why)`: callable from another thread (a signal's
  // watcher) until `on_end` is called, it ends the run at once as "interrupted" without waiting
  // for the case under way (which is not recorded; `why` and that case are said in the
  // document's notes): the document is finished with every record made so far and each reporter
  // told (the result file written). It returns false, doing nothing, once the run is finishing
  // on its own. The caller then ends the process (the case under way holds the GPU).
  std::function<void(std::function<bool(const std::string& why)> end_now)> on_start;
  // The run is finishing on its own: end_now may no longer be called (it would touch a run that
  // is ending); on_end returns only when no end_now is under way.
  std::function<void()> on_end;
};

enum class RunStatus { complete, interrupted, aborted };
const char* to_string(RunStatus s);

struct RunOutcome {
  RunStatus status = RunStatus::complete;
  std::string error;                       // why aborted
  std::vector<std::string> verdict_lines;  // from the analyses
  // Outputs that could not be written when the run finished: (Reporter::what(), the error).
  std::vector<std::pair<std::string, std::string>> output_errors;
};

// Runs the plan, adding records and analyses to `doc`, telling `reporters` (started, recorded,
// finished), and finishes the document.
RunOutcome run_plan(const Plan& plan, Session& session, RunDocument& doc, const std::vector<Reporter*>& reporters = {},
                    const RunHooks& hooks = {});

// Cases of the registered families for a suite, restricted to families and a filter (each case's
// shares_host set from its family). Throws nb::Error naming an unknown family or a bad regex.
std::vector<Case> select_cases(Suite suite, const std::vector<std::string>& families, const std::string& filter);
// The cases the options select: their selections' union (each case once, in the registry's
// order) when they have any, else their families and filter. Throws nb::Error as above.
std::vector<Case> select_cases(const RunOptions& o);

// Runs every registered analysis that applies to the records; puts each into the document's
// analysis and returns the lines to print.
std::vector<std::string> run_analyses(RunDocument& doc, const AnalysisContext& ctx);

}  // namespace nb
