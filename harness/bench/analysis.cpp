#include "bench/analysis.hpp"

#include <cmath>
#include <cstdlib>

namespace nb {
using nlohmann::json;

bool record_on(const json& r, const GpuBrief& g) {
  if (!r.contains("gpus") || !r["gpus"].is_array() || r["gpus"].size() != 1 || !r["gpus"][0].is_number_integer() ||
      r["gpus"][0].get<int>() != g.index)
    return false;
  if (g.rank >= 0 && (!r.contains("rank") || !r["rank"].is_number_integer() || r["rank"].get<int>() != g.rank)) return false;
  if (!g.host.empty() && r.value("host", std::string()) != g.host) return false;
  return true;
}

std::vector<GpuBrief> gpu_briefs(const json& env, const std::vector<GpuBrief>& local) {
  if (!env.is_object() || !env.contains("ranks") || !env["ranks"].is_array() || env["ranks"].empty()) return local;
  std::vector<GpuBrief> out;
  for (const auto& rk : env["ranks"]) {
    GpuBrief b;
    b.rank = rk.value("rank", -1);
    b.host = rk.value("host", std::string());
    b.index = rk.value("gpu", 0);
    b.name = rk.value("gpu_name", std::string());
    const std::string bus = rk.value("pci_bus_id", std::string());
    // The compute capability from the rank's node: the GPU with its bus id, else its index.
    if (env.contains("nodes") && env["nodes"].is_array())
      for (const auto& n : env["nodes"]) {
        if (n.value("hostname", std::string()) != b.host || !n.contains("environment")) continue;
        const json& ne = n["environment"];
        if (!ne.contains("gpus") || !ne["gpus"].is_array()) continue;
        const json* hit = nullptr;
        for (const auto& g : ne["gpus"])
          if (!bus.empty() && g.value("pci_bus_id", std::string()) == bus) hit = &g;
        if (!hit)
          for (const auto& g : ne["gpus"])
            if (g.value("index", -1) == b.index) hit = &g;
        if (hit) {
          const std::string cc = hit->value("compute_capability", std::string());
          if (const size_t dot = cc.find('.'); dot != std::string::npos) {
            b.cc_major = std::atoi(cc.substr(0, dot).c_str());
            b.cc_minor = std::atoi(cc.substr(dot + 1).c_str());
          }
          if (b.name.empty()) b.name = hit->value("name", std::string());
        }
      }
    out.push_back(b);
  }
  return out;
}

std::string where_label(const json& e) {
  std::string l;
  if (e.contains("rank") && e["rank"].is_number_integer()) l += "rank " + std::to_string(e["rank"].get<int>()) + " ";
  if (e.contains("host") && e["host"].is_string() && !e["host"].get<std::string>().empty())
    l += "(" + e["host"].get<std::string>() + ") ";
  return l + "gpu" + std::to_string(e.value("gpu", 0));
}

double best_metric(const json& records, const GpuBrief& g, const std::vector<std::string>& metrics,
                   const std::function<bool(const json&)>& pred) {
  double best = NAN;
  for (const auto& r : records) {
    if (r.value("status", "") != "ok" || !record_on(r, g) || !pred(r) || !r.contains("metrics")) continue;
    const json& m = r["metrics"];
    for (const auto& name : metrics) {
      if (!m.contains(name) || !m[name].is_number()) continue;
      const double v = m[name].get<double>();
      if (std::isfinite(v) && (!std::isfinite(best) || v > best)) best = v;
      break;
    }
  }
  return best;
}

bool skipped_for_memory(const json& r) {
  if (r.contains("reason_kind") && r["reason_kind"].is_string()) {
    const std::string k = r["reason_kind"];
    return k == "oom" || k == "smaller_oom";
  }
  return r.contains("reason") && r["reason"].is_string() && r["reason"].get<std::string>().rfind("out of memory", 0) == 0;
}

}  // namespace nb
