#include "run/record.hpp"

#include <algorithm>

#include "base/error.hpp"
#include "base/stats.hpp"

namespace nb {
using nlohmann::json;

json clock_to_json(const ClockSnapshot& s) {
  auto o = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  return {{"sm_mhz", o(s.sm_mhz)},
          {"mem_mhz", o(s.mem_mhz)},
          {"temperature_c", o(s.temperature_c)},
          {"power_w", o(s.power_w)},
          {"throttle_reasons", s.throttle_mask ? json(throttle_reason_names(*s.throttle_mask)) : json::array()},
          {"throttle_mask", s.throttle_mask ? json(*s.throttle_mask) : json(nullptr)}};
}

json PeakShare::to_json() const {
  json p = {{"metric", metric}, {"peak", peak}, {"percent", percent}, {"peak_key", peak_key}, {"source", source}};
  if (peak_clock_mhz && sm_mhz) {
    const double at_clock = peak * *sm_mhz / *peak_clock_mhz;
    p["peak_clock_mhz"] = *peak_clock_mhz;
    p["sm_mhz"] = *sm_mhz;
    p["peak_at_clock"] = at_clock;
    p["percent_at_clock"] = percent * *peak_clock_mhz / *sm_mhz;
  }
  return p;
}

void Record::set(Metric m) {
  for (auto& have : metrics)
    if (have.name == m.name) {
      have = std::move(m);
      return;
    }
  metrics.push_back(std::move(m));
}

const Metric* Record::metric(const std::string& name) const {
  for (const auto& m : metrics)
    if (m.name == name) return &m;
  return nullptr;
}

json Record::to_json() const {
  const bool ok = status == Status::ok;
  json m = json::object();
  for (const auto& x : metrics) m[x.name] = x.value;
  json r = {{"id", id}, {"family", family}, {"case", name}, {"params", params}, {"gpus", gpus}};
  r["primary_metric"] = primary ? json(primary->name) : json(nullptr);
  r["primary_better"] = primary ? json(primary->better == Better::lower ? "lower" : "higher") : json(nullptr);
  r["status"] = to_string(status);
  r["reason"] = ok ? json(nullptr) : json(reason);
  r["reason_kind"] = ok ? json(nullptr) : json(to_string(reason_kind));
  r["stats"] = ok || status == Status::wrong ? stats : json(nullptr);
  r["samples_s"] = samples_s;
  r["metrics"] = m;
  r["percent_of_peak"] = peak ? peak->to_json() : json(nullptr);
  r["flags"] = flags;
  r["clocks"] = clocks;
  r["measurement"] = measurement;
  r["details"] = details;
  r["started_at"] = started_at;
  r["duration_s"] = duration_s;
  return r;
}

namespace {

// What the case set: its typed metrics, and (until every family sets typed ones) the names it
// wrote into the JSON, whose unit their suffix gives; a name without one is refused.
void take_metrics(Record& r, const CaseOutput& o) {
  for (const auto& [name, v] : o.metrics.items()) {
    if (!v.is_number()) continue;
    const std::optional<Unit> u = unit_of_name(name);
    if (!u) throw Error("metric '" + name + "' names no unit (docs/SCHEMA.md, metrics)");
    r.set(Metric{name, v.get<double>(), *u, Better::none});
  }
  for (const auto& m : o.typed_metrics) r.set(m);
}

void add_peak(Record& r, const CaseOutput& o, const GpuInfo* gpu, double value, const Measurement& m) {
  if (!gpu || o.peak_key.empty()) return;
  const Peak* p = gpu->peak(o.peak_key);
  if (!p) return;
  PeakShare s{o.throughput_metric, o.peak_key, p->source, p->value, 100.0 * value / p->value, std::nullopt, std::nullopt};
  if (p->clock_mhz && *p->clock_mhz > 0 && m.sm_mhz_during && *m.sm_mhz_during > 0) {
    s.peak_clock_mhz = *p->clock_mhz;
    s.sm_mhz = *m.sm_mhz_during;
  }
  r.peak = s;
}

void add_flags(Record& r, const RecordInput& in, const MeasureConfig& cfg, const Measurement& m, double cv) {
  if (m.stop == StopReason::time_cap) r.flags.push_back("time_capped");
  if (m.stop == StopReason::max_samples) r.flags.push_back("sample_capped");
  if (cv > cfg.target_cv && cfg.fixed_samples == 0) r.flags.push_back("noisy");
  if (m.samples_s.size() < cfg.min_samples && cfg.fixed_samples == 0) r.flags.push_back("few_samples");
  if (m.blocking_timeout) r.flags.push_back("blocking_timeout");
  bool throttled = m.throttled, capped = m.power_capped;
  if (in.after && in.after->throttle_mask) {
    throttled = throttled || is_throttling(*in.after->throttle_mask);
    capped = capped || is_power_capped(*in.after->throttle_mask);
  }
  if (throttled) r.flags.push_back("throttled");
  if (capped) r.flags.push_back("power_capped");
}

// The samples: stats, the throughput from the median, percent of peak, flags, the sampling.
void add_timing(Record& r, const RecordInput& in, const CaseOutput& o) {
  const Measurement& m = *o.measurement;
  const MeasureConfig& cfg = o.config;
  const Stats s = compute_stats(m.samples_s);
  r.stats = stats_to_json(s);
  r.samples_s = m.samples_s;
  if (s.median > 0 && !o.throughput_metric.empty() && o.work_per_launch > 0) {
    const double value = o.work_per_launch / s.median;
    const std::optional<Unit> u = unit_of_name(o.throughput_metric);
    if (!u) throw Error("throughput metric '" + o.throughput_metric + "' names no unit");
    r.set(Metric{o.throughput_metric, value, *u, Better::higher});
    // A family may give the theoretical rate it computed (peak: at the measured clock).
    if (const Metric* theo = r.metric("theoretical_" + o.throughput_metric); theo && theo->value > 0)
      r.set(kOfTheoreticalMetric.with(100.0 * value / theo->value));
    add_peak(r, o, in.gpu, value, m);
  }
  if (!r.metric(kTimeMetric.name())) r.set(kTimeMetric.with(s.median * 1e6));
  add_flags(r, in, cfg, m, s.cv);
  r.measurement = {{"l2", cfg.l2 == L2Mode::cold ? "cold" : "hot"},
                   {"warmup_runs", m.warmup_runs},
                   {"batch", m.batch},
                   {"target_cv", cfg.target_cv},
                   {"min_samples", cfg.min_samples},
                   {"max_time_s", cfg.max_time_s},
                   {"fixed_samples", cfg.fixed_samples},
                   {"to_cap", cfg.to_cap},
                   {"stop", to_string(m.stop)}};
}

// The figure of merit: what the case declared, else its throughput, else its latency or time.
void set_primary(Record& r, const CaseOutput* o) {
  auto pick = [&](const std::string& name, Better b) {
    if (const Metric* m = r.metric(name)) {
      Metric p = *m;
      p.better = b;
      r.primary = p;
      return true;
    }
    return false;
  };
  if (o && !o->primary_metric.empty()) {
    // Named even when the value is missing (a failed case): the record still says what it measures.
    if (!pick(o->primary_metric, o->primary_higher ? Better::higher : Better::lower))
      r.primary = Metric{o->primary_metric, 0, unit_of_name(o->primary_metric).value_or(Unit::count),
                         o->primary_higher ? Better::higher : Better::lower};
  } else if (o && !o->throughput_metric.empty()) {
    if (!pick(o->throughput_metric, Better::higher))
      r.primary = Metric{o->throughput_metric, 0, unit_of_name(o->throughput_metric).value_or(Unit::count), Better::higher};
  } else if (!pick(kLatencyMetric.name(), Better::lower)) {
    pick(kTimeMetric.name(), Better::lower);
  }
}

void settle_status(Record& r, const RecordInput& in) {
  r.status = in.status;
  r.reason = in.reason;
  r.reason_kind = in.reason_kind;
  if (in.out) {
    const CaseOutput& o = *in.out;
    if ((!o.measurement || o.measurement->samples_s.empty()) && r.status == Status::ok) {
      r.status = Status::failed;
      r.reason = "the case finished without timing anything";
      r.reason_kind = ReasonKind::error;
    }
    if (o.wrong && (r.status == Status::ok || r.status == Status::failed)) {
      r.status = Status::wrong;
      r.reason = o.wrong_reason;
      r.reason_kind = ReasonKind::wrong_result;
    }
  }
  if (r.status == Status::ok) {
    r.reason.clear();
    r.reason_kind = ReasonKind::none;
    return;
  }
  if (r.reason.empty()) r.reason = "no reason given";
  // Every skip and failure of ours names its kind; a caller that named none gets its status's.
  if (r.reason_kind == ReasonKind::none)
    r.reason_kind = r.status == Status::skipped ? ReasonKind::unsupported
                    : r.status == Status::wrong ? ReasonKind::wrong_result
                                                : ReasonKind::error;
}

}  // namespace

Record build_record(const RecordInput& in) {
  Record r;
  r.id = in.c->id();
  r.family = in.c->family;
  r.name = in.c->name;
  r.params = in.c->params;
  r.gpus = in.gpus;
  settle_status(r, in);
  if (in.out) {
    take_metrics(r, *in.out);
    r.details = in.out->details;
    if (in.out->measurement && !in.out->measurement->samples_s.empty()) add_timing(r, in, *in.out);
    for (const auto& f : in.out->flags) r.flags.push_back(f);  // the family's (single_rank, ...)
  }
  if (!in.nvml_available && !in.gpus.empty()) r.flags.push_back("clock_unknown");  // a host-only record has no GPU clock
  set_primary(r, in.out);
  if (in.before) r.clocks["before"] = clock_to_json(*in.before);
  if (in.after) r.clocks["after"] = clock_to_json(*in.after);
  r.clocks["sm_mhz_during"] = in.out && in.out->measurement && in.out->measurement->sm_mhz_during
                                  ? json(*in.out->measurement->sm_mhz_during)
                                  : json(nullptr);
  r.started_at = in.started_at;
  r.duration_s = in.duration_s;
  return r;
}

}  // namespace nb
