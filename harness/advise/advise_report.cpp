// The recommendation and the text of `nodebench advise` (docs/ADVISE.md).
#include <algorithm>
#include <cmath>
#include <map>
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
  std::string measured;
  if (r.contains("efficiency_with_overhead"))
    measured = ", " + fmt(100 * r["efficiency_with_overhead"].get<double>()) + "% with the step overhead " +
               r["measured_overhead"]["id"].get<std::string>() + " measured (" +
               fmt(r["measured_overhead"]["overhead_ms"].get<double>(), 2) + " ms)";
  return fmt(r["images_per_s"].get<double>(), 0) + " images/s, efficiency bound " +
         fmt(100 * r["efficiency"].get<double>()) + "% (communication and input only" + measured + "), step " +
         fmt(r["step_ms"].get<double>(), 2) + " ms (compute " +
         fmt(r["accumulation"].get<int>() * r["compute_ms"].get<double>(), 2) + " ms, exposed all-reduce " +
         fmt(r[kRowExposedComm.name()].get<double>(), 2) + " ms of " + fmt(r["allreduce_ms"].get<double>(), 2) + " ms)";
}

// The host input line: decoding and augmenting on the host's cores (the input family's verdict,
// through the registered judge), then the host-to-device copy (hostlink); nullopt when neither
// was measured.
std::optional<json> input_statement(const json& advice, const json& c, int top, const InputPipeline& input_pipeline,
                                    const std::string& tag) {
  const json& in = advice["inputs"];
  std::string text = "Host input at " + std::to_string(top) + " GPUs: " + fmt(c["images_per_s"].get<double>(), 0) +
                     " images/s";
  json verdict;
  if (input_pipeline.measured()) {
    verdict = input_pipeline.judge(input_pipeline.records, c["precision"].get<std::string>(), c["layout"].get<std::string>(),
                                   c["images_per_s"].get<double>(), top);
    if (verdict.is_object() && verdict.contains("text")) text += "; decoded and augmented on the CPU: " + verdict["text"].get<std::string>();
    else verdict = nullptr;
  }
  const bool copy = !in["host_pinned_gbps"].is_null() || !in["host_pageable_gbps"].is_null();
  if (!copy && verdict.is_null()) return std::nullopt;
  if (copy) {
    const double per_gpu = c["images_per_s"].get<double>() / top * in["image_bytes"].get<double>() / 1e9;
    text += "; copied to the GPUs: x " + fmt(in["image_bytes"].get<double>(), 0) + " B = " + fmt(per_gpu, 2) + " GB/s per GPU";
    const double device_ms = c["accumulation"].get<int>() * c["compute_ms"].get<double>() + c[kRowExposedComm.name()].get<double>();
    if (!in["host_pinned_gbps"].is_null())
      text += "; pinned " + fmt(in["host_pinned_gbps"].get<double>(), 2) + " GB/s (" +
              fmt(c["input_pinned_ms"].get<double>(), 2) + " ms a step)";
    if (!in["host_pageable_gbps"].is_null())
      text += "; pageable " + fmt(in["host_pageable_gbps"].get<double>(), 2) + " GB/s (" +
              fmt(c["input_pageable_ms"].get<double>(), 2) + " ms a step)";
    text += " against " + fmt(device_ms, 2) + " ms of compute and exposed all-reduce";
    if (c["bottleneck"] == "host input pipeline") text += ": the copy is the bottleneck";
    else if (c["input_pageable_ms"].get<double>() > device_ms)
      text += ": fine from pinned memory, a bottleneck from pageable memory (pin the input buffers)";
    else text += ": not a bottleneck";
    text += " (" + in["host_source"].get<std::string>() + ")";
  } else {
    text += "; the host-to-device copy was not measured (hostlink family)";
  }
  json st = statement("input", text + "." + tag);
  if (!verdict.is_null()) {
    st["status"] = verdict.value("status", "");
    st["verdict"] = verdict;
  }
  return st;
}

// The row the advice rests on: at the largest GPU count and its base accumulation (the smallest k
// of that count), the fastest (`best`), and the smallest batch of its precision and layout within 5%
// of it (`chosen`). Rows whose step is a full training step are preferred over a partial one (a
// step_kind in `partial_kinds`: a network's convolutions only).
struct Choice {
  int top = 0;
  const json* best = nullptr;
  const json* chosen = nullptr;
};

