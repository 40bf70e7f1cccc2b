// The recommendation and the text of `nodebench advise` (docs/ADVISE.md).
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "advise/advice.hpp"
#include "base/error.hpp"

namespace nb::advise {
namespace {

using nlohmann::json;

std::string fmt(double v, int prec = 1) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(prec) << v;
  return os.str();
}

json statement(const std::string& topic, const std::string& text) { return {{"topic", topic}, {"text", text}}; }

std::string row_figures(const json& r) {
  return fmt(r["images_per_s"].get<double>(), 0) + " images/s, efficiency " +
         fmt(100 * r["efficiency"].get<double>()) + "%, step " + fmt(r["step_ms"].get<double>(), 2) + " ms (compute " +
         fmt(r["accumulation"].get<int>() * r["compute_ms"].get<double>(), 2) + " ms, exposed all-reduce " +
         fmt(r["exposed_comm_ms"].get<double>(), 2) + " ms of " + fmt(r["allreduce_ms"].get<double>(), 2) + " ms)";
}

}  // namespace

json recommend(const json& advice, const CommModel& comm, const std::vector<std::string>& fp16,
               std::optional<bool> fp16_pays, const AdviseOptions& o) {
  json out = json::array();
  const json& rows = advice["rows"];
  if (rows.empty()) return out;
  const std::string label = advice["label"].get<std::string>();
  const std::string tag = " [" + label + "]";
  // The largest GPU count, at the base accumulation (the smallest k of that count).
  int top = 0;
  for (const auto& r : rows) top = std::max(top, r["gpus"].get<int>());
  int kmin = 1 << 30;
  for (const auto& r : rows)
    if (r["gpus"] == top) kmin = std::min(kmin, r["accumulation"].get<int>());
  // Rows whose step is a real training step are preferred over the conv fallback (convolutions only).
  bool any_train = false;
  for (const auto& r : rows) any_train = any_train || r["step_kind"] != "conv";
  std::vector<const json*> at_top;
  for (const auto& r : rows)
    if (r["gpus"] == top && r["accumulation"] == kmin && (!any_train || r["step_kind"] != "conv")) at_top.push_back(&r);
  const json* best = *std::max_element(at_top.begin(), at_top.end(), [](const json* a, const json* b) {
    return (*a)["images_per_s"].get<double>() < (*b)["images_per_s"].get<double>();
  });
  // Per-GPU batch: the smallest batch of the best precision and layout within 5% of the best.
  const json* chosen = best;
  for (const json* r : at_top)
    if ((*r)["precision"] == (*best)["precision"] && (*r)["layout"] == (*best)["layout"] &&
        (*r)["images_per_s"].get<double>() >= 0.95 * (*best)["images_per_s"].get<double>() &&
        (*r)["batch"].get<int>() < (*chosen)["batch"].get<int>())
      chosen = r;
  const json& c = *chosen;
  const int nodes = c["nodes"].get<int>();
  const double eff = c["efficiency"].get<double>();

  // Strategy.
  std::string strat;
  if (top == 1) {
    strat = "One GPU: no distribution strategy needed; at batch " + std::to_string(c["batch"].get<int>()) + ": " +
            fmt(c["images_per_s"].get<double>(), 0) + " images/s.";
  } else if (nodes <= 1) {
    strat = "Synchronous all-reduce data parallel with NCCL on one node (TensorFlow MirroredStrategy, PyTorch DDP) "
            "over " + std::to_string(top) + " GPUs: " + row_figures(c) + "; " + c["comm_method"].get<std::string>() + ".";
  } else {
    strat = "MultiWorkerMirroredStrategy / multi-node PyTorch DDP (NCCL) over " + std::to_string(nodes) + " nodes, " +
            std::to_string(top) + " GPUs: " + row_figures(c) + "; " + c["comm_method"].get<std::string>() + ".";
  }
  if (top > 1 && eff < 1.0 - kCommBoundShare) {
    strat += " Efficiency below " + fmt(100 * (1 - kCommBoundShare), 0) + "% (bottleneck: " +
             c["bottleneck"].get<std::string>() + ", " + c["why"].get<std::string>() +
             "): raise the per-GPU batch or accumulate gradients (--global-batch) so the all-reduce is amortised.";
  }
  out.push_back(statement("strategy", strat + tag));

  // Per-GPU batch.
  std::string bt = "Per-GPU batch " + std::to_string(c["batch"].get<int>()) + " (" + c["precision"].get<std::string>() +
                   ", " + c["layout"].get<std::string>() + "): " + fmt(c["images_per_s"].get<double>(), 0) +
                   " images/s at " + std::to_string(top) + " GPUs";
  if (chosen != best)
    bt += ", within 5% of the best (" + fmt((*best)["images_per_s"].get<double>(), 0) + " images/s at batch " +
          std::to_string((*best)["batch"].get<int>()) + ") with less memory";
  bt += " (step source: " + c["step_source"].get<std::string>() + ").";
  out.push_back(statement("batch", bt + tag));

  // Accumulation for a global batch.
  if (o.global_batch) {
    for (const auto& r : rows)
      if (r["precision"] == c["precision"] && r["layout"] == c["layout"] && r["batch"] == c["batch"] &&
          r["gpus"] == top) {
        const int k = r["accumulation"].get<int>();
        const int g = top * c["batch"].get<int>() * k;
        if (k != accumulation_steps(*o.global_batch, top, c["batch"].get<int>())) continue;
        out.push_back(statement(
            "accumulation", "Global batch " + std::to_string(*o.global_batch) + ": " + std::to_string(k) +
                                " accumulation step(s) of " + std::to_string(top) + " GPUs x batch " +
                                std::to_string(c["batch"].get<int>()) + " (= " + std::to_string(g) +
                                " images per update): " + row_figures(r) + "." + tag));
      }
  }

  // Parameter server.
  if (top > 1) {
    const double g = advice["inputs"]["grad_bytes"].get<double>();
    const double ar = c["allreduce_ms"].get<double>() * 1e-3;
    double bw;
    std::string bw_src;
    if (nodes > 1) {
      bw = *comm.inter_gbps;
      bw_src = "the network between nodes";
    } else {
      bw = 2.0 * (top - 1) / top * g / std::max(ar, 1e-12) / 1e9;  // the all-reduce's effective bus bandwidth
      bw_src = "the GPUs' own links (the all-reduce's bus bandwidth)";
    }
    const int workers = nodes > 1 ? nodes : top;
    const double ps = parameter_server_s(g, workers, workers, bw, comm.inter_latency_s);
    const bool pays = ps < ar;
    out.push_back(statement(
        "parameter_server",
        std::string(pays ? "A parameter-server strategy would pay" : "A parameter-server strategy would not pay") +
            ": with as many servers as workers each worker still sends and receives the whole gradient (2 x " +
            fmt(g / 1048576.0) + " MiB = " + fmt(ps * 1e3, 2) + " ms at " + fmt(bw) + " GB/s over " + bw_src +
            ") against ring all-reduce's 2(N-1)/N of it (" + fmt(ar * 1e3, 2) +
            " ms). It pays only when the all-reduce's latency term (2(N-1) hops) outweighs its bandwidth term (small "
            "models over many nodes), when servers sit on a network faster than the workers' all-reduce path, or "
            "for asynchronous updates that ride out stragglers." + tag));
  }

  // FP16.
  {
    std::string t;
    if (fp16.empty()) {
      t = "FP16: not measured in these files (run the gemm and peak families for the fp16_vs_fp32 verdict, or the "
          "train family in both precisions).";
    } else {
      t = std::string(fp16_pays.value_or(false) ? "FP16 (mixed precision) pays on this GPU" : "FP16 does not pay on this GPU") + ": ";
      for (size_t i = 0; i < fp16.size(); ++i) t += (i ? "; " : "") + fp16[i];
      t += ".";
    }
    out.push_back(statement("fp16", t + tag));
  }

  // Host input pipeline.
  const json& in = advice["inputs"];
  if (!in["host_pinned_gbps"].is_null() || !in["host_pageable_gbps"].is_null()) {
    const double per_gpu = c["images_per_s"].get<double>() / top * in["image_bytes"].get<double>() / 1e9;
    std::string t = "Host input at " + std::to_string(top) + " GPUs: " + fmt(c["images_per_s"].get<double>(), 0) +
                    " images/s x " + fmt(in["image_bytes"].get<double>(), 0) + " B = " + fmt(per_gpu, 2) +
                    " GB/s per GPU";
    const double device_ms = c["accumulation"].get<int>() * c["compute_ms"].get<double>() + c["exposed_comm_ms"].get<double>();
    if (!in["host_pinned_gbps"].is_null())
      t += "; pinned " + fmt(in["host_pinned_gbps"].get<double>(), 2) + " GB/s (" +
           fmt(c["input_pinned_ms"].get<double>(), 2) + " ms a step)";
    if (!in["host_pageable_gbps"].is_null())
      t += "; pageable " + fmt(in["host_pageable_gbps"].get<double>(), 2) + " GB/s (" +
           fmt(c["input_pageable_ms"].get<double>(), 2) + " ms a step)";
    t += " against " + fmt(device_ms, 2) + " ms of compute and exposed all-reduce";
    if (c["bottleneck"] == "host input pipeline") t += ": the input pipeline is the bottleneck";
    else if (c["input_pageable_ms"].get<double>() > device_ms) t += ": fine from pinned memory, a bottleneck from pageable memory (pin the input buffers)";
    else t += ": not a bottleneck";
    out.push_back(statement("input", t + " (" + in["host_source"].get<std::string>() + ")." + tag));
  }
  return out;
}

