// A record's metric as a typed value: a number with its unit and which way is better. The JSON
// name is the metric's stem and its unit's suffix ("step_time" in ms -> "step_time_ms"; a bare
// unit -> "tflops"), so every name follows the schema's rule by construction (docs/SCHEMA.md,
// `metrics`); the JSON itself stays a flat object of numbers.
#pragma once
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace nb {

enum class Unit {
  tflops, tops, gflops, gbps,  // rates of work
  us, ms, s,                   // times
  bytes, mib, gib,             // sizes
  mhz, w, c,                   // clock, power, temperature
  pct, ratio, x, share,        // percent, plain ratio, a multiple, a fraction of a whole (0..1)
  count, images_per_s, per_ghz,
};
const char* suffix(Unit u);  // "tflops", "ms", "images_per_s", ...

enum class Better { higher, lower, none };
const char* to_string(Better b);  // "higher", "lower", "none"

struct Metric {
  std::string name;  // stem + "_" + suffix, or the suffix alone
  double value = 0;
  Unit unit = Unit::count;
  Better better = Better::none;
};

// The JSON name of a metric: `stem` and the unit's suffix joined by '_' (the suffix alone for an
// empty stem). Throws nb::Error for a stem that already ends in a unit suffix ("time_ms" as a stem
// in ms) or holds anything but [a-z0-9_].
std::string metric_name(const std::string& stem, Unit u);
Metric make_metric(const std::string& stem, Unit u, double value, Better better = Better::none);

// A metric as a family declares it, once (its <family>_metrics.hpp): the stem, the unit and the
// direction. The case writes it (CaseContext::metric(decl, value)) and whatever reads records back
// (advise, validate, analyses) reads it through the same declaration (decl.of(record)), so the
// JSON name is spelled in one place only.
struct MetricDecl {
  const char* stem;
  Unit unit;
  Better better = Better::none;
  std::string name() const;  // metric_name(stem, unit)
  Metric with(double value) const;
  // The record's value of this metric (record.metrics[name()]) when it is a number; nullopt when
  // the record has none, or it is not a number.
  std::optional<double> of(const nlohmann::json& record) const;
};

// A metric whose name holds a key known only at run time (one per GPU: "gpu0_gbps"; one per
// kind of layer: "time_conv_ms"): the name is `prefix` + key, then the unit's suffix; declared
// once all the same, and listed as its pattern ("gpu*_gbps").
struct KeyedMetricDecl {
  const char* prefix;
  Unit unit;
  Better better = Better::none;
  std::string name(const std::string& key) const;  // metric_name(prefix + key, unit)
  std::string name(int index) const { return name(std::to_string(index)); }
  std::string pattern() const;  // prefix + "*" + "_" + the unit's suffix
  Metric with(const std::string& key, double value) const;
};

// The metrics every case may carry, written by the harness itself: the median time of one launch
// (time_us), and a latency a case reports (latency_us: the record's figure of merit when it declares
// no throughput).
inline constexpr MetricDecl kTimeMetric{"time", Unit::us, Better::lower};
inline constexpr MetricDecl kLatencyMetric{"latency", Unit::us, Better::lower};
// The SM clock a case ran at, as NVML reports it (the monitor samples the same figure).
inline constexpr MetricDecl kSmClockMetric{"sm_clock", Unit::mhz};
// The throughput against the theoretical rate a family gave (run/record.cpp: theoretical_<rate>).
inline constexpr MetricDecl kOfTheoreticalMetric{"of_theoretical", Unit::pct, Better::higher};

// The unit a JSON name ends in (the longest suffix that matches), for records read back.
std::optional<Unit> unit_of_name(const std::string& name);

// Every unit, for tests and the schema check.
constexpr Unit kAllUnits[] = {Unit::tflops, Unit::tops, Unit::gflops, Unit::gbps, Unit::us, Unit::ms, Unit::s,
                              Unit::bytes, Unit::mib, Unit::gib, Unit::mhz, Unit::w, Unit::c, Unit::pct, Unit::ratio,
                              Unit::x, Unit::share, Unit::count, Unit::images_per_s, Unit::per_ghz};

}  // namespace nb
