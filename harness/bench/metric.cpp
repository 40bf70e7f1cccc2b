#include "bench/metric.hpp"

#include <cstring>

#include <nlohmann/json.hpp>

#include "base/error.hpp"

namespace nb {

const char* suffix(Unit u) {
  switch (u) {
    case Unit::tflops: return "tflops";
    case Unit::tops: return "tops";
    case Unit::gflops: return "gflops";
    case Unit::gbps: return "gbps";
    case Unit::us: return "us";
    case Unit::ms: return "ms";
    case Unit::s: return "s";
    case Unit::bytes: return "bytes";
    case Unit::mib: return "mib";
    case Unit::gib: return "gib";
    case Unit::mhz: return "mhz";
    case Unit::w: return "w";
    case Unit::c: return "c";
    case Unit::pct: return "pct";
    case Unit::ratio: return "ratio";
    case Unit::x: return "x";
    case Unit::share: return "share";
    case Unit::count: return "count";
    case Unit::images_per_s: return "images_per_s";
    case Unit::per_ghz: return "per_ghz";
  }
  return "count";
}

const char* to_string(Better b) { return b == Better::higher ? "higher" : b == Better::lower ? "lower" : "none"; }

std::optional<Unit> unit_of_name(const std::string& name) {
  std::optional<Unit> best;
  size_t best_len = 0;
  for (Unit u : kAllUnits) {
    const std::string s = suffix(u);
    const bool bare = name == s;
    const bool tail = name.size() > s.size() + 1 && name.compare(name.size() - s.size(), s.size(), s) == 0 &&
                      name[name.size() - s.size() - 1] == '_';
    if ((bare || tail) && s.size() > best_len) {
      best = u;
      best_len = s.size();
    }
  }
  return best;
}

std::string metric_name(const std::string& stem, Unit u) {
  for (char ch : stem)
    if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_'))
      throw Error("metric stem '" + stem + "': only a-z, 0-9 and _");
  if (stem.empty()) {
    // The schema allows a bare name for these units only (`tflops`, `time_us` is a stem's).
    for (Unit bare : {Unit::tflops, Unit::tops, Unit::gbps, Unit::us, Unit::ms, Unit::bytes, Unit::ratio, Unit::count,
                      Unit::images_per_s})
      if (u == bare) return suffix(u);
    throw Error(std::string("a metric in ") + suffix(u) + " needs a stem (e.g. step_" + suffix(u) + ")");
  }
  if (stem.back() == '_' || stem.front() == '_') throw Error("metric stem '" + stem + "': no leading or trailing _");
  if (const std::optional<Unit> already = unit_of_name(stem); already && *already == u)
    throw Error("metric stem '" + stem + "' already ends in its unit '" + suffix(u) + "'");
  return stem + "_" + suffix(u);
}

Metric make_metric(const std::string& stem, Unit u, double value, Better better) {
  return Metric{metric_name(stem, u), value, u, better};
}

std::string MetricDecl::name() const { return metric_name(stem, unit); }

Metric MetricDecl::with(double value) const { return make_metric(stem, unit, value, better); }

std::optional<double> MetricDecl::of(const nlohmann::json& record) const {
  if (!record.is_object()) return std::nullopt;
  const auto m = record.find("metrics");
  if (m == record.end() || !m->is_object()) return std::nullopt;
  const auto v = m->find(name());
  if (v == m->end() || !v->is_number()) return std::nullopt;
  return v->get<double>();
}

std::string KeyedMetricDecl::name(const std::string& key) const { return metric_name(prefix + key, unit); }

std::string KeyedMetricDecl::pattern() const { return std::string(prefix) + "*_" + suffix(unit); }

Metric KeyedMetricDecl::with(const std::string& key, double value) const {
  return make_metric(prefix + key, unit, value, better);
}

}  // namespace nb
