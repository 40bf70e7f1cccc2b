#include "run/plan.hpp"

#include <algorithm>
#include <set>

#include "base/error.hpp"
#include "base/pattern.hpp"
#include "bench/cost.hpp"
#include "cluster/cluster.hpp"

namespace nb {
using nlohmann::json;

const char* to_string(RunMode m) { return m == RunMode::concurrent ? "concurrent" : "alone"; }

std::vector<Case> select_cases(Suite suite, const std::vector<std::string>& families, const std::string& filter) {
  std::set<std::string> known;
  for (const auto& f : family_registry()) known.insert(f->name());
  for (const auto& f : families) {
    if (!known.count(f)) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      throw Error("unknown family '" + f + "' (families: " + list + ")");
    }
  }
  std::optional<Pattern> re;  // linear time: a backtracking std::regex can run for ever on a case id
  try {
    if (!filter.empty()) re.emplace(filter);
  } catch (const Error& e) {
    throw Error(std::string("--filter: ") + e.what());
  }
  std::vector<Case> out;
  for (const auto& f : family_registry()) {
    const bool named = std::find(families.begin(), families.end(), f->name()) != families.end();
    if (!families.empty() && !named) continue;
    if (f->explicit_only() && !named) continue;
    for (auto& c : f->cases(suite)) {
      if (re && !re->search(c.id())) continue;
      c.shares_host = f->shares_host();
      out.push_back(std::move(c));
    }
  }
  return out;
}

std::vector<Step> schedule(const Plan& plan) {
  std::vector<Step> steps;
  const bool together = plan.concurrent && plan.gpus.size() > 1;
  int wave = 0;
  // A first_gpu_only case runs on the first selected GPU alone.
  auto on = [&](const Case& c, int g) { return !c.first_gpu_only || g == plan.gpus.front(); };
  // Per-GPU cases that share nothing: with `together`, wave w runs case w on every GPU at once.
  for (const Case& c : plan.cases) {
    if (c.multi_gpu || c.shares_host || c.host_only) continue;
    if (together) {
      for (int g : plan.gpus)
        if (on(c, g)) steps.push_back({&c, {g}, RunMode::concurrent, wave});
      ++wave;
    }
  }
  if (!together)
    for (int g : plan.gpus)
      for (const Case& c : plan.cases)
        if (!c.multi_gpu && !c.shares_host && !c.host_only && on(c, g)) steps.push_back({&c, {g}, RunMode::alone, wave++});
  for (int g : plan.gpus)
    for (const Case& c : plan.cases)
      if (!c.multi_gpu && c.shares_host && !c.host_only && on(c, g)) steps.push_back({&c, {g}, RunMode::alone, wave++});
  // Host-only cases once, on no GPU (they load the host: alone).
  for (const Case& c : plan.cases)
    if (c.host_only) steps.push_back({&c, {}, RunMode::alone, wave++});
  for (const Case& c : plan.cases)
    if (c.multi_gpu && !c.host_only && !plan.gpus.empty()) steps.push_back({&c, plan.gpus, RunMode::alone, wave++});
  return steps;
}

std::vector<CostUnit> wave_costs(const Plan& plan, const Session& session, const std::vector<Step>& steps) {
  return wave_costs(plan, [&](int g) -> const GpuInfo& { return session.gpu(g); }, steps);
}

namespace {

// --budget: the cases shortened or left out to fit, recorded in the result (`plan`).
void apply_budget(Plan& plan, const Session& session, double budget_s) {
  std::vector<CaseCost> costs;
  std::vector<std::string> families;
  const size_t per_gpu = plan.concurrent || plan.gpus.size() <= 1 ? 1 : plan.gpus.size();
  for (const Case& c : plan.cases) {
    CaseCost k = case_cost(c, plan.gpus.empty() ? nullptr : &session.gpu(plan.gpus.front()), plan.base,
                           c.multi_gpu ? int(plan.gpus.size()) : 1);
    // Cases that run GPU after GPU (sharing the host, or --one-gpu-at-a-time) cost once per GPU;
    // multi-GPU and host-only cases run once.
    const double times = c.multi_gpu || c.host_only || c.first_gpu_only ? 1.0
                         : c.shares_host                                 ? double(plan.gpus.size())
                                                                         : double(per_gpu);
    k.setup_s *= times;
    k.sample_s *= times;
    costs.push_back(k);
    families.push_back(c.family);
  }
  const BudgetPlan b = fit_budget(costs, families, budget_s);
  json left = json::array();
  for (size_t i : b.left_out) left.push_back(plan.cases[i].id());
  plan.budget = {{"budget_s", budget_s},
                 {"predicted_s", b.predicted_s},
                 {"fits", b.fits},
                 {"sample_scale", b.sample_scale},
                 {"max_time_s", plan.base.max_time_s * b.sample_scale},
                 {"left_out", left},
                 {"left_out_predicted_s", b.left_out_s}};
  plan.base.max_time_s *= b.sample_scale;
  std::vector<Case> kept;
  size_t k = 0;
  for (size_t i = 0; i < plan.cases.size(); ++i) {
    if (k < b.left_out.size() && b.left_out[k] == i) {
      ++k;
      continue;
    }
    kept.push_back(std::move(plan.cases[i]));
  }
  plan.cases = std::move(kept);
}

}  // namespace

std::vector<Case> select_cases(const RunOptions& o) {
  if (o.selections.empty()) return select_cases(o.suite, o.families, o.filter);
  std::set<std::string> chosen;
  for (const auto& [family, filter] : o.selections)
    for (const Case& c : select_cases(o.suite, {family}, filter)) chosen.insert(c.id());
  std::vector<std::string> families;
  for (const auto& s : o.selections) families.push_back(s.first);
  std::vector<Case> out;
  for (Case& c : select_cases(o.suite, families, ""))
    if (chosen.count(c.id())) out.push_back(std::move(c));
  return out;
}

Plan make_plan(const RunOptions& o, const Session& session, std::vector<int> gpus) {
  Plan plan;
  plan.cases = select_cases(o);
  plan.gpus = std::move(gpus);
  plan.base.target_cv = o.target_cv;
  plan.base.min_samples = o.min_samples;
  plan.base.max_time_s = o.max_time_s.value_or(default_max_time(o.suite));
  plan.base.fixed_samples = o.repetitions;
  plan.l2 = o.l2;
  plan.concurrent = !o.one_gpu_at_a_time;
  plan.memory_fraction = o.memory_fraction;
  plan.global_batch = o.global_batch;
  plan.algo_cache_file = o.algo_cache_file;
  plan.algo_search = o.algo_search;
  plan.monitor_interval_s = o.monitor_interval_s;
  if (o.budget_s) apply_budget(plan, session, *o.budget_s);  // no GPUs: a run of host-only cases
  return plan;
}

}  // namespace nb
