// A developer tool, not a test: the cost model's seconds (bench/cost.hpp, before the fit) of each
// record of a result file whose case is in this build's quick or full suite, on the file's first
// GPU and with the file's sampling options, one JSON line per record: {"id", "kind", "model_s",
// "model_sample_s" (the sampling part of model_s), "duration_s"}. scripts/dev/costs/fit_costs.py fits harness/profiles/costs.json from such lines (files
// written before records carried progress.model_s).
// With --replay OUT.json: the run's estimate of time left again, as this build's costs (the fit
// built in now) and Estimator would have printed it, step by step from the file's records (their
// times, skips and figures), written as a copy of the file whose records' progress.left_s is the
// replayed one (scripts/dev/costs/estimate_table.py reads it). A replay of the run a fit was made from
// is no test of that fit. With --costs FILE: that costs.json (fit_costs.py's output) instead of the
// built-in one, so that a fit made without a run can be tested on it (scripts/dev/costs/estimate_holdout.py).
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>

#include <nlohmann/json.hpp>

#include "node/profiles.hpp"
#include "bench/cost.hpp"
#include "run/estimate.hpp"
#include "run/plan.hpp"

using namespace nb;
using nlohmann::json;

namespace {

GpuInfo gpu_of(const json& g) {
  GpuInfo info;
  info.index = g.value("index", 0);
  info.name = g.value("name", "");
  const std::string cc = g.value("compute_capability", "0.0");
  info.cc_major = std::stoi(cc.substr(0, cc.find('.')));
  info.cc_minor = std::stoi(cc.substr(cc.find('.') + 1));
  info.sm_count = g.value("sm_count", 0);
  info.memory_bytes = g.value("memory_bytes", size_t(0));
  info.l2_bytes = g.value("l2_bytes", size_t(0));
  if (g.contains("pcie") && g["pcie"].is_object()) {
    const json& p = g["pcie"];
    if (p.value("gen_max", json()).is_number()) info.pcie.gen_max = p["gen_max"].get<unsigned>();
    if (p.value("width_max", json()).is_number()) info.pcie.width_max = p["width_max"].get<unsigned>();
  }
  if (g.contains("peaks") && g["peaks"].is_object())
    for (const auto& [k, v] : g["peaks"].items())
      if (v.is_object() && v.value("value", json()).is_number()) info.peaks[k].value = v["value"].get<double>();
  return info;
}

}  // namespace

// The steps of a run in the order they ended: each first record with progress, and the records
// after it without progress (a step's further parts).
struct ReplayStep {
  std::vector<json> records;
  double elapsed_s = 0;
};

std::vector<ReplayStep> steps_of(const json& doc) {
  std::vector<ReplayStep> steps;
  for (const json& r : doc.at("records")) {
    if (r.contains("progress") && r["progress"].is_object()) {
      steps.push_back({{}, r["progress"].value("elapsed_s", 0.0)});
    }
    if (!steps.empty()) steps.back().records.push_back(r);
  }
  return steps;
}

// A record's case in this build: by its id, or its id less a GPU count's step suffix ("/g1"), else
// (the input family's CPU cases are named by the core count of the machine that ran them, "c16")
// the case of this machine whose id differs only in that count.
std::map<std::string, const Case*>::const_iterator find_case(const std::map<std::string, const Case*>& by_id,
                                                             const std::string& id) {
  auto it = by_id.find(id);
  if (it != by_id.end()) return it;
  // A multi-GPU case's step on a GPU count is named with it ("train_dp/.../b32/g1").
  if (const size_t g = id.rfind("/g"); g != std::string::npos && g + 2 < id.size() &&
      std::all_of(id.begin() + long(g) + 2, id.end(), [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); }))
    if (auto base = by_id.find(id.substr(0, g)); base != by_id.end()) return base;
  auto stem = [](const std::string& s) {
    const size_t slash = s.rfind('/');
    if (slash == std::string::npos || slash + 2 > s.size() || s[slash + 1] != 'c') return std::string();
    for (size_t k = slash + 2; k < s.size(); ++k)
      if (!std::isdigit(static_cast<unsigned char>(s[k]))) return std::string();
    return s.substr(0, slash);
  };
  const std::string want = stem(id);
  if (want.empty()) return by_id.end();
  for (auto c = by_id.begin(); c != by_id.end(); ++c)
    if (stem(c->first) == want) return c;
  return by_id.end();
}