Choice choose_row(const json& rows, const std::set<std::string>& partial_kinds) {
  auto partial = [&](const json& r) { return r["step_kind"].is_string() && partial_kinds.count(r["step_kind"].get<std::string>()) > 0; };
  Choice ch;
  for (const auto& r : rows) ch.top = std::max(ch.top, r["gpus"].get<int>());
  int kmin = 1 << 30;
  for (const auto& r : rows)
    if (r["gpus"] == ch.top) kmin = std::min(kmin, r["accumulation"].get<int>());
  bool any_full = false;
  for (const auto& r : rows) any_full = any_full || !partial(r);
  std::vector<const json*> at_top;
  for (const auto& r : rows)
    if (r["gpus"] == ch.top && r["accumulation"] == kmin && (!any_full || !partial(r))) at_top.push_back(&r);
  ch.best = *std::max_element(at_top.begin(), at_top.end(), [](const json* a, const json* b) {
    return (*a)["images_per_s"].get<double>() < (*b)["images_per_s"].get<double>();
  });
  ch.chosen = ch.best;
  for (const json* r : at_top)
    if ((*r)["precision"] == (*ch.best)["precision"] && (*r)["layout"] == (*ch.best)["layout"] &&
        (*r)["images_per_s"].get<double>() >= 0.95 * (*ch.best)["images_per_s"].get<double>() &&
        (*r)["batch"].get<int>() < (*ch.chosen)["batch"].get<int>())
      ch.chosen = r;
  return ch;
}

std::string strategy_text(const json& c, int top) {
  const int nodes = c["nodes"].get<int>();
  // The bound, or where a train_dp record measured the rest of the step, the bound with it.
  const double eff = c.value("efficiency_with_overhead", c["efficiency"].get<double>());
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
  return strat;
}

std::string batch_text(const Choice& ch) {
  const json& c = *ch.chosen;
  std::string bt = "Per-GPU batch " + std::to_string(c["batch"].get<int>()) + " (" + c["precision"].get<std::string>() +
                   ", " + c["layout"].get<std::string>() + "): " + fmt(c["images_per_s"].get<double>(), 0) +
                   " images/s at " + std::to_string(ch.top) + " GPUs";
  if (ch.chosen != ch.best)
    bt += ", within 5% of the best (" + fmt((*ch.best)["images_per_s"].get<double>(), 0) + " images/s at batch " +
          std::to_string((*ch.best)["batch"].get<int>()) + ") with less memory";
  return bt + " (step source: " + c["step_source"].get<std::string>() + ").";
}

// The accumulation of the chosen row's precision, layout and batch that reaches the global batch.
void add_accumulation(json& out, const json& rows, const json& c, int top, int global_batch, const std::string& tag) {
  for (const auto& r : rows)
    if (r["precision"] == c["precision"] && r["layout"] == c["layout"] && r["batch"] == c["batch"] && r["gpus"] == top) {
      const int k = r["accumulation"].get<int>();
      const int g = top * c["batch"].get<int>() * k;
      if (k != accumulation_steps(global_batch, top, c["batch"].get<int>())) continue;
      out.push_back(statement("accumulation", "Global batch " + std::to_string(global_batch) + ": " + std::to_string(k) +
                                                  " accumulation step(s) of " + std::to_string(top) + " GPUs x batch " +
                                                  std::to_string(c["batch"].get<int>()) + " (= " + std::to_string(g) +
                                                  " images per update): " + row_figures(r) + "." + tag));
    }
}

