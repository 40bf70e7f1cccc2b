// The example family's analysis (bench/benchmark.hpp, Analysis): per GPU, its fastest fill and how
// much of that rate its smallest fill reaches (what a launch costs a small buffer). Written to the
// result's `analysis.example_fill`; read by the report (families/example.py).
#include <cmath>
#include <map>

#include "base/text.hpp"
#include "bench/benchmark.hpp"
#include "example_metrics.hpp"

namespace nb {
namespace {
using nlohmann::json;

// The fill rate, the throughput the case declares: read back through its declaration
// (example_metrics.hpp), as every metric a family reads.
using example::kFillRate;
double rate(const json* r) { return kFillRate.of(*r).value_or(0.0); }

// An ok example fill record on one GPU with a finite rate.
bool usable(const json& r) {
  if (r.value("family", "") != "example" || r.value("status", "") != "ok") return false;
  if (!r.contains("gpus") || !r["gpus"].is_array() || r["gpus"].size() != 1 || !r["gpus"][0].is_number_integer())
    return false;
  if (!r.contains("params") || !r["params"].is_object() || !r["params"].contains("bytes")) return false;
  const auto v = kFillRate.of(r);
  return v && std::isfinite(*v);
}

json summarise(const json& records, const AnalysisContext&) {
  std::map<int, std::vector<const json*>> by_gpu;
  for (const auto& r : records)
    if (usable(r)) by_gpu[r["gpus"][0].get<int>()].push_back(&r);
  json out = json::array();
  for (const auto& [gpu, recs] : by_gpu) {
    const json* best = recs.front();
    const json* smallest = recs.front();
    for (const json* r : recs) {
      if (rate(r) > rate(best)) best = r;
      if ((*r)["params"]["bytes"].get<int64_t>() < (*smallest)["params"]["bytes"].get<int64_t>()) smallest = r;
    }
    const double top = rate(best);
    out.push_back({{"gpu", gpu},
                   {"best_gbps", top},
                   {"best_id", (*best)["id"]},
                   {"smallest_id", (*smallest)["id"]},
                   {"smallest_share", top > 0 ? rate(smallest) / top : 0.0}});
  }
  return out;
}

std::vector<std::string> lines(const json& result) {
  std::vector<std::string> out;
  for (const auto& e : result)
    out.push_back("example fill: gpu" + std::to_string(e["gpu"].get<int>()) + " at best " +
                  fmt(e["best_gbps"].get<double>(), 1) + " GB/s (" + e["best_id"].get<std::string>() +
                  "); its smallest fill reaches " + fmt(100.0 * e["smallest_share"].get<double>(), 0) + "% of that");
  return out;
}

const AnalysisRegistrar kExampleFill({"example_fill",
                                      [](const json& records) {
                                        for (const auto& r : records)
                                          if (usable(r)) return true;
                                        return false;
                                      },
                                      summarise, lines});

}  // namespace
}  // namespace nb