int replay(json doc, const GpuInfo& gpu, const MeasureConfig& cfg, const std::map<std::string, const Case*>& by_id,
           const std::string& out) {
  const std::vector<ReplayStep> steps = steps_of(doc);
  std::vector<CostUnit> units;
  for (const ReplayStep& st : steps) {
    const json& r = st.records.front();
    auto it = find_case(by_id, r.value("id", ""));
    CostUnit u;
    // A case that machine's build did not have was known before the run to cost nothing there
    // (Case::available), whatever this build has.
    const bool not_built = std::all_of(st.records.begin(), st.records.end(), [](const json& x) {
      return x.value("status", "") == "skipped" && x.value("reason_kind", json()) == "not_built";
    });
    if (it != by_id.end() && !not_built) {
      const int gpus = r.contains("gpus") && r["gpus"].is_array() ? std::max<int>(1, int(r["gpus"].size())) : 1;
      // Whether a case can run is a fact of that machine (its NUMA nodes, its build), not of this
      // one: a step that ran there is costed as a case that runs, one skipped there as this build
      // would have costed it here (nothing when this machine cannot run it either).
      Case c = *it->second;
      const bool ran = std::any_of(st.records.begin(), st.records.end(), [](const json& x) { return x.value("status", "") != "skipped"; });
      if (ran) c.available = nullptr;
      double model = 0;
      const CaseCost k = case_cost(c, &gpu, cfg, c.multi_gpu ? gpus : 1, &model);
      u = cost_unit(k, model);
    }
    units.push_back(u);
  }
  Estimator e(units);
  std::cout << "replay: " << steps.size() << " steps, predicted at the start " << e.prior_total_s() << " s\n";
  double last = 0;
  json records = json::array();
  for (size_t i = 0; i < steps.size(); ++i) {
    e.learn(i, steps[i].records, steps[i].elapsed_s - last);
    last = steps[i].elapsed_s;
    for (size_t k = 0; k < steps[i].records.size(); ++k) {
      json r = steps[i].records[k];
      if (k == 0) r["progress"]["left_s"] = e.remaining_s(), r["progress"]["predicted_s"] = units[i].prior_s;
      records.push_back(r);
    }
  }
  doc["records"] = records;
  std::ofstream(out) << doc.dump() << "\n";
  return 0;
}

int main(int argc, char** argv) {
  std::string result, replay_out, costs_file;
  bool usage_ok = argc >= 2;
  for (int i = 1; i < argc && usage_ok; ++i) {
    const std::string a = argv[i];
    if ((a == "--replay" || a == "--costs") && i + 1 < argc) (a == "--replay" ? replay_out : costs_file) = argv[++i];
    else if (a.rfind("--", 0) != 0 && result.empty()) result = a;
    else usage_ok = false;
  }
  if (!usage_ok || result.empty()) {
    std::cerr << "usage: nodebench_cost_probe RESULT.json [--replay OUT.json] [--costs costs.json]\n";
    return 2;
  }
  if (!costs_file.empty()) {
    try {
      std::ifstream cf(costs_file);
      if (!cf) throw std::runtime_error("cannot be read");
      use_costs(json::parse(cf));
    } catch (const std::exception& e) {
      std::cerr << "nodebench_cost_probe: " << costs_file << ": not a costs file: " << e.what() << "\n";
      return 2;
    }
  }
  std::ifstream f(result);
  json doc;
  try {
    doc = json::parse(f);
    if (!doc.contains("records") || doc.value("environment", json::object()).value("gpus", json::array()).empty())
      throw std::runtime_error("no records, or no GPU in its environment");
  } catch (const std::exception& e) {
    std::cerr << "nodebench_cost_probe: " << result << ": not a result file: " << e.what() << "\n";
    return 2;
  }
  const GpuInfo gpu = gpu_of(doc.at("environment").at("gpus").at(0));
  const json& o = doc.value("options", json::object());
  MeasureConfig cfg;
  if (o.value("max_time_s", json()).is_number()) cfg.max_time_s = o["max_time_s"].get<double>();
  if (o.value("min_samples", json()).is_number()) cfg.min_samples = o["min_samples"].get<size_t>();
  std::map<std::string, const Case*> by_id;
  const std::vector<Case> quick = select_cases(Suite::quick, {}, ""), full = select_cases(Suite::full, {}, "");
  // The file's own suite first: a case id can be in both, with another cost (the quick suite's
  // train cases search from their own batch and run on fewer GPUs).
  const bool quick_first = o.value("suite", json()).is_string() && o["suite"].get<std::string>() == "quick";
  const std::vector<const std::vector<Case>*> lists =
      quick_first ? std::vector<const std::vector<Case>*>{&quick, &full} : std::vector<const std::vector<Case>*>{&full, &quick};
  for (const auto* list : lists)
    for (const Case& c : *list) by_id.emplace(c.id(), &c);
  if (!replay_out.empty()) return replay(doc, gpu, cfg, by_id, replay_out);
  for (const json& r : doc.at("records")) {
    auto it = find_case(by_id, r.value("id", ""));
    if (it == by_id.end() || !r.value("duration_s", json()).is_number()) continue;
    const int gpus = r.contains("gpus") && r["gpus"].is_array() ? std::max<int>(1, int(r["gpus"].size())) : 1;
    double model = 0, model_sample = 0;
    const CaseCost k = case_cost(*it->second, &gpu, cfg, it->second->multi_gpu ? gpus : 1, &model, &model_sample);
    json line = {{"id", r["id"]}, {"kind", k.kind}, {"model_s", model}, {"model_sample_s", model_sample},
                 {"duration_s", r["duration_s"]},
                 {"status", r.value("status", "")}, {"reason_kind", r.value("reason_kind", json())}};
    if (!k.sweep.empty()) line["sweep"] = k.sweep, line["batch"] = k.batch;
    const std::string pm = r.value("primary_metric", json()).is_string() ? r["primary_metric"].get<std::string>() : "";
    if (!pm.empty() && r.contains("metrics") && r["metrics"].value(pm, json()).is_number()) line["figure"] = r["metrics"][pm];
    std::cout << line.dump() << "\n";
  }
  return 0;
}
