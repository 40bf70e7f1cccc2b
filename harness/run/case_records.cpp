#include "run/case_records.hpp"

#include <cstdio>

namespace nb {
using nlohmann::json;

namespace {

json safe_record(const RecordInput& in) {
  try {
    json r = make_record(in);
    add_per_ghz_metrics(r);
    mark_above_peak(r);
    return r;
  } catch (const std::exception& e) {
    RecordInput bad = in;
    bad.out = nullptr;
    bad.status = Status::failed;
    bad.reason_kind = ReasonKind::error;
    bad.reason = std::string("could not summarise the case: ") + e.what();
    return make_record(bad);
  }
}

}  // namespace

// Throughput metrics by name: the bare unit or a name ending in `_<unit>`. Figures that are not
// measured rates (a theoretical rate, a link's nominal speed) are left out.
bool is_rate_metric(const std::string& name) {
  static const char* const kUnits[] = {"tflops", "tops", "gbps", "images_per_s"};
  if (name.rfind("theoretical_", 0) == 0 || name.rfind("link_", 0) == 0) return false;
  for (const char* u : kUnits) {
    const std::string unit(u);
    if (name == unit) return true;
    if (name.size() > unit.size() + 1 && name.compare(name.size() - unit.size() - 1, std::string::npos, "_" + unit) == 0)
      return true;
  }
  return false;
}

bool mark_above_peak(json& record, double limit_pct) {
  if (!record.contains("percent_of_peak") || !record["percent_of_peak"].is_object()) return false;
  const json& p = record["percent_of_peak"];
  if (!p.contains("percent") || !p["percent"].is_number()) return false;
  const double pct = p["percent"].get<double>();
  if (!(pct > limit_pct)) return false;
  if (!record.contains("flags") || !record["flags"].is_array()) record["flags"] = json::array();
  record["flags"].push_back("above_peak");
  if (record.value("status", "") != "ok") return true;  // a failed or wrong case keeps its reason
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f%%", pct);
  record["status"] = "wrong";
  record["reason"] = p.value("metric", std::string("the throughput")) + " is " + buf + " of its peak " +
                     p.value("peak_key", std::string("?")) + " (" + p.value("source", std::string("?")) +
                     "): above the hardware's peak, so the work count, the timing or the peak is wrong";
  record["reason_kind"] = to_string(ReasonKind::above_peak);
  return true;
}

void add_per_ghz_metrics(json& record) {
  if (!record.contains("clocks") || !record.contains("metrics") || !record["metrics"].is_object()) return;
  const json& c = record["clocks"];
  if (!c.is_object() || !c.contains("sm_mhz_during") || !c["sm_mhz_during"].is_number()) return;
  const double ghz = c["sm_mhz_during"].get<double>() / 1000.0;
  if (!(ghz > 0)) return;
  json& m = record["metrics"];
  json add = json::object();
  for (const auto& [k, v] : m.items())
    if (is_rate_metric(k) && v.is_number() && !m.contains(k + "_per_ghz")) add[k + "_per_ghz"] = v.get<double>() / ghz;
  m.update(add);
}

CaseRecords make_case_records(const RecordInput& in, const std::vector<GpuInfo>& gpus) {
  CaseRecords out;
  CaseOutput* o = in.out;
  if (!o || (o->parts.empty() && o->extra_params.empty())) {
    out.records.push_back(safe_record(in));
    if (o) out.analysis = o->analysis;
    return out;
  }
  out.analysis = o->analysis;
  for (CasePart& p : o->parts) {
    Case pc = *in.c;
    pc.name += "/" + p.name;
    pc.params.update(o->extra_params);
    pc.params.update(p.params);
    RecordInput pin = in;
    pin.c = &pc;
    pin.gpus = p.gpus.empty() ? in.gpus : p.gpus;
    const int first = pin.gpus.front();
    pin.gpu = first >= 0 && size_t(first) < gpus.size() ? &gpus[size_t(first)] : in.gpu;
    pin.status = p.status;
    pin.reason = p.reason;
    pin.reason_kind = p.reason_kind;
    // A part skipped or failed before measuring has nothing to summarise.
    pin.out = p.status == Status::ok || p.out.measurement ? &p.out : nullptr;
    if (p.duration_s >= 0) pin.duration_s = p.duration_s;
    out.records.push_back(safe_record(pin));
  }
  const bool own_timing = o->measurement && !o->measurement->samples_s.empty();
  if (o->parts.empty() || own_timing || in.status != Status::ok || o->wrong) {
    Case c = *in.c;
    c.params.update(o->extra_params);
    RecordInput own = in;
    own.c = &c;
    out.records.push_back(safe_record(own));
  }
  return out;
}

void merge_analysis(RunDocument& file, const json& analysis) {
  if (!analysis.is_object()) return;
  for (const auto& [key, value] : analysis.items()) {
    json cur = nullptr;
    const json& doc = file.doc();
    if (doc.contains("analysis") && doc["analysis"].contains(key)) cur = doc["analysis"][key];
    if (cur.is_object() && value.is_object()) cur.merge_patch(value);
    else cur = value;
    file.set_analysis(key, std::move(cur));
  }
}

}  // namespace nb
