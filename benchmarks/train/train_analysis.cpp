// The train family's batch recommendation (see train_analysis.hpp).
#include "train_analysis.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>

#include "base/text.hpp"
#include "bench/analysis.hpp"
#include "bench/benchmark.hpp"
#include "bench/precision.hpp"
#include "train_metrics.hpp"

namespace nb::train {

using nlohmann::json;


namespace {

using Key = std::tuple<int, std::string, std::string>;  // GPU, precision, layout
using Series = BatchSeries<Key>;
using Point = BatchPoint;

Series step_series(const json& records) {
  Series s;
  for (const auto& r : records) {
    if (r.value("family", "") != "train" || !r.contains("gpus") || r["gpus"].size() != 1) continue;
    const json& prm = r["params"];
    if (!prm.contains("batch") || !prm.contains("precision") || !prm.contains("layout")) continue;
    const Key key{r["gpus"][0].get<int>(), prm["precision"].get<std::string>(), prm["layout"].get<std::string>()};
    const int64_t b = prm["batch"].get<int64_t>();
    if (r["status"] == "ok") {
      const auto ips = kImagesPerS.of(r), fraction = kMemoryFraction.of(r);
      if (!ips || !fraction) continue;
      s.add(key, {b, *ips, *fraction, kPeakMemory.of(r).value_or(0.0)});
    } else if (r["status"] == "skipped" && skipped_for_memory(r)) {
      s.add_out_of_memory(key, b);
    }
  }
  return s;
}

// Gradient accumulation to reach the global batch with micro-batches of at most `big`.
void accumulation(json& e, int global_batch, int64_t big) {
  const int64_t steps = std::max<int64_t>(1, (int64_t(global_batch) + big - 1) / big);
  const int64_t micro = (int64_t(global_batch) + steps - 1) / steps;
  e["accumulation_steps"] = steps;
  e["micro_batch"] = micro;
  e["accumulation_reason"] =
      steps == 1 ? "global batch " + std::to_string(global_batch) + " fits in one step (at most batch " +
                       std::to_string(big) + " within the memory limit)"
                 : std::to_string(steps) + " accumulation steps of batch " + std::to_string(micro) + " reach global batch " +
                       std::to_string(global_batch) + " (at most batch " + std::to_string(big) +
                       " per step within the memory limit)";
}

// The recommendation of one series of two or more measured batches (sorted by batch) into `e`.
void recommend(json& e, const std::vector<Point>& pts, double memory_fraction, int global_batch, double plateau_share,
               std::optional<int64_t> smallest_oom) {
  const Point* plateau = &pts[0];
  for (const auto& p : pts)
    if (p.images_per_s > plateau->images_per_s) plateau = &p;
  e["plateau_images_per_s"] = plateau->images_per_s;
  e["plateau_batch"] = plateau->batch;
  // The smallest batch at >= plateau_share of the plateau.
  const Point* fast = nullptr;
  for (const auto& p : pts)
    if (p.images_per_s >= plateau_share * plateau->images_per_s) {
      fast = &p;
      break;
    }
  e["throughput_batch"] = fast->batch;
  e["throughput_reason"] = "smallest batch at " + fmt(100 * fast->images_per_s / plateau->images_per_s, 1) + "% of the plateau (" +
                           fmt(plateau->images_per_s, 0) + " images/s at batch " + std::to_string(plateau->batch) + "), >= " +
                           fmt(100 * plateau_share, 0) + "%";
  // The largest batch within the memory fraction.
  const Point* big = nullptr;
  for (const auto& p : pts)
    if (p.memory_fraction <= memory_fraction) big = &p;
  if (!big) {
    e["memory_batch"] = nullptr;
    e["memory_reason"] = "no measured batch stays within " + fmt(100 * memory_fraction, 0) + "% of device memory";
    e["batch"] = nullptr;
    e["reason"] = e["memory_reason"];
    return;
  }
  e["memory_batch"] = big->batch;
  e["memory_batch_fraction"] = big->memory_fraction;
  std::string mr = "largest measured batch within " + fmt(100 * memory_fraction, 0) + "% of device memory (" +
                   fmt(100 * big->memory_fraction, 1) + "% used)";
  if (smallest_oom) mr += "; batch " + std::to_string(*smallest_oom) + " did not fit";
  e["memory_reason"] = mr;
  // The recommendation: the throughput batch when it fits, else the memory batch.
  const Point* pick = fast->batch <= big->batch ? fast : big;
  e["batch"] = pick->batch;
  e["images_per_s"] = pick->images_per_s;
  e["memory_fraction"] = pick->memory_fraction;
  e["peak_memory_bytes"] = pick->memory_bytes;
  e["reason"] = pick == fast ? "smallest batch at >= " + fmt(100 * plateau_share, 0) + "% of the plateau, within " +
                                   fmt(100 * memory_fraction, 0) + "% of device memory (" + fmt(100 * pick->memory_fraction, 1) + "%)"
                             : "the plateau's batch does not fit in " + fmt(100 * memory_fraction, 0) +
                                   "% of device memory: the largest batch that does";
  accumulation(e, global_batch, big->batch);
}

}  // namespace

json train_recommendation(const json& records, double memory_fraction, int global_batch, const std::vector<GpuCc>& gpus,
                          double plateau_share) {
  Series s = step_series(records);
  json out = json::array();
  for (auto& [key, pts] : s.points) {
    const auto& [gpu, prec, layout] = key;
    json e = {{"gpu", gpu}, {"precision", prec}, {"layout", layout}, {"memory_fraction_limit", memory_fraction},
              {"plateau_share", plateau_share}, {"global_batch", global_batch}};
    for (const auto& g : gpus)
      if (g.index == gpu && prec == "fp16" && g.cc < 70)
        e["note"] = "compute capability below 7.0: mixed precision here is FP16 storage with FP32 arithmetic";
    const auto oom = s.oom(key);
    if (oom) e["smallest_batch_out_of_memory"] = *oom;
    pts = Series::sorted(pts);
    if (pts.empty()) {
      e["batch"] = nullptr;
      e["reason"] = "no batch size fit in memory";
    } else if (pts.size() == 1) {
      const Point& p = pts[0];
      e["batch"] = nullptr;
      e["measured_batch"] = p.batch;
      e["images_per_s"] = p.images_per_s;
      e["memory_fraction"] = p.memory_fraction;
      e["reason"] = "one batch measured (batch " + std::to_string(p.batch) + ", " + fmt(p.images_per_s, 0) + " images/s, " +
                    fmt(100 * p.memory_fraction, 1) + "% of device memory): run the train sweep (--suite full) for a recommendation";
    } else {
      recommend(e, pts, memory_fraction, global_batch, plateau_share, oom);
    }
    out.push_back(e);
  }
  return out;
}

std::string fp16_arithmetic_note(bool fp16, int cc_major, int cc_minor) {
  if (!fp16 || cc_major * 10 + cc_minor >= 70) return "";
  return "compute capability " + std::to_string(cc_major) + "." + std::to_string(cc_minor) +
         " (below 7.0): mixed precision runs FP16 storage with FP32 arithmetic (no FP16 tensor cores)";
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

namespace {

// Evidence for the FP16-versus-FP32 verdict (bench/precision.hpp): the whole ResNet-50 training
// step, best batch of each precision; preferred after the GEMM. Its records alone do not make
// the verdict run (the family has its own recommendation, train_recommendation).
std::vector<PrecisionRow> step_evidence(const json& records, const GpuBrief& g, std::vector<std::string>& notes) {
  auto best = [&](const char* prec) {
    return best_metric(records, g, {kImagesPerS.name()},
                       [&](const json& r) { return r["family"] == "train" && r["params"].value("precision", "") == prec; });
  };
  const double fp32 = best("fp32"), fp16 = best("fp16");
  if (g.cc_major < 7 && std::isfinite(fp32) && std::isfinite(fp16) && fp32 > 0)
    notes.push_back("the training step here runs FP16 storage with FP32 arithmetic");
  return {{"train (ResNet-50 step, images/s): fp16 / fp32", "train", "fp16", fp32, fp16}};
}
const PrecisionEvidenceRegistrar precision_evidence({"train", 50, 1, false, false, step_evidence});

}  // namespace
}  // namespace nb::train
