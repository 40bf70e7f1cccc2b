// The run's side of the cost model (its family side, what a Case::cost is written with, the fits
// of harness/profiles/costs.json and the one skip rule, is bench/cost.hpp): what each case and
// wave of a plan costs, the forecast, --budget, and how long is left: a cost per case from the
// case itself (its work, setup and sampling: Case::cost), calibrated as the run goes by the pace
// of the cases of the same kind so far -- not the mean of all cases, since a training-step case
// costs a hundred GEMMs. Pure: unit-tested without a GPU (issue 24).
#pragma once
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "bench/benchmark.hpp"
#include "bench/sweep.hpp"

namespace nb {

struct Plan;
struct Step;

// One unit of the schedule as the estimator sees it: a wave (the steps that run together, one per
// GPU) costs its slowest step.
struct CostUnit {
  std::string kind;    // the calibration class (Case::cost's kind; the family when it gives none)
  double prior_s = 0;  // the case's own prediction
  std::string sweep;   // a batch sweep it belongs to (CaseCost::sweep), or ""
  int64_t batch = 0;   // its batch in that sweep
  double model_s = 0;  // the model seconds behind prior_s (bench/cost.hpp), for refitting
  std::optional<int64_t> sweep_last;  // where an earlier run of its sweep stopped (bench/cost.hpp)
  std::vector<int64_t> sweep_lasts;   // where each earlier run of it stopped, when known
};

class Estimator {
 public:
  explicit Estimator(std::vector<CostUnit> units);
  // Unit `i` took `actual_s` of wall time (units may finish in any order, each once).
  void done(size_t i, double actual_s);
  // Unit `i` ended without running (skipped before its work: not a measure of its kind's pace).
  void skipped(size_t i);
  // Unit `i`'s sweep measured `per_s` (its primary figure) at its batch: the sweep's later units
  // are counted only up to the batch where the sweep is predicted to reach its plateau
  // (bench/sweep.hpp).
  void observe(size_t i, double per_s);
  // Unit `i`'s sweep ended there (plateau, out of memory): its later units will not run.
  void stop_sweep(size_t i);
  // What unit `i`'s records (its steps' records) tell, after `took_s` of wall time: all skipped,
  // it ran nothing that measures a pace (skipped), else done; a record skipped for the plateau or
  // for memory ends its sweep (stop_sweep), else the first ok record's primary figure is a point
  // of it (observe).
  void learn(size_t i, const std::vector<nlohmann::json>& records, double took_s);
  // The predicted seconds of the units not done yet: each unit's prior scaled by a pace, (actual
  // + c) / (prior + c) over done units (c: 5% of the run's prior, at most 20 s, so that a pace is
  // trusted by the predicted seconds it has seen) -- of its sweep's units where it is in a sweep
  // with some done, else of its kind's, else of its family's (the kinds sharing the part of its
  // name before '/'), else its prior as it is (a kind's fit says more of it than other kinds' paces
  // do), times the chance it runs (run_weight).
  double remaining_s() const;
  // The predicted seconds of unit i (calibrated as remaining_s does, times run_weight: 0 past its
  // sweep's actual or certain end).
  double predicted_s(size_t i) const;
  // The chance unit i runs: 1 outside a sweep; in a sweep, 0 or 1 once its points or its stop
  // decide, else the share of the earlier runs of the sweep (CostUnit::sweep_lasts) that would
  // have reached its batch from the points measured so far (a sweep near its plateau stops at one
  // batch in some runs and the next in others: counting half of a 20 s case errs by 10 s either
  // way, counting all or none by 20 s one way); without such runs, 0 or 1 from where one stopped.
  double run_weight(size_t i) const;
  // Before anything ran: the sum of the priors of the units, each times its run weight.
  double prior_total_s() const;
  size_t size() const { return units_.size(); }
  const CostUnit& unit(size_t i) const { return units_.at(i); }
  size_t done_count() const { return done_; }
  // The pace of a kind (actual / prior over its done units), if any of it is done.
  std::optional<double> pace(const std::string& kind) const;

 private:
  double shrunk_(double actual, double prior) const;  // a pace trusted by the prior seconds it has seen
  double shrink_s_ = 20;
  std::optional<double> family_pace(const std::string& kind) const;
  struct Pace {
    double actual = 0, prior = 0;
    size_t n = 0;
  };
  struct Sweep {
    std::vector<SweepPoint> points;
    std::vector<int64_t> batches;  // planned, ascending
    std::optional<int64_t> prior_last;  // where an earlier run of it stopped
    std::vector<int64_t> prior_lasts;   // where each earlier run of it stopped
    bool stopped = false;
    int64_t stopped_at = 0;
    double actual = 0, prior = 0;  // of its units done: their pace guides its next ones
  };
  std::vector<CostUnit> units_;
  std::vector<bool> finished_;
  std::map<std::string, Sweep> sweeps_;
  std::map<std::string, Pace> by_kind_;
  Pace all_;
  size_t done_ = 0;
};

// The default cost of a case that says nothing of its own: its sampling time (the sampling cap
// of its config; the adaptive stop often ends earlier) plus a fixed setup.
CaseCost default_case_cost(const Case& c, const MeasureConfig& cfg);

// What a --budget does to a plan (issue 24), in this order: nothing when the predicted time fits;
// else shorten every case's sampling (the sampling cap scaled down, to no less than
// `min_sample_scale` of it); else also leave out cases, the costliest first but never the last
// case of a family, until it fits. `costs[i]` is case i's cost over all its GPUs.
struct BudgetPlan {
  double sample_scale = 1;         // the factor on every case's sampling cap
  std::vector<size_t> left_out;    // indices of the cases left out, in case order
  double predicted_s = 0;          // of what is kept, after shortening
  double left_out_s = 0;           // what the left-out cases would have taken
  bool fits = true;                // false: even the smallest plan is predicted over the budget
};
BudgetPlan fit_budget(const std::vector<CaseCost>& costs, const std::vector<std::string>& families, double budget_s,
                      double min_sample_scale = 0.25);

// The predicted cost of a case on one of the plan's GPUs (Case::cost, else the default, made
// predicted seconds by its kind's fit: bench/cost.hpp) over `gpus` GPUs (a multi-GPU case); `gpu`
// null for a step on no GPU (a host-only case): the default. `model_s`: the model seconds before
// the fit (what scripts/dev/costs/fit_costs.py fits). A step that the one skip rule (case_runs,
// bench/cost.hpp) skips before any work costs nothing.
CaseCost case_cost(const Case& c, const GpuInfo* gpu, const MeasureConfig& cfg, int gpus = 1, double* model_s = nullptr,
                   double* model_sample_s = nullptr);
// The estimator's unit of one case's cost: its kind, prediction, sweep and batch, and where earlier
// runs of its sweep stopped (costs.json).
CostUnit cost_unit(const CaseCost& k, double model_s);
// One cost unit per wave of the schedule (a wave costs its slowest step), for the Estimator;
// `gpu_of` gives a GPU of the plan by index (the session's, or assumed ones for a forecast).
std::vector<CostUnit> wave_costs(const Plan& plan, const std::function<const GpuInfo&(int)>& gpu_of,
                                 const std::vector<Step>& steps);
// The predicted duration of a plan before it runs, on the GPUs `gpu_of` gives (the forecast
// printed at the start; unit-tested for N GPUs without having them).
double predicted_duration(const Plan& plan, const std::function<const GpuInfo&(int)>& gpu_of);

}  // namespace nb