std::string advice_text(const json& a) {
  std::ostringstream os;
  os << "nodebench advise: data-parallel training, " << a["label"].get<std::string>() << "\n";
  os << std::left << std::setw(10) << "precision" << std::setw(7) << "layout" << std::right << std::setw(6) << "batch"
     << std::setw(4) << "k" << std::setw(6) << "gpus" << std::setw(11) << "compute_ms" << std::setw(10) << "step_ms"
     << std::setw(10) << "exposed" << std::setw(11) << "images/s" << std::setw(7) << "eff%" << std::setw(10)
     << "input_ms" << "  " << std::left << std::setw(20) << "bottleneck" << "measured\n";
  for (const auto& r : a["rows"]) {
    std::string meas = "-";
    if (!r["measured"].is_null())
      meas = fmt(r["measured"]["images_per_s"].get<double>(), 0) + " img/s (prediction " +
             (r["measured"]["error_pct"].get<double>() >= 0 ? "+" : "") + fmt(r["measured"]["error_pct"].get<double>()) +
             "%)";
    os << std::left << std::setw(10) << r["precision"].get<std::string>() << std::setw(7)
       << r["layout"].get<std::string>() << std::right << std::setw(6) << r["batch"].get<int>() << std::setw(4)
       << r["accumulation"].get<int>() << std::setw(6) << r["gpus"].get<int>() << std::setw(11)
       << fmt(r["compute_ms"].get<double>(), 2) << std::setw(10) << fmt(r["step_ms"].get<double>(), 2) << std::setw(10)
       << fmt(r["exposed_comm_ms"].get<double>(), 2) << std::setw(11) << fmt(r["images_per_s"].get<double>(), 0)
       << std::setw(7) << fmt(100 * r["efficiency"].get<double>()) << std::setw(10)
       << fmt(r["input_pinned_ms"].get<double>(), 2) << "  " << std::left << std::setw(20)
       << r["bottleneck"].get<std::string>() << meas << "\n";
  }
  os << "\nRecommendation:\n";
  for (const auto& s : a["recommendation"]) os << "- " << s["text"].get<std::string>() << "\n";
  os << "\nModel and assumptions (docs/ADVISE.md):\n";
  for (const auto& s : a["assumptions"]) os << "- " << s.get<std::string>() << "\n";
  return os.str();
}

}  // namespace nb::advise
