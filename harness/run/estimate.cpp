#include "run/estimate.hpp"

#include <algorithm>
#include <numeric>
#include <set>

#include "base/error.hpp"

namespace nb {

namespace {

// The default case: a little setup (allocation, fill, verification) and its sampling cap. The
// adaptive stop ends most cases earlier; the calibration by kind corrects that as the run goes.
constexpr double kDefaultSetupS = 0.1;
// A pace learned from fewer done units than this is blended with 1 (the prior itself): one odd
// case must not swing the estimate of every kind not seen yet.
constexpr double kPaceConfidenceUnits = 3.0;

}  // namespace

Estimator::Estimator(std::vector<CostUnit> units) : units_(std::move(units)), finished_(units_.size(), false) {}

void Estimator::done(size_t i, double actual_s) {
  if (i >= units_.size()) throw Error("Estimator::done: no unit " + std::to_string(i));
  if (finished_[i]) return;
  finished_[i] = true;
  ++done_;
  const double prior = std::max(units_[i].prior_s, 1e-6);
  Pace& k = by_kind_[units_[i].kind];
  k.actual += actual_s;
  k.prior += prior;
  ++k.n;
  all_.actual += actual_s;
  all_.prior += prior;
  ++all_.n;
}

std::optional<double> Estimator::pace(const std::string& kind) const {
  auto it = by_kind_.find(kind);
  if (it == by_kind_.end() || it->second.prior <= 0) return std::nullopt;
  return it->second.actual / it->second.prior;
}

double Estimator::overall_pace() const {
  if (all_.n == 0 || all_.prior <= 0) return 1.0;
  const double w = std::min(1.0, double(all_.n) / kPaceConfidenceUnits);
  return w * (all_.actual / all_.prior) + (1 - w);
}

double Estimator::predicted_s(size_t i) const {
  const CostUnit& u = units_.at(i);
  const std::optional<double> p = pace(u.kind);
  return u.prior_s * (p ? *p : overall_pace());
}

double Estimator::remaining_s() const {
  double left = 0;
  for (size_t i = 0; i < units_.size(); ++i)
    if (!finished_[i]) left += predicted_s(i);
  return left;
}

double Estimator::prior_total_s() const {
  return std::accumulate(units_.begin(), units_.end(), 0.0, [](double a, const CostUnit& u) { return a + u.prior_s; });
}

CaseCost default_case_cost(const Case& c, const MeasureConfig& cfg) {
  CaseCost k;
  k.kind = c.family;
  k.setup_s = kDefaultSetupS;
  k.sample_s = cfg.max_time_s;
  return k;
}

BudgetPlan fit_budget(const std::vector<CaseCost>& costs, const std::vector<std::string>& families, double budget_s,
                      double min_sample_scale) {
  if (costs.size() != families.size()) throw Error("fit_budget: one family per cost");
  BudgetPlan plan;
  double setup = 0, sample = 0;
  for (const auto& c : costs) setup += c.setup_s, sample += c.sample_s;
  plan.predicted_s = setup + sample;
  if (plan.predicted_s <= budget_s) return plan;
  // Shorten sampling first: it loses precision (more noise), not coverage.
  if (sample > 0) plan.sample_scale = std::clamp((budget_s - setup) / sample, min_sample_scale, 1.0);
  auto cost_of = [&](size_t i) { return costs[i].setup_s + costs[i].sample_s * plan.sample_scale; };
  plan.predicted_s = setup + sample * plan.sample_scale;
  // Then leave out the costliest cases, keeping at least one case of every family.
  std::vector<size_t> order(costs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return cost_of(a) > cost_of(b); });
  std::map<std::string, size_t> per_family;
  for (const auto& f : families) ++per_family[f];
  std::set<size_t> out;
  for (size_t i : order) {
    if (plan.predicted_s <= budget_s) break;
    if (per_family[families[i]] <= 1) continue;
    --per_family[families[i]];
    out.insert(i);
    plan.predicted_s -= cost_of(i);
    plan.left_out_s += cost_of(i);
  }
  plan.left_out.assign(out.begin(), out.end());
  plan.fits = plan.predicted_s <= budget_s;
  return plan;
}

}  // namespace nb
