// How long a run will take, and how long is left: a cost per case from the case itself (its
// work, setup and sampling: Case::cost), calibrated as the run goes by the pace of the cases of
// the same kind so far -- not the mean of all cases, since a training-step case costs a hundred
// GEMMs. Pure: unit-tested without a GPU (issue 24).
#pragma once
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "bench/benchmark.hpp"

namespace nb {

// One unit of the schedule as the estimator sees it: a wave (the steps that run together, one per
// GPU) costs its slowest step.
struct CostUnit {
  std::string kind;    // the calibration class (Case::cost's kind; the family when it gives none)
  double prior_s = 0;  // the case's own prediction
};

class Estimator {
 public:
  explicit Estimator(std::vector<CostUnit> units);
  // Unit `i` took `actual_s` of wall time (units may finish in any order, each once).
  void done(size_t i, double actual_s);
  // The predicted seconds of the units not done yet: each kind's prior scaled by that kind's
  // measured pace (actual / prior of its done units); a kind not seen yet by the pace of all done
  // units, shrunk towards 1 while few are done.
  double remaining_s() const;
  // The predicted seconds of unit i (calibrated as remaining_s does).
  double predicted_s(size_t i) const;
  // Before anything ran: the sum of the priors.
  double prior_total_s() const;
  size_t size() const { return units_.size(); }
  size_t done_count() const { return done_; }
  // The pace of a kind (actual / prior over its done units), if any of it is done.
  std::optional<double> pace(const std::string& kind) const;

 private:
  double overall_pace() const;
  struct Pace {
    double actual = 0, prior = 0;
    size_t n = 0;
  };
  std::vector<CostUnit> units_;
  std::vector<bool> finished_;
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

}  // namespace nb
