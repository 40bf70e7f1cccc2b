#include "run/estimate.hpp"

#include "run/plan.hpp"

#include <algorithm>
#include <numeric>
#include <set>

#include "base/error.hpp"
#include "bench/cost.hpp"

namespace nb {

namespace {

// The default case: a little setup (allocation, fill, verification) and its sampling cap. The
// adaptive stop ends most cases earlier; the calibration by kind corrects that as the run goes.
constexpr double kDefaultSetupS = 0.1;
// A pace is trusted in proportion to the predicted seconds it has seen: (actual + c) / (prior + c),
// so that the first, small cases of a kind (a sweep's small batches, the smallest copies) do not
// set the pace of its large ones, while a kind whose cases keep taking longer than predicted soon
// moves the estimate (the prior itself is a fit to earlier runs). c is 5% of the run's predicted
// duration, at most 20 s: a short run must react within seconds.
constexpr double kShrinkMaxS = 20.0, kShrinkShare = 0.05;
// A unit whose prior is under this was predicted not to run its work (a batch its memory plan
// rules out): how long it took is no pace.
constexpr double kMinInformativePriorS = 1e-3;

}  // namespace

Estimator::Estimator(std::vector<CostUnit> units) : units_(std::move(units)), finished_(units_.size(), false) {
  double total = 0;
  for (const CostUnit& u : units_) total += u.prior_s;
  shrink_s_ = std::clamp(kShrinkShare * total, 1e-3, kShrinkMaxS);
  for (const CostUnit& u : units_)
    if (!u.sweep.empty()) {
      Sweep& s = sweeps_[u.sweep];
      s.batches.push_back(u.batch);
      if (u.sweep_last) s.prior_last = u.sweep_last;
      if (!u.sweep_lasts.empty()) s.prior_lasts = u.sweep_lasts;
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

void Estimator::learn(size_t i, const std::vector<nlohmann::json>& records, double took_s) {
  bool all_skipped = true, sweep_ended = false;
  std::optional<double> figure;
  for (const auto& r : records) {
    const std::string status = r.value("status", "");
    const std::string kind = r.contains("reason_kind") && r["reason_kind"].is_string() ? r["reason_kind"].get<std::string>() : "";
    if (status != "skipped") all_skipped = false;
    if (kind == "plateau" || kind == "oom" || kind == "smaller_oom") sweep_ended = true;
    if (status == "ok" && !figure && r.contains("primary_metric") && r["primary_metric"].is_string()) {
      const std::string pm = r["primary_metric"].get<std::string>();
      if (r.contains("metrics") && r["metrics"].contains(pm) && r["metrics"][pm].is_number()) figure = r["metrics"][pm].get<double>();
    }
  }
  if (!records.empty() && all_skipped) skipped(i);
  else done(i, took_s);
  if (sweep_ended) stop_sweep(i);
  else if (figure) observe(i, *figure);
}

double Estimator::run_weight(size_t i) const {
  const CostUnit& u = units_.at(i);
  if (u.sweep.empty()) return 1;
  const Sweep& s = sweeps_.at(u.sweep);
  if (s.stopped) return u.batch < s.stopped_at ? 1 : 0;
  auto runs_with = [&](std::optional<int64_t> prior) {
    const std::optional<int64_t> last = predicted_last_batch(s.points, s.batches, prior);
    return last && u.batch <= *last;
  };
  if (s.prior_lasts.empty()) return runs_with(s.prior_last) ? 1 : 0;
  size_t n = 0;
  for (int64_t l : s.prior_lasts) n += runs_with(l) ? 1 : 0;
  return double(n) / double(s.prior_lasts.size());
}

void Estimator::done(size_t i, double actual_s) {
  if (i >= units_.size()) throw Error("Estimator::done: no unit " + std::to_string(i));
  if (finished_[i]) return;
  finished_[i] = true;
  ++done_;
  const double prior = units_[i].prior_s;
  // A unit predicted to cost nothing (skipped before its work, by its model) says nothing of a pace.
  if (prior < kMinInformativePriorS) return;
  if (!units_[i].sweep.empty()) {
    Sweep& sw = sweeps_[units_[i].sweep];
    sw.actual += actual_s;
    sw.prior += prior;
  }
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
  return shrunk_(it->second.actual, it->second.prior);
}

double Estimator::shrunk_(double actual, double prior) const { return (actual + shrink_s_) / (prior + shrink_s_); }

double Estimator::predicted_s(size_t i) const {
  const CostUnit& u = units_.at(i);
  const double w = run_weight(i);
  if (!(w > 0)) return 0;
  // In a sweep, the pace of its own cases done: they share its layers' shapes and searches.
  std::optional<double> p;
  if (!u.sweep.empty())
    if (const Sweep& sw = sweeps_.at(u.sweep); sw.prior > 0) p = shrunk_(sw.actual, sw.prior);
  if (!p) p = pace(u.kind);
  // A kind not seen yet: the pace of its family's kinds ("train/tf32" -> every "train/..." done),
  // which share its model, else its own prior: the fit per kind, made from earlier runs. (Not the
  // pace of all units: a GEMM or a training step slower than its fit says nothing of a copy.)
  if (!p) p = family_pace(u.kind);
  return w * u.prior_s * p.value_or(1.0);
}

std::optional<double> Estimator::family_pace(const std::string& kind) const {
  const size_t slash = kind.find('/');
  if (slash == std::string::npos) return std::nullopt;
  const std::string prefix = kind.substr(0, slash + 1);
  Pace f;
  for (const auto& [k, p] : by_kind_)
    if (k.compare(0, prefix.size(), prefix) == 0) f.actual += p.actual, f.prior += p.prior, f.n += p.n;
  if (f.n == 0 || f.prior <= 0) return std::nullopt;
  return shrunk_(f.actual, f.prior);
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
    total += run_weight(i) * units_[i].prior_s;
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

CaseCost case_cost(const Case& c, const GpuInfo* gpu, const MeasureConfig& cfg, int gpus, double* model_s,
                   double* model_sample_s) {
  // A step skipped before any work (the one rule, bench/cost.hpp) costs nothing: no fit's fixed seconds.
  if (!case_runs(c, {gpu}, gpus).ok) {
    CaseCost none;
    none.kind = c.family;
    if (model_s) *model_s = 0;
    if (model_sample_s) *model_sample_s = 0;
    return none;
  }
  CaseCost k = c.cost && gpu ? c.cost(CostInput{*gpu, cfg, std::max(gpus, 1)}) : default_case_cost(c, cfg);
  if (k.kind.empty()) k.kind = c.family;
  if (model_s) *model_s = k.total();
  if (model_sample_s) *model_sample_s = k.sample_s;
  return apply_fit(k);
}

CostUnit cost_unit(const CaseCost& k, double model_s) {
  CostUnit u;
  u.kind = k.kind, u.prior_s = k.total(), u.sweep = k.sweep, u.batch = k.batch, u.model_s = model_s;
  if (!k.sweep.empty()) u.sweep_last = sweep_last_batch(k.sweep), u.sweep_lasts = sweep_last_batches(k.sweep);
  return u;
}

std::vector<CostUnit> wave_costs(const Plan& plan, const std::function<const GpuInfo&(int)>& gpu_of,
                                 const std::vector<Step>& steps) {
  std::vector<CostUnit> units;
  for (size_t i = 0; i < steps.size();) {
    size_t j = i;
    CostUnit u;
    while (j < steps.size() && steps[j].wave == steps[i].wave) {
      const Step& s = steps[j++];
      double model = 0;
      // A host-only step has no GPU of its own: it is costed (and judged able to run) on the run's
      // first GPU, as run_host judges it.
      const int on = !s.gpus.empty() ? s.gpus.front() : plan.gpus.empty() ? -1 : plan.gpus.front();
      const CaseCost k = case_cost(*s.c, on < 0 ? nullptr : &gpu_of(on), plan.base, int(s.gpus.size()), &model);
      const double top = std::max(u.prior_s, k.total());
      if (k.total() > u.prior_s || u.kind.empty()) u = cost_unit(k, model);
      u.prior_s = top;
    }
    units.push_back(u);
    i = j;
  }
  return units;
}

double predicted_duration(const Plan& plan, const std::function<const GpuInfo&(int)>& gpu_of) {
  return Estimator(wave_costs(plan, gpu_of, schedule(plan))).prior_total_s();
}

}  // namespace nb