// Where accumulation reaches the global batch at the chosen batch, a larger per-GPU batch that the
// GPU's memory holds needs fewer micro-steps. Memory per batch from the train records of the chosen
// precision and layout (peak_memory_bytes): a line through the smallest and largest batch measured,
// through zero with one; a batch fits when its predicted peak is within kMemoryUse of the GPU's
// memory (as CUDA reports it: with ECC on, after the ECC reserve).
constexpr double kMemoryUse = 0.90;
void add_larger_batch(json& out, const json& advice, const json& rows, const json& c, int top, int global_batch,
                      const std::string& tag) {
  const json& inputs = advice["inputs"];
  if (!inputs.contains("gpu_memory_bytes") || !inputs["gpu_memory_bytes"].is_number()) return;
  const double cap = inputs["gpu_memory_bytes"].get<double>();
  const int b = c["batch"].get<int>();
  const int k = accumulation_steps(global_batch, top, b);
  if (k <= 1) return;
  // batch -> peak bytes: the train records of the chosen precision and layout; for a step of
  // another kind (--step-ms), those of every precision and layout measured, the largest per batch
  // (nodebench's own step standing in for the framework's, and said so).
  std::map<int, double> mem;
  const json& tm = inputs.contains("train_memory") ? inputs["train_memory"] : json::array();
  for (const auto& m : tm)
    if (m["precision"] == c["precision"] && m["layout"] == c["layout"]) mem[m["batch"].get<int>()] = m[kRowPeakMemory.name()].get<double>();
  const bool stand_in = mem.empty();
  if (stand_in)
    for (const auto& m : tm) {
      double& slot = mem[m["batch"].get<int>()];
      slot = std::max(slot, m[kRowPeakMemory.name()].get<double>());
    }
  if (mem.empty()) return;
  double fixed = 0, per_image = mem.begin()->second / mem.begin()->first;
  if (mem.size() > 1 && mem.rbegin()->first > mem.begin()->first) {
    per_image = (mem.rbegin()->second - mem.begin()->second) / double(mem.rbegin()->first - mem.begin()->first);
    fixed = mem.begin()->second - per_image * mem.begin()->first;
  }
  if (!(per_image > 0)) return;
  const auto predict = [&](int batch) { return fixed + per_image * batch; };
  int best = 0;
  for (int bb = 2 * b; bb * top <= global_batch; bb *= 2)
    if (predict(bb) <= kMemoryUse * cap && accumulation_steps(global_batch, top, bb) < k) best = bb;
  if (!best) return;
  const int k2 = accumulation_steps(global_batch, top, best);
  std::string text = "Larger per-GPU batch: batch " + std::to_string(best) + " fits in memory (predicted peak " +
                     fmt(predict(best) / 1e9, 1) + " GB of " + fmt(cap / 1e9, 1) + " GB, " +
                     inputs.value("gpu_memory_note", std::string()) + "; peak memory from the " +
                     (stand_in ? std::string("ResNet-50 train records (standing in for this step)") : std::string("train records")) +
                     " at batch " +
                     std::to_string(mem.begin()->first) +
                     (mem.size() > 1 ? " and " + std::to_string(mem.rbegin()->first) : std::string()) +
                     ", using at most " + fmt(100 * kMemoryUse, 0) + "%): " + std::to_string(k2) +
                     " accumulation step(s) of " + std::to_string(top) + " GPUs x batch " + std::to_string(best) +
                     " reach the global batch " + std::to_string(global_batch) + " instead of " + std::to_string(k) +
                     " of batch " + std::to_string(b);
  const json* measured = nullptr;
  for (const auto& r : rows)
    if (r["precision"] == c["precision"] && r["layout"] == c["layout"] && r["batch"] == best && r["gpus"] == top &&
        r["accumulation"] == k2)
      measured = &r;
  if (measured) text += ": " + row_figures(*measured);
  else text += " (no step was measured at batch " + std::to_string(best) + ": run the train family there to confirm)";
  out.push_back(statement("larger_batch", text + "." + tag));
}

std::string parameter_server_text(const json& advice, const json& c, int top, const CommModel& comm) {
  const int nodes = c["nodes"].get<int>();
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
  return std::string(pays ? "A parameter-server strategy would pay" : "A parameter-server strategy would not pay") +
         ": with as many servers as workers each worker still sends and receives the whole gradient (2 x " +
         fmt(g / 1048576.0) + " MiB = " + fmt(ps * 1e3, 2) + " ms at " + fmt(bw) + " GB/s over " + bw_src +
         ") against ring all-reduce's 2(N-1)/N of it (" + fmt(ar * 1e3, 2) +
         " ms). It pays only when the all-reduce's latency term (2(N-1) hops) outweighs its bandwidth term (small "
         "models over many nodes), when servers sit on a network faster than the workers' all-reduce path, or "
         "for asynchronous updates that ride out stragglers.";
}

std::string fp16_text(const std::vector<std::string>& fp16, std::optional<bool> fp16_pays) {
  if (fp16.empty())
    return "FP16: not measured in these files (run the gemm and peak families for the fp16_vs_fp32 verdict, or the "
           "train family in both precisions).";
  std::string t = std::string(fp16_pays.value_or(false) ? "FP16 (mixed precision) pays on this GPU" : "FP16 does not pay on this GPU") + ": ";
  for (size_t i = 0; i < fp16.size(); ++i) t += (i ? "; " : "") + fp16[i];
  return t + ".";
}

}  // namespace

