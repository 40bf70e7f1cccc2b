#include "bench/cost.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "base/error.hpp"
#include "bench/benchmark.hpp"
#include "cluster/cluster.hpp"
#include "node/profiles.hpp"

namespace nb {

Availability case_runs(const Case& c, const std::vector<const GpuInfo*>& on, int gpu_count) {
  if (c.multi_gpu && gpu_count < c.min_gpus)
    return Availability::no("needs " + std::to_string(c.min_gpus) + " GPUs; " + std::to_string(gpu_count) +
                                (gpu_count == 1 ? " is" : " are") + " selected" +
                                (cluster::active() ? " in this process (under MPI each process drives one GPU)" : ""),
                            ReasonKind::needs_gpus);
  if (c.available)
    for (const GpuInfo* g : on) {
      if (!g) continue;
      Availability a = c.available(*g);
      if (!a.ok) {
        if (a.kind == ReasonKind::none) a.kind = ReasonKind::unsupported;
        return a;
      }
    }
  return Availability::yes();
}

extern const char* const kBuiltinCostsJson;

namespace {

// The harness's own cost of one sample: holding the stream with the blocking kernel, two events,
// a synchronisation and a clock reading. A modelling assumption of the order of a few host-device
// round trips; the fit per kind corrects it.
constexpr double kSampleOverheadS = 2e-4;

// The costs document in use: the built-in one unless use_costs replaced it (a developer tool's
// replay of an earlier run with another fit).
struct Costs {
  std::map<std::string, CostFit> fits;
  std::map<std::string, int64_t> stops;
  std::map<std::string, std::vector<int64_t>> histories;
};
Costs costs_of(const nlohmann::json& doc) {
  return Costs{parse_cost_fits(doc), parse_sweep_stops(doc), parse_sweep_histories(doc)};
}
Costs& costs() {
  static Costs c = costs_of(nlohmann::json::parse(kBuiltinCostsJson));
  return c;
}

}  // namespace

double op_seconds(const GpuInfo& g, const std::string& key, double work, const std::string& fallback) {
  const Peak* p = g.peak(key);
  if ((!p || !(p->value > 0)) && !fallback.empty()) p = g.peak(fallback);
  if (!p || !(p->value > 0)) return 0;
  return work / p->value;
}

double link_gbps(const GpuInfo& g) {
  const PcieLink& l = g.pcie;
  const std::optional<unsigned> gen = l.gen_max ? l.gen_max : l.gen_current;
  const std::optional<unsigned> width = l.width_max ? l.width_max : l.width_current;
  if (gen && width)
    if (const std::optional<double> r = pcie_gbps(*gen, *width)) return *r;
  return *pcie_gbps(3, 16);
}

namespace {
double sampling_until_s(const MeasureConfig& cfg, double op_s, size_t samples) {
  op_s = std::max(op_s, 0.0);
  const size_t batch = cfg.l2 == L2Mode::cold ? 1 : choose_batch(cfg, op_s);
  const double sample = double(batch) * op_s + kSampleOverheadS;
  const double warm = std::max(cfg.warmup_s, 2 * op_s);
  const size_t n = cfg.fixed_samples > 0 ? cfg.fixed_samples : samples;
  double timed = double(n) * sample;
  if (cfg.fixed_samples == 0) timed = std::min(timed, std::max(cfg.max_time_s, sample));
  return warm + timed;
}
}  // namespace

double sampling_s(const MeasureConfig& cfg, double op_s) { return sampling_until_s(cfg, op_s, cfg.min_samples); }

double sampling_to_cap_s(const MeasureConfig& cfg, double op_s) {
  return sampling_until_s(cfg, op_s, std::max(cfg.max_samples, cfg.min_samples));
}

double one_op_sampling_s(const MeasureConfig& cfg, double op_s, size_t min_samples) {
  return sampling_s(one_op_per_sample(cfg, min_samples), op_s);
}

std::map<std::string, CostFit> parse_cost_fits(const nlohmann::json& doc) {
  if (!doc.is_object() || !doc.contains("kinds") || !doc["kinds"].is_object())
    throw Error("costs.json: no \"kinds\" object");
  std::map<std::string, CostFit> out;
  for (const auto& [kind, f] : doc["kinds"].items()) {
    CostFit c;
    c.fixed_s = f.value("fixed_s", 0.0);
    c.scale = f.value("scale", 1.0);
    c.sample_scale = f.value("sample_scale", c.scale);
    if (!std::isfinite(c.fixed_s) || !std::isfinite(c.scale) || !std::isfinite(c.sample_scale) || c.fixed_s < 0 ||
        c.scale <= 0 || c.sample_scale <= 0)
      throw Error("costs.json: kind " + kind + ": fixed_s must be >= 0, scale and sample_scale > 0");
    out[kind] = c;
  }
  return out;
}

std::optional<CostFit> cost_fit(const std::string& kind) {
  const auto& fits = costs().fits;
  auto it = fits.find(kind);
  if (it == fits.end()) it = fits.find(kind.substr(0, kind.find('/')));  // the family's fit
  if (it == fits.end()) return std::nullopt;
  return it->second;
}

std::map<std::string, int64_t> parse_sweep_stops(const nlohmann::json& doc) {
  std::map<std::string, int64_t> out;
  if (!doc.contains("sweeps")) return out;
  if (!doc["sweeps"].is_object()) throw Error("costs.json: \"sweeps\" is not an object");
  for (const auto& [name, v] : doc["sweeps"].items()) {
    if (!v.is_object() || !v.value("last_batch", nlohmann::json()).is_number_integer() || v["last_batch"].get<int64_t>() < 1)
      throw Error("costs.json: sweep " + name + ": last_batch must be a positive integer");
    out[name] = v["last_batch"].get<int64_t>();
  }
  return out;
}

std::map<std::string, std::vector<int64_t>> parse_sweep_histories(const nlohmann::json& doc) {
  std::map<std::string, std::vector<int64_t>> out;
  if (!doc.contains("sweeps") || !doc["sweeps"].is_object()) return out;
  for (const auto& [name, v] : doc["sweeps"].items()) {
    if (!v.is_object() || !v.contains("last_batches")) continue;
    const nlohmann::json& l = v["last_batches"];
    if (!l.is_array()) throw Error("costs.json: sweep " + name + ": last_batches must be a list of positive integers");
    std::vector<int64_t> b;
    for (const auto& x : l) {
      if (!x.is_number_integer() || x.get<int64_t>() < 1)
        throw Error("costs.json: sweep " + name + ": last_batches must be a list of positive integers");
      b.push_back(x.get<int64_t>());
    }
    out[name] = std::move(b);
  }
  return out;
}

std::vector<int64_t> sweep_last_batches(const std::string& sweep) {
  const auto& h = costs().histories;
  auto it = h.find(sweep);
  return it == h.end() ? std::vector<int64_t>{} : it->second;
}

std::optional<int64_t> sweep_last_batch(const std::string& sweep) {
  const std::map<std::string, int64_t>& stops = costs().stops;
  auto it = stops.find(sweep);
  if (it == stops.end()) it = stops.find(sweep.substr(0, sweep.find('/')));
  if (it == stops.end()) return std::nullopt;
  return it->second;
}

void use_costs(const nlohmann::json& doc) { costs() = costs_of(doc); }  // parsed whole before it replaces

CaseCost apply_fit(CaseCost k, const CostFit& f) {
  k.setup_s = f.fixed_s + f.scale * k.setup_s;
  k.sample_s = f.sample_scale * k.sample_s;
  return k;
}

CaseCost apply_fit(CaseCost k) {
  const std::optional<CostFit> f = cost_fit(k.kind);
  return f ? apply_fit(std::move(k), *f) : k;
}

}  // namespace nb
