#include "run/run_combine.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace nb {
using nlohmann::json;

namespace {

std::string record_key(const json& r) {
  return r.value("id", "") + "|" + r["gpus"].dump() + "|" + r.value("host", "") + "|" +
         (r.contains("rank") ? r["rank"].dump() : "");
}

}  // namespace

json combine_runs(const std::vector<json>& docs, const std::vector<std::string>& files) {
  if (docs.empty()) return json::object();
  std::map<std::string, std::vector<double>> medians;
  double wall = 0;
  for (const json& d : docs) {
    for (const json& r : d.value("records", json::array()))
      if (r["stats"].is_object() && r["stats"]["median"].is_number())
        medians[record_key(r)].push_back(r["stats"]["median"].get<double>());
    if (d.contains("summary") && d["summary"].contains("wall_time_s")) wall += d["summary"]["wall_time_s"].get<double>();
  }
  json out = docs.back();
  for (json& r : out["records"]) {
    const auto it = medians.find(record_key(r));
    if (it == medians.end() || it->second.size() < 2) continue;
    const std::vector<double>& m = it->second;
    const auto [lo, hi] = std::minmax_element(m.begin(), m.end());
    // The between-run noise as nodebench defines it everywhere (the reports' stats.between_run_spread,
    // the history, the noise prior): the sample standard deviation of the log of the medians.
    double sd = 0;
    if (*lo > 0) {
      double mean = 0;
      for (double x : m) mean += std::log(x);
      mean /= double(m.size());
      double var = 0;
      for (double x : m) var += (std::log(x) - mean) * (std::log(x) - mean);
      sd = std::sqrt(var / double(m.size() - 1));
    }
    r["run_to_run"] = {{"runs", m.size()},
                       {"medians_s", m},
                       {"cv", sd},
                       {"max_over_min", *lo > 0 ? *hi / *lo : 0.0}};
  }
  out["runs"] = {{"count", docs.size()}, {"files", files}};
  if (out.contains("summary")) out["summary"]["wall_time_s"] = wall;
  return out;
}

}  // namespace nb
