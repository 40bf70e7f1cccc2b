// The conv family's analyses (see conv_analysis.hpp), registered with the harness here.
#include "conv_analysis.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "base/text.hpp"
#include "bench/analysis.hpp"
#include "bench/benchmark.hpp"
#include "bench/precision.hpp"
#include "conv_metrics.hpp"

namespace nb::conv {

using nlohmann::json;

namespace {

// Keyed by host, rank and GPU index (rank -1 and host "" for a run of one process), precision, layout.
using Key = std::tuple<std::string, int, int, std::string, std::string>;
using Series = BatchSeries<Key>;
using Point = BatchPoint;

Series network_series(const json& records) {
  Series s;
  for (const auto& r : records) {
    if (r["family"] != "conv" || r["params"].value("layer", "") != "resnet50_total" || r["gpus"].size() != 1) continue;
    const int rank = r.contains("rank") && r["rank"].is_number_integer() ? r["rank"].get<int>() : -1;
    const auto key = Key(r.value("host", std::string()), rank, r["gpus"][0].get<int>(),
                         r["params"]["precision"].get<std::string>(), r["params"]["layout"].get<std::string>());
    const int64_t b = r["params"]["batch"].get<int64_t>();
    if (r["status"] == "ok") {
      const auto ips = kTrainImagesPerS.of(r), fraction = kMemoryFraction.of(r), peak = kPeakMemory.of(r);
      if (!ips || !fraction || !peak) continue;
      s.add(key, {b, *ips, *fraction, *peak});
    } else if (r["status"] == "skipped" && skipped_for_memory(r)) {
      s.add_out_of_memory(key, b);
    }
  }
  return s;
}

// The pick of one series (its points sorted by batch, at least one) into `e`.
void recommend(json& e, const std::vector<Point>& pts, double memory_fraction, double plateau_share) {
  if (pts.size() == 1) {  // one batch has no plateau to be near: a throughput, not a recommendation
    const Point& p = pts[0];
    e["batch"] = nullptr;
    e["measured_batch"] = p.batch;
    e["train_images_per_s"] = p.images_per_s;
    e["memory_fraction"] = p.memory_fraction;
    e["peak_memory_bytes"] = p.memory_bytes;
    e["reason"] = "one batch measured (batch " + std::to_string(p.batch) + ", " + fmt(p.images_per_s, 0) + " images/s, " +
                  fmt(100 * p.memory_fraction, 1) + "% of device memory): run the conv sweep (--suite full) for a recommendation";
    return;
  }
  double plateau = 0;
  int64_t plateau_batch = 0;
  for (const auto& p : pts)
    if (p.images_per_s > plateau) {
      plateau = p.images_per_s;
      plateau_batch = p.batch;
    }
  e["plateau_images_per_s"] = plateau;
  e["plateau_batch"] = plateau_batch;
  const Point* pick = nullptr;
  for (const auto& p : pts)
    if (p.images_per_s >= plateau_share * plateau && p.memory_fraction <= memory_fraction) {
      pick = &p;
      break;
    }
  if (!pick) {
    e["batch"] = nullptr;
    e["reason"] = "no measured batch reaches " + fmt(100 * plateau_share, 0) + "% of the plateau within " +
                  fmt(100 * memory_fraction, 0) + "% of device memory";
    return;
  }
  e["batch"] = pick->batch;
  e["train_images_per_s"] = pick->images_per_s;
  e["memory_fraction"] = pick->memory_fraction;
  e["peak_memory_bytes"] = pick->memory_bytes;
  e["reason"] = "smallest batch at " + fmt(100 * pick->images_per_s / plateau, 1) + "% of the plateau (" + fmt(plateau, 0) +
                " images/s at batch " + std::to_string(plateau_batch) + ") using " + fmt(100 * pick->memory_fraction, 1) +
                "% of device memory";
}

}  // namespace

json batch_recommendation(const json& records, double memory_fraction, double plateau_share) {
  Series s = network_series(records);
  json out = json::array();
  for (auto& [key, pts] : s.points) {
    const auto& [host, rank, gpu, prec, layout] = key;
    json e = {{"gpu", gpu}, {"precision", prec}, {"layout", layout}, {"memory_fraction_limit", memory_fraction},
              {"plateau_share", plateau_share}};
    if (rank >= 0) e["rank"] = rank;
    if (!host.empty()) e["host"] = host;
    if (const auto oom = s.oom(key)) e["smallest_batch_out_of_memory"] = *oom;
    if (pts.empty()) {
      e["batch"] = nullptr;
      e["reason"] = "no batch size fit in memory";
    } else {
      recommend(e, Series::sorted(pts), memory_fraction, plateau_share);
    }
    out.push_back(e);
  }
  return out;
}

std::vector<std::string> batch_recommendation_lines(const json& analysis) {
  std::vector<std::string> lines;
  for (const auto& e : analysis) {
    std::string l = where_label(e) + " ResNet-50 convolutions " + e["precision"].get<std::string>() + "/" +
                    e["layout"].get<std::string>() + ": ";
    l += e["batch"].is_null() ? std::string("no recommendation: ")
                              : "recommended batch " + std::to_string(e["batch"].get<int64_t>()) + ": ";
    l += e["reason"].get<std::string>();
    lines.push_back(l);
  }
  return lines;
}

namespace {

// The batch-size recommendation over the network cases of a sweep.
const AnalysisRegistrar batch_analysis({
    "batch_recommendation",
    [](const json& records) {
      for (const auto& r : records)
        if (r.value("family", "") == "conv" && r["params"].value("layer", "") == "resnet50_total") return true;
      return false;
    },
    [](const json& records, const AnalysisContext& ctx) { return batch_recommendation(records, ctx.memory_fraction); },
    [](const json& a) { return batch_recommendation_lines(a); }});

// Evidence for the FP16-versus-FP32 verdict (bench/precision.hpp): the network's training
// throughput, best batch of each precision; after the GEMM and the training step.
std::vector<PrecisionRow> network_evidence(const json& records, const GpuBrief& g, std::vector<std::string>&) {
  auto best = [&](const char* prec) {
    return best_metric(records, g, {kTrainImagesPerS.name()},
                       [&](const json& r) { return r["family"] == "conv" && r["params"].value("precision", "") == prec; });
  };
  return {{"conv (network, training images/s): fp16 / fp32", "conv", "fp16", best("fp32"), best("fp16")}};
}
const PrecisionEvidenceRegistrar precision_evidence({"conv", 40, 2, false, true, network_evidence});

}  // namespace
}  // namespace nb::conv
