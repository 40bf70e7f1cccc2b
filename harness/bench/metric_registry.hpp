// Every family's metric declarations, registered once from the family's own folder
// (NB_REGISTER_METRICS in its main .cpp), and the harness's common ones: what `nodebench list
// --metrics` prints, and what a result file read back is checked against (check_record_metrics),
// without the harness naming a family.
#pragma once
#include <initializer_list>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "bench/metric.hpp"

namespace nb {

// One declared metric as listed: its JSON name, or the pattern of a keyed one ("gpu*_gbps").
struct DeclaredMetric {
  std::string name;
  Unit unit = Unit::count;
  Better better = Better::none;
  DeclaredMetric(const MetricDecl& d) : name(d.name()), unit(d.unit), better(d.better) {}  // NOLINT: implicit
  DeclaredMetric(const KeyedMetricDecl& d) : name(d.pattern()), unit(d.unit), better(d.better) {}  // NOLINT
  // Whether a record's metric `metric` is this one (a pattern's '*' stands for one key, no '_' in it).
  bool matches(const std::string& metric) const;
};

struct FamilyMetrics {
  std::string family;
  std::vector<DeclaredMetric> metrics;
};
// Every family's declarations, in registration order (one entry per family).
std::vector<FamilyMetrics>& metric_registry();
const FamilyMetrics* find_family_metrics(const std::string& family);
// What the harness itself writes on a record of any family (time_us, of_theoretical_pct, the
// SM clock, an algorithm's workspace) besides each rate's `<rate>_per_ghz` companion; a latency
// (kLatencyMetric) is registered by the families that write one.
const std::vector<DeclaredMetric>& common_metrics();

struct MetricsRegistrar {
  MetricsRegistrar(std::string family, std::initializer_list<DeclaredMetric> metrics);
};
// In a family's own .cpp, once: NB_REGISTER_METRICS("gemm", {kTflops, kTops});
#define NB_REGISTER_METRICS(family, ...) \
  static const ::nb::MetricsRegistrar nb_family_metrics_registrar_(family, __VA_ARGS__)

// Whether a record of `family` may carry the metric `name`: its family's declaration, a common
// one, or a `_per_ghz` companion of either. A family nobody registered (not built, or of a newer
// nodebench) is not judged: true.
bool metric_declared(const std::string& family, const std::string& name);

// The edge check of a result document read back from `path`: every record's `metrics` must be an
// object of numbers (null: a value the run could not compute), else nb::Error naming the file,
// the record's id and the metric; returns "family/metric" for each name its family does not
// declare (each once, in order): a file of a newer nodebench may carry more.
std::vector<std::string> undeclared_metrics(const nlohmann::json& doc, const std::string& path);
// The same, naming the undeclared ones on `warn` in one line per file.
void check_record_metrics(const nlohmann::json& doc, const std::string& path, std::ostream& warn);

}  // namespace nb