json recommend(const json& advice, const CommModel& comm, const std::vector<std::string>& fp16,
               std::optional<bool> fp16_pays, const AdviseOptions& o, const InputPipeline& input_pipeline,
               const std::set<std::string>& partial_kinds) {
  json out = json::array();
  const json& rows = advice["rows"];
  if (rows.empty()) return out;
  const std::string tag = " [" + advice["label"].get<std::string>() + "]";
  const Choice ch = choose_row(rows, partial_kinds);
  const json& c = *ch.chosen;
  out.push_back(statement("strategy", strategy_text(c, ch.top) + tag));
  out.push_back(statement("batch", batch_text(ch) + tag));
  if (o.global_batch) {
    add_accumulation(out, rows, c, ch.top, *o.global_batch, tag);
    add_larger_batch(out, advice, rows, c, ch.top, *o.global_batch, tag);
  }
  if (ch.top > 1) out.push_back(statement("parameter_server", parameter_server_text(advice, c, ch.top, comm) + tag));
  out.push_back(statement("fp16", fp16_text(fp16, fp16_pays) + tag));
  if (auto st = input_statement(advice, c, ch.top, input_pipeline, tag)) out.push_back(*st);
  return out;
}

std::string advice_text(const json& a) {
  std::ostringstream os;
  os << "nodebench advise: data-parallel training, " << a["label"].get<std::string>() << "\n";
  os << std::left << std::setw(10) << "precision" << std::setw(7) << "layout" << std::right << std::setw(6) << "batch"
     << std::setw(4) << "k" << std::setw(6) << "gpus" << std::setw(11) << "compute_ms" << std::setw(10) << "step_ms"
     << std::setw(10) << "exposed" << std::setw(11) << "images/s" << std::setw(8) << "bound%" << std::setw(7)
     << "+ovh%" << std::setw(10) << "input_ms" << "  " << std::left << std::setw(20) << "bottleneck" << "measured\n";
  bool any_overhead = false;
  for (const auto& r : a["rows"]) {
    any_overhead = any_overhead || r.contains("efficiency_with_overhead");
    std::string meas = "-";
    if (!r["measured"].is_null())
      meas = fmt(r["measured"]["images_per_s"].get<double>(), 0) + " img/s (prediction " +
             (r["measured"]["error_pct"].get<double>() >= 0 ? "+" : "") + fmt(r["measured"]["error_pct"].get<double>()) +
             "%)";
    os << std::left << std::setw(10) << r["precision"].get<std::string>() << std::setw(7)
       << r["layout"].get<std::string>() << std::right << std::setw(6) << r["batch"].get<int>() << std::setw(4)
       << r["accumulation"].get<int>() << std::setw(6) << r["gpus"].get<int>() << std::setw(11)
       << fmt(r["compute_ms"].get<double>(), 2) << std::setw(10) << fmt(r["step_ms"].get<double>(), 2) << std::setw(10)
       << fmt(r[kRowExposedComm.name()].get<double>(), 2) << std::setw(11) << fmt(r["images_per_s"].get<double>(), 0)
       << std::setw(8) << fmt(100 * r["efficiency"].get<double>()) << std::setw(7)
       << (r.contains("efficiency_with_overhead") ? fmt(100 * r["efficiency_with_overhead"].get<double>()) : "-")
       << std::setw(10)
       << fmt(r["input_pinned_ms"].get<double>(), 2) << "  " << std::left << std::setw(20)
       << r["bottleneck"].get<std::string>() << meas << "\n";
  }
  const json def = a.value("efficiency_definition", json::object());
  if (def.contains("left_out")) {
    os << "bound%: the efficiency, " << def["text"].get<std::string>() << "; left out:";
    for (const auto& c : def["left_out"]) os << " " << c.get<std::string>() << ";";
    os << " a real step is slower\n";
  }
  if (any_overhead)
    os << "+ovh%: the bound with the step overhead a train_dp record measured added to the predicted step\n";
  os << "\nRecommendation:\n";
  for (const auto& s : a["recommendation"]) os << "- " << s["text"].get<std::string>() << "\n";
  os << "\nModel and assumptions (docs/ADVISE.md):\n";
  for (const auto& s : a["assumptions"]) os << "- " << s.get<std::string>() << "\n";
  return os.str();
}

}  // namespace nb::advise
