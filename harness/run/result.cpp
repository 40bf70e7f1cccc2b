#include "run/result.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <random>
#include <sstream>

#include "base/files.hpp"
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

json make_record(const RecordInput& in) {
  json r;
  r["id"] = in.c->id();
  r["family"] = in.c->family;
  r["case"] = in.c->name;
  r["params"] = in.c->params;
  r["gpus"] = in.gpus;
  Status status = in.status;
  std::string reason = in.reason;
  ReasonKind kind = in.reason_kind;
  json flags = json::array();
  json stats = nullptr;
  json samples = json::array();
  json metrics = json::object();
  json pct = nullptr;
  json details = json::object();
  json measurement = json::object();

  if (in.out) {
    CaseOutput& o = *in.out;
    metrics = o.metrics;
    details = o.details;
    const MeasureConfig& cfg = o.config;
    if (o.measurement && !o.measurement->samples_s.empty()) {
      const Measurement& m = *o.measurement;
      const Stats s = compute_stats(m.samples_s);
      stats = stats_to_json(s);
      samples = m.samples_s;
      if (s.median > 0 && !o.throughput_metric.empty() && o.work_per_launch > 0) {
        const double value = o.work_per_launch / s.median;
        metrics[o.throughput_metric] = value;
        // A family may give the theoretical rate it computed (peak: at the measured clock).
        const std::string theo_key = "theoretical_" + o.throughput_metric;
        if (metrics.contains(theo_key) && metrics[theo_key].is_number() && metrics[theo_key].get<double>() > 0)
          metrics["of_theoretical_pct"] = 100.0 * value / metrics[theo_key].get<double>();
        if (in.gpu && !o.peak_key.empty()) {
          if (const Peak* p = in.gpu->peak(o.peak_key)) {
            pct = {{"metric", o.throughput_metric},
                   {"peak", p->value},
                   {"percent", 100.0 * value / p->value},
                   {"peak_key", o.peak_key},
                   {"source", p->source}};
            // Beside the datasheet figure: the peak scaled to the SM clock measured during the case.
            if (p->clock_mhz && *p->clock_mhz > 0 && m.sm_mhz_during && *m.sm_mhz_during > 0) {
              const double at_clock = p->value * *m.sm_mhz_during / *p->clock_mhz;
              pct["peak_clock_mhz"] = *p->clock_mhz;
              pct["sm_mhz"] = *m.sm_mhz_during;
              pct["peak_at_clock"] = at_clock;
              pct["percent_at_clock"] = 100.0 * value / at_clock;
            }
          }
        }
      }
      if (!metrics.contains("time_us")) metrics["time_us"] = s.median * 1e6;
      if (m.stop == StopReason::time_cap) flags.push_back("time_capped");
      if (m.stop == StopReason::max_samples) flags.push_back("sample_capped");
      if (s.cv > cfg.target_cv && cfg.fixed_samples == 0) flags.push_back("noisy");
      if (m.samples_s.size() < cfg.min_samples && cfg.fixed_samples == 0) flags.push_back("few_samples");
      if (m.blocking_timeout) flags.push_back("blocking_timeout");
      bool throttled = m.throttled, capped = m.power_capped;
      if (in.after && in.after->throttle_mask) {
        throttled = throttled || is_throttling(*in.after->throttle_mask);
        capped = capped || is_power_capped(*in.after->throttle_mask);
      }
      if (throttled) flags.push_back("throttled");
      if (capped) flags.push_back("power_capped");
      measurement = {{"l2", cfg.l2 == L2Mode::cold ? "cold" : "hot"},
                     {"warmup_runs", m.warmup_runs},
                     {"batch", m.batch},
                     {"target_cv", cfg.target_cv},
                     {"min_samples", cfg.min_samples},
                     {"max_time_s", cfg.max_time_s},
                     {"fixed_samples", cfg.fixed_samples},
                     {"stop", to_string(m.stop)}};
    } else if (status == Status::ok) {
      status = Status::failed;
      reason = "the case finished without timing anything";
      kind = ReasonKind::error;
    }
    if (o.wrong && (status == Status::ok || status == Status::failed)) {
      status = Status::wrong;
      reason = o.wrong_reason;
      kind = ReasonKind::wrong_result;
    }
  }
  if (!in.nvml_available) flags.push_back("clock_unknown");
  if (status == Status::ok) {
    reason.clear();
    kind = ReasonKind::none;
  } else {
    if (reason.empty()) reason = "no reason given";
    if (kind == ReasonKind::none)
      kind = infer_reason_kind(reason, status == Status::skipped  ? ReasonKind::unsupported
                                       : status == Status::wrong ? ReasonKind::wrong_result
                                                                 : ReasonKind::error);
  }

  // The figure of merit: what the case declared, else its throughput, else its latency or time.
  std::string primary;
  bool higher = true;
  if (in.out && !in.out->primary_metric.empty()) {
    primary = in.out->primary_metric;
    higher = in.out->primary_higher;
  } else if (in.out && !in.out->throughput_metric.empty()) {
    primary = in.out->throughput_metric;
  } else if (metrics.contains("latency_us")) {
    primary = "latency_us";
    higher = false;
  } else if (metrics.contains("time_us")) {
    primary = "time_us";
    higher = false;
  }
  r["primary_metric"] = primary.empty() ? json(nullptr) : json(primary);
  r["primary_better"] = primary.empty() ? json(nullptr) : json(higher ? "higher" : "lower");

  r["status"] = to_string(status);
  r["reason"] = status == Status::ok ? json(nullptr) : json(reason);
  r["reason_kind"] = status == Status::ok ? json(nullptr) : json(to_string(kind));
  r["stats"] = status == Status::ok || status == Status::wrong ? stats : json(nullptr);
  r["samples_s"] = samples;
  r["metrics"] = metrics;
  r["percent_of_peak"] = pct;
  r["flags"] = flags;
  json clocks = json::object();
  if (in.before) clocks["before"] = clock_to_json(*in.before);
  if (in.after) clocks["after"] = clock_to_json(*in.after);
  clocks["sm_mhz_during"] =
      in.out && in.out->measurement && in.out->measurement->sm_mhz_during ? json(*in.out->measurement->sm_mhz_during)
                                                                          : json(nullptr);
  r["clocks"] = clocks;
  r["measurement"] = measurement;
  r["details"] = details;
  r["started_at"] = in.started_at;
  r["duration_s"] = in.duration_s;
  return r;
}

