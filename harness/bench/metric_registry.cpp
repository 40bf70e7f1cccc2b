#include "bench/metric_registry.hpp"

#include <algorithm>
#include <ostream>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "bench/algo_choice.hpp"

namespace nb {
using nlohmann::json;

namespace {

const std::string kCompanion = "_per_ghz";  // run/case_records.hpp: a rate over the SM clock in GHz

bool matches_any(const std::vector<DeclaredMetric>& list, const std::string& name) {
  return std::any_of(list.begin(), list.end(), [&](const DeclaredMetric& d) { return d.matches(name); });
}

std::string shown(const json& v) {
  std::string s = v.dump();
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

}  // namespace

bool DeclaredMetric::matches(const std::string& metric) const {
  const size_t star = name.find('*');
  if (star == std::string::npos) return metric == name;
  const std::string head = name.substr(0, star), tail = name.substr(star + 1);
  if (metric.size() <= head.size() + tail.size()) return false;
  if (metric.compare(0, head.size(), head) != 0) return false;
  if (metric.compare(metric.size() - tail.size(), tail.size(), tail) != 0) return false;
  const std::string key = metric.substr(head.size(), metric.size() - head.size() - tail.size());
  return key.find('_') == std::string::npos;
}

std::vector<FamilyMetrics>& metric_registry() {
  static std::vector<FamilyMetrics> r;
  return r;
}

const FamilyMetrics* find_family_metrics(const std::string& family) {
  for (const FamilyMetrics& f : metric_registry())
    if (f.family == family) return &f;
  return nullptr;
}

const std::vector<DeclaredMetric>& common_metrics() {
  static const std::vector<DeclaredMetric> c = {kTimeMetric, kSmClockMetric, kOfTheoreticalMetric, kWorkspaceMetric};
  return c;
}

MetricsRegistrar::MetricsRegistrar(std::string family, std::initializer_list<DeclaredMetric> metrics) {
  for (FamilyMetrics& f : metric_registry())
    if (f.family == family) throw Error("metrics of family '" + family + "' registered twice");
  metric_registry().push_back({std::move(family), std::vector<DeclaredMetric>(metrics)});
}

bool metric_declared(const std::string& family, const std::string& name) {
  const FamilyMetrics* f = find_family_metrics(family);
  if (!f) return true;
  auto known = [&](const std::string& n) { return matches_any(f->metrics, n) || matches_any(common_metrics(), n); };
  if (known(name)) return true;
  return name.size() > kCompanion.size() && name.compare(name.size() - kCompanion.size(), kCompanion.size(), kCompanion) == 0 &&
         known(name.substr(0, name.size() - kCompanion.size()));
}

std::vector<std::string> undeclared_metrics(const json& doc, const std::string& path) {
  std::vector<std::string> out;
  if (!doc.is_object() || !doc.contains("records") || !doc["records"].is_array()) return out;
  const json& recs = doc["records"];
  for (size_t i = 0; i < recs.size(); ++i) {
    const json& r = recs[i];
    if (!r.is_object() || !r.contains("metrics") || r["metrics"].is_null()) continue;
    const std::string id = r.contains("id") && r["id"].is_string() ? r["id"].get<std::string>() : "";
    const std::string at = path + ": records[" + std::to_string(i) + "]" + (id.empty() ? "" : " (" + id + ")");
    const json& m = r["metrics"];
    if (!m.is_object()) throw Error(at + ": 'metrics' must be an object, found " + shown(m));
    std::string family = id.substr(0, id.find('/'));
    if (family.empty() && r.contains("family") && r["family"].is_string()) family = r["family"].get<std::string>();
    for (const auto& [name, v] : m.items()) {
      if (!v.is_number() && !v.is_null())
        throw Error(at + ": metric '" + name + "' must be a number, found " + shown(v));
      if (metric_declared(family, name)) continue;
      const std::string key = family + "/" + name;
      if (std::find(out.begin(), out.end(), key) == out.end()) out.push_back(key);
    }
  }
  return out;
}

void check_record_metrics(const json& doc, const std::string& path, std::ostream& warn) {
  const std::vector<std::string> names = undeclared_metrics(doc, path);
  if (names.empty()) return;
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  warn << "nodebench: warning: " << path << ": metric(s) no family of this nodebench declares (a file of a newer "
       << "nodebench?): " << list << "\n";
}

}  // namespace nb
