// The train family's batch recommendation (see train_analysis.hpp).
#include "train_analysis.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "base/text.hpp"

namespace nb::train {

using nlohmann::json;

namespace {
bool skipped_for_memory(const json& r) {
  if (r.contains("reason_kind") && r["reason_kind"].is_string()) {
    const std::string k = r["reason_kind"];
    return k == "oom" || k == "smaller_oom";
  }
  return false;
}
}  // namespace

json train_recommendation(const json& records, double memory_fraction, int global_batch, const std::vector<GpuCc>& gpus,
                          double plateau_share) {
  struct Point {
    int64_t batch;
    double ips, mem_frac, mem_bytes;
  };
  using Key = std::tuple<int, std::string, std::string>;
  std::map<Key, std::vector<Point>> series;
  std::map<Key, int64_t> smallest_oom;
  for (const auto& r : records) {
    if (r.value("family", "") != "train" || !r.contains("gpus") || r["gpus"].size() != 1) continue;
    const json& prm = r["params"];
    if (!prm.contains("batch") || !prm.contains("precision") || !prm.contains("layout")) continue;
    const Key key{r["gpus"][0].get<int>(), prm["precision"].get<std::string>(), prm["layout"].get<std::string>()};
    const int64_t b = prm["batch"].get<int64_t>();
    if (r["status"] == "ok") {
      const json& m = r["metrics"];
      if (!m.contains("images_per_s") || !m.contains("memory_fraction_x")) continue;
      series[key].push_back({b, m["images_per_s"].get<double>(), m["memory_fraction_x"].get<double>(),
                             m.value("peak_memory_bytes", 0.0)});
    } else if (r["status"] == "skipped" && skipped_for_memory(r)) {
      auto& o = smallest_oom[key];
      if (o == 0 || b < o) o = b;
      series[key];
    }
  }
  json out = json::array();
  for (auto& [key, pts] : series) {
    const auto& [gpu, prec, layout] = key;
    json e = {{"gpu", gpu}, {"precision", prec}, {"layout", layout}, {"memory_fraction_limit", memory_fraction},
              {"plateau_share", plateau_share}, {"global_batch", global_batch}};
    for (const auto& g : gpus)
      if (g.index == gpu && prec == "fp16" && g.cc < 70)
        e["note"] = "compute capability below 7.0: mixed precision here is FP16 storage with FP32 arithmetic";
    if (smallest_oom.count(key)) e["smallest_batch_out_of_memory"] = smallest_oom[key];
    if (pts.empty()) {
      e["batch"] = nullptr;
      e["reason"] = "no batch size fit in memory";
      out.push_back(e);
      continue;
    }
    std::sort(pts.begin(), pts.end(), [](const Point& a, const Point& b) { return a.batch < b.batch; });
    if (pts.size() == 1) {
      const Point& p = pts[0];
      e["batch"] = nullptr;
      e["measured_batch"] = p.batch;
      e["images_per_s"] = p.ips;
      e["memory_fraction"] = p.mem_frac;
      e["reason"] = "one batch measured (batch " + std::to_string(p.batch) + ", " + fmt(p.ips, 0) + " images/s, " +
                    fmt(100 * p.mem_frac, 1) + "% of device memory): run the train sweep (--suite full) for a recommendation";
      out.push_back(e);
      continue;
    }
    const Point* plateau = &pts[0];
    for (const auto& p : pts)
      if (p.ips > plateau->ips) plateau = &p;
    e["plateau_images_per_s"] = plateau->ips;
    e["plateau_batch"] = plateau->batch;
    // The smallest batch at >= plateau_share of the plateau.
    const Point* fast = nullptr;
    for (const auto& p : pts)
      if (p.ips >= plateau_share * plateau->ips) {
        fast = &p;
        break;
      }
    e["throughput_batch"] = fast->batch;
    e["throughput_reason"] = "smallest batch at " + fmt(100 * fast->ips / plateau->ips, 1) + "% of the plateau (" +
                             fmt(plateau->ips, 0) + " images/s at batch " + std::to_string(plateau->batch) + "), >= " +
                             fmt(100 * plateau_share, 0) + "%";
    // The largest batch within the memory fraction.
    const Point* big = nullptr;
    for (const auto& p : pts)
      if (p.mem_frac <= memory_fraction) big = &p;
    if (!big) {
      e["memory_batch"] = nullptr;
      e["memory_reason"] = "no measured batch stays within " + fmt(100 * memory_fraction, 0) + "% of device memory";
      e["batch"] = nullptr;
      e["reason"] = e["memory_reason"];
      out.push_back(e);
      continue;
    }
    e["memory_batch"] = big->batch;
    e["memory_batch_fraction"] = big->mem_frac;
    std::string mr = "largest measured batch within " + fmt(100 * memory_fraction, 0) + "% of device memory (" +
                     fmt(100 * big->mem_frac, 1) + "% used)";
    if (smallest_oom.count(key)) mr += "; batch " + std::to_string(smallest_oom[key]) + " did not fit";
    e["memory_reason"] = mr;
    // The recommendation: the throughput batch when it fits, else the memory batch.
    const Point* pick = fast->batch <= big->batch ? fast : big;
    e["batch"] = pick->batch;
    e["images_per_s"] = pick->ips;
    e["memory_fraction"] = pick->mem_frac;
    e["peak_memory_bytes"] = pick->mem_bytes;
    e["reason"] = pick == fast ? "smallest batch at >= " + fmt(100 * plateau_share, 0) + "% of the plateau, within " +
                                     fmt(100 * memory_fraction, 0) + "% of device memory (" + fmt(100 * pick->mem_frac, 1) + "%)"
                               : "the plateau's batch does not fit in " + fmt(100 * memory_fraction, 0) +
                                     "% of device memory: the largest batch that does";
    // Gradient accumulation to reach the global batch with micro-batches of at most the memory batch.
    const int64_t steps = std::max<int64_t>(1, (int64_t(global_batch) + big->batch - 1) / big->batch);
    const int64_t micro = (int64_t(global_batch) + steps - 1) / steps;
    e["accumulation_steps"] = steps;
    e["micro_batch"] = micro;
    e["accumulation_reason"] =
        steps == 1 ? "global batch " + std::to_string(global_batch) + " fits in one step (at most batch " +
                         std::to_string(big->batch) + " within the memory limit)"
                   : std::to_string(steps) + " accumulation steps of batch " + std::to_string(micro) + " reach global batch " +
                         std::to_string(global_batch) + " (at most batch " + std::to_string(big->batch) +
                         " per step within the memory limit)";
    out.push_back(e);
  }
  return out;
}

std::vector<std::string> train_recommendation_lines(const json& analysis) {
  std::vector<std::string> lines;
  for (const auto& e : analysis) {
    std::string l = "gpu" + std::to_string(e["gpu"].get<int>()) + " ResNet-50 training step " +
                    e["precision"].get<std::string>() + "/" + e["layout"].get<std::string>() + ": ";
    l += e["batch"].is_null() ? std::string("no recommendation: ")
                              : "recommended batch " + std::to_string(e["batch"].get<int64_t>()) + ": ";
    l += e["reason"].get<std::string>();
    if (e.contains("accumulation_reason")) l += "; " + e["accumulation_reason"].get<std::string>();
    if (e.contains("note")) l += " (" + e["note"].get<std::string>() + ")";
    lines.push_back(l);
  }
  return lines;
}

}  // namespace nb::train