RunDocument::RunDocument(json header) : doc_(std::move(header)), t0_(std::chrono::steady_clock::now()) {
  doc_["schema"] = "nodebench.result";
  doc_["schema_version"] = kSchemaVersion;
  doc_["run_status"] = "running";
  doc_["finished_at"] = nullptr;
  doc_["records"] = json::array();
  doc_["summary"] = summary();
}

json RunDocument::summary() const {
  int ok = 0, skipped = 0, failed = 0, wrong = 0;
  for (const auto& r : doc_["records"]) {
    const std::string s = r.value("status", "");
    ok += s == "ok";
    skipped += s == "skipped";
    failed += s == "failed";
    wrong += s == "wrong";
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  return {{"ok", ok}, {"skipped", skipped}, {"failed", failed}, {"wrong", wrong},
          {"total", ok + skipped + failed + wrong}, {"wall_time_s", wall}};
}

const json& RunDocument::doc() const {
  if (doc_["run_status"] == "running") doc_["summary"] = summary();  // a finished run keeps its wall time
  return doc_;
}

void RunDocument::add(json record) { doc_["records"].push_back(std::move(record)); }

void RunDocument::set_analysis(const std::string& key, json value) { doc_["analysis"][key] = std::move(value); }

void RunDocument::finish(const std::string& run_status, const std::string& error) {
  doc_["summary"] = summary();
  doc_["run_status"] = run_status;
  doc_["run_error"] = error.empty() ? json(nullptr) : json(error);
  doc_["finished_at"] = iso_utc(std::chrono::system_clock::now());
}

}  // namespace nb
