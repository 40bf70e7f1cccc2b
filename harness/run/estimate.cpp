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
// A unit whose prior is under this was predicted not to run its work (a batch its memory plan
// rules out): how long it took is no pace.
constexpr double kMinInformativePriorS = 1e-3;

}  // namespace

Estimator::Estimator(std::vector<CostUnit> units) : units_(std::move(units)), finished_(units_.size(), false) {
  for (const CostUnit& u : units_)
    if (!u.sweep.empty()) {
      Sweep& s = sweeps_[u.sweep];
      s.batches.push_back(u.batch);
      if (u.sweep_last) s.prior_last = u.sweep_last;
    }
  for (auto& [name, s] : sweeps_) {
    std::sort(s.batches.begin(), s.batches.end());
    s.batches.erase(std::unique(s.batches.begin(), s.batches.end()), s.batches.end());
  }
}

void Estimator::skipped(size_t i) {
  if (i >= units_.size()) throw Error("Estimator::skipped: no unit " + std::to_string(i));
  if (finished_[i]) return;
  finished_[i] = true;
  ++done_;
}

void Estimator::observe(size_t i, double per_s) {
  if (i >= units_.size()) throw Error("Estimator::observe: no unit " + std::to_string(i));
  const CostUnit& u = units_[i];
  if (u.sweep.empty() || !(per_s > 0)) return;
  sweeps_[u.sweep].points.push_back({u.batch, per_s});
}

void Estimator::stop_sweep(size_t i) {
  if (i >= units_.size()) throw Error("Estimator::stop_sweep: no unit " + std::to_string(i));
  const CostUnit& u = units_[i];
  if (u.sweep.empty()) return;
  Sweep& s = sweeps_[u.sweep];
  if (!s.stopped || u.batch < s.stopped_at) s.stopped_at = u.batch;
  s.stopped = true;
}

bool Estimator::expected_to_run(size_t i) const {
  const CostUnit& u = units_[i];
  if (u.sweep.empty()) return true;
  const Sweep& s = sweeps_.at(u.sweep);
  if (s.stopped) return u.batch < s.stopped_at;
  const std::optional<int64_t> last = predicted_last_batch(s.points, s.batches, s.prior_last);
  return last && u.batch <= *last;
}

void Estimator::done(size_t i, double actual_s) {
  if (i >= units_.size()) throw Error("Estimator::done: no unit " + std::to_string(i));
  if (finished_[i]) return;
  finished_[i] = true;
  ++done_;
  const double prior = units_[i].prior_s;
  // A unit predicted to cost nothing (skipped before its work, by its model) says nothing of a pace.
  if (prior < kMinInformativePriorS) return;
  if (!units_[i].sweep.empty()) sweeps_[units_[i].sweep].last_pace = actual_s / prior;
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
  if (!expected_to_run(i)) return 0;
  // In a sweep, the pace of its latest case done: the nearest batch is the best guide.
  std::optional<double> p = u.sweep.empty() ? std::nullopt : sweeps_.at(u.sweep).last_pace;
  if (!p) p = pace(u.kind);
  // A kind not seen yet: the pace of its family's kinds ("train/tf32" -> every "train/..." done),
  // which share its model, else of all units.
  if (!p) p = family_pace(u.kind);
  return u.prior_s * (p ? *p : overall_pace());
}

std::optional<double> Estimator::family_pace(const std::string& kind) const {
  const size_t slash = kind.find('/');
  if (slash == std::string::npos) return std::nullopt;
  const std::string prefix = kind.substr(0, slash + 1);
  Pace f;
  for (const auto& [k, p] : by_kind_)
    if (k.compare(0, prefix.size(), prefix) == 0) f.actual += p.actual, f.prior += p.prior, f.n += p.n;
  if (f.n == 0 || f.prior <= 0) return std::nullopt;
  return f.actual / f.prior;
}

double Estimator::remaining_s() const {
  double left = 0;
  for (size_t i = 0; i < units_.size(); ++i)
    if (!finished_[i]) left += predicted_s(i);
  return left;
}

double Estimator::prior_total_s() const {
  double total = 0;
  for (size_t i = 0; i < units_.size(); ++i)
    if (expected_to_run(i)) total += units_[i].prior_s;
  return total;
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
