#include "bench/analysis.hpp"
#include "base/text.hpp"

#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <map>
#include <sstream>
#include <tuple>

namespace nb {
using nlohmann::json;

namespace {

// Throughput of the ok record matching `pred` on GPU `g` (tflops, else tops), or NaN.
template <class Pred>
double rate(const json& records, const GpuBrief& g, Pred pred) {
  double best = NAN;
  for (const auto& r : records) {
    if (r.value("status", "") != "ok" || !record_on(r, g)) continue;
    if (!pred(r)) continue;
    const json& m = r["metrics"];
    double v = NAN;
    if (m.contains("tflops") && m["tflops"].is_number()) v = m["tflops"].get<double>();
    else if (m.contains("tops") && m["tops"].is_number()) v = m["tops"].get<double>();
    if (std::isfinite(v) && (!std::isfinite(best) || v > best)) best = v;
  }
  return best;
}

}  // namespace

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

json fp16_vs_fp32(const json& records, const std::vector<GpuBrief>& gpus) {
  json out = json::array();
  for (const auto& g : gpus) {
    json rows = json::array();
    auto add = [&](const std::string& source, double fp32, double other, const std::string& kind) {
      if (!std::isfinite(fp32) || !std::isfinite(other) || fp32 <= 0) return;
      rows.push_back({{"source", source}, {"kind", kind}, {"fp32", fp32}, {"fp16", other}, {"speedup_x", other / fp32}});
    };
    auto peak = [&](const char* unit) {
      return rate(records, g, [&](const json& r) { return r["family"] == "peak" && r["params"]["unit"] == unit; });
    };
    const double p32 = peak("fp32_ffma");
    add("peak: fp16_hfma2 / fp32_ffma", p32, peak("fp16_hfma2"), "peak");
    // A tensor case that measured another instruction than the GPU's dense path says so in its
    // details (mma.sync where the dense rate needs tcgen05): the row says it too.
    auto tensor_note = [&](const char* unit) {
      for (const auto& r : records)
        if (r["family"] == "peak" && r["params"].value("unit", "") == unit && record_on(r, g) &&
            r.contains("details") && r["details"].is_object() && r["details"].value("dense_tensor_peak", true) == false)
          return std::string(" (mma.sync, not the dense tensor rate)");
      return std::string();
    };
    add("peak: mma_fp16" + tensor_note("mma_fp16") + " / fp32_ffma", p32, peak("mma_fp16"), "peak");
    // GEMM: the largest square size where both ran, best API of each.
    std::map<int64_t, std::pair<double, double>> by_size;
    for (const auto& r : records) {
      if (r["family"] != "gemm" || r["params"].value("shape", "") != "square") continue;
      const int64_t n = r["params"]["m"].get<int64_t>();
      by_size[n] = {NAN, NAN};
    }
    for (auto it = by_size.rbegin(); it != by_size.rend(); ++it) {
      const int64_t n = it->first;
      auto gemm = [&](const char* prec) {
        return rate(records, g, [&](const json& r) {
          return r["family"] == "gemm" && r["params"]["precision"] == prec && r["params"]["shape"] == "square" &&
                 r["params"]["m"].get<int64_t>() == n;
        });
      };
      const double f32 = gemm("fp32"), f16 = gemm("fp16");
      if (std::isfinite(f32) && std::isfinite(f16)) {
        add("gemm " + std::to_string(n) + "^3: fp16 / fp32", f32, f16, "gemm");
        const double i8 = gemm("int8");
        if (std::isfinite(i8))
          rows.push_back({{"source", "gemm " + std::to_string(n) + "^3: int8 / fp32"}, {"kind", "int8"},
                          {"fp32", f32}, {"int8", i8}, {"speedup_x", i8 / f32}});
        break;
      }
    }
    const double dp4a = peak("int8_dp4a");
    if (std::isfinite(dp4a) && std::isfinite(p32) && p32 > 0)
      rows.push_back({{"source", "peak: int8_dp4a / fp32_ffma"}, {"kind", "int8"}, {"fp32", p32}, {"int8", dp4a},
                      {"speedup_x", dp4a / p32}});
    // Convolution (when that family is in the run): the network's training throughput.
    auto best_ips = [&](const char* family, const char* metric, const char* prec) {
      double best = NAN;
      for (const auto& r : records) {
        if (r["family"] != family || r.value("status", "") != "ok" || r["params"].value("precision", "") != prec) continue;
        if (!record_on(r, g)) continue;
        if (r["metrics"].contains(metric) && r["metrics"][metric].is_number()) {
          const double v = r["metrics"][metric].get<double>();
          if (!std::isfinite(best) || v > best) best = v;
        }
      }
      return best;
    };
    add("conv (network, training images/s): fp16 / fp32", best_ips("conv", "train_images_per_s", "fp32"),
        best_ips("conv", "train_images_per_s", "fp16"), "conv");
    // The whole ResNet-50 training step (family train), best batch of each precision.
    add("train (ResNet-50 step, images/s): fp16 / fp32", best_ips("train", "images_per_s", "fp32"),
        best_ips("train", "images_per_s", "fp16"), "train");

    json verdict = {{"gpu", g.index}, {"name", g.name},
                    {"compute_capability", std::to_string(g.cc_major) + "." + std::to_string(g.cc_minor)},
                    {"rows", rows}};
    if (g.rank >= 0) verdict["rank"] = g.rank;
    if (!g.host.empty()) verdict["host"] = g.host;
    auto best_of = [&](const std::string& kind) {
      double best = NAN;
      std::string src;
      for (const auto& row : rows)
        if (row["kind"] == kind && (!std::isfinite(best) || row["speedup_x"].get<double>() > best)) {
          best = row["speedup_x"].get<double>();
          src = row["source"].get<std::string>();
        }
      return std::make_pair(best, src);
    };
    auto [s, src] = best_of("gemm");
    if (!std::isfinite(s)) std::tie(s, src) = best_of("train");
    if (!std::isfinite(s)) std::tie(s, src) = best_of("conv");
    if (!std::isfinite(s)) std::tie(s, src) = best_of("peak");
    const auto [i8, i8src] = best_of("int8");
    if (!std::isfinite(s)) {
      verdict["verdict"] = "not_measured";
      verdict["reason"] = "no FP16 and FP32 results to compare on this GPU (run the gemm or peak family)";
    } else if (s >= 1.5) {
      verdict["verdict"] = "pays";
      verdict["reason"] = "FP16 runs " + fmt(s) + "x as fast as FP32 (" + src + "): mixed precision pays on this GPU";
    } else {
      verdict["verdict"] = "does_not_pay";
      std::string reason = "FP16 runs only " + fmt(s) + "x as fast as FP32 (" + src + "): mixed precision does not pay";
      if (g.cc_major * 10 + g.cc_minor == 61 || g.cc_major * 10 + g.cc_minor == 62)
        reason += " (compute capability 6.1: FP16 arithmetic at 1/64 of FP32, no tensor cores)";
      if (g.cc_major < 7 && std::isfinite(best_of("train").first))
        reason += "; the training step here runs FP16 storage with FP32 arithmetic";
      verdict["reason"] = reason;
      if (std::isfinite(i8) && i8 >= 2.0)
        verdict["recommendation"] = "train in FP32; for inference use INT8 (DP4A): " + fmt(i8) + "x FP32 (" + i8src + ")";
      else
        verdict["recommendation"] = "train and infer in FP32";
    }
    out.push_back(verdict);
  }
  return out;
}

std::vector<std::string> fp16_verdict_lines(const json& analysis) {
  std::vector<std::string> lines;
  for (const auto& v : analysis) {
    std::string l = where_label(v) + " " + v.value("name", "") + ": mixed precision " +
                    (v["verdict"] == "pays" ? "PAYS" : v["verdict"] == "does_not_pay" ? "DOES NOT PAY" : "not measured") +
                    ": " + v["reason"].get<std::string>();
    if (v.contains("recommendation")) l += "; " + v["recommendation"].get<std::string>();
    lines.push_back(l);
  }
  return lines;
}

}  // namespace nb

namespace nb {

// A record skipped because it did not fit: its reason_kind (files before reason_kind existed
// said so only in the reason's text).
static bool skipped_for_memory(const json& r) {
  if (r.contains("reason_kind") && r["reason_kind"].is_string()) {
    const std::string k = r["reason_kind"];
    return k == "oom" || k == "smaller_oom";
  }
  return r["reason"].is_string() && r["reason"].get<std::string>().rfind("out of memory", 0) == 0;
}

json batch_recommendation(const json& records, double memory_fraction, double plateau_share) {
  struct Point {
    int64_t batch;
    double ips, mem_frac, mem_bytes;
  };
  // Keyed by host, rank and GPU index (rank -1 and host "" for a run of one process).
  using Key = std::tuple<std::string, int, int, std::string, std::string>;
  std::map<Key, std::vector<Point>> series;
  std::map<Key, int64_t> smallest_oom;
  for (const auto& r : records) {
    if (r["family"] != "conv" || r["params"].value("layer", "") != "resnet50_total" || r["gpus"].size() != 1) continue;
    const int rank = r.contains("rank") && r["rank"].is_number_integer() ? r["rank"].get<int>() : -1;
    const auto key = Key(r.value("host", std::string()), rank, r["gpus"][0].get<int>(),
                         r["params"]["precision"].get<std::string>(), r["params"]["layout"].get<std::string>());
    const int64_t b = r["params"]["batch"].get<int64_t>();
    if (r["status"] == "ok") {
      const json& m = r["metrics"];
      series[key].push_back({b, m["train_images_per_s"].get<double>(), m["memory_fraction_x"].get<double>(),
                             m["peak_memory_bytes"].get<double>()});
    } else if (r["status"] == "skipped" && skipped_for_memory(r)) {
      auto& o = smallest_oom[key];
      if (o == 0 || b < o) o = b;
      series[key];
    }
  }
  json out = json::array();
  for (auto& [key, pts] : series) {
    const auto& [host, rank, gpu, prec, layout] = key;
    json e = {{"gpu", gpu}, {"precision", prec}, {"layout", layout}, {"memory_fraction_limit", memory_fraction},
              {"plateau_share", plateau_share}};
    if (rank >= 0) e["rank"] = rank;
    if (!host.empty()) e["host"] = host;
    if (smallest_oom.count(key)) e["smallest_batch_out_of_memory"] = smallest_oom[key];
    if (pts.empty()) {
      e["batch"] = nullptr;
      e["reason"] = "no batch size fit in memory";
      out.push_back(e);
      continue;
    }
    std::sort(pts.begin(), pts.end(), [](const Point& a, const Point& b) { return a.batch < b.batch; });
    double plateau = 0;
    int64_t plateau_batch = 0;
    for (const auto& p : pts)
      if (p.ips > plateau) {
        plateau = p.ips;
        plateau_batch = p.batch;
      }
    e["plateau_images_per_s"] = plateau;
    e["plateau_batch"] = plateau_batch;
    const Point* pick = nullptr;
    for (const auto& p : pts)
      if (p.ips >= plateau_share * plateau && p.mem_frac <= memory_fraction) {
        pick = &p;
        break;
      }
    if (!pick) {
      e["batch"] = nullptr;
      e["reason"] = "no measured batch reaches " + fmt(100 * plateau_share, 0) + "% of the plateau within " +
                    fmt(100 * memory_fraction, 0) + "% of device memory";
    } else {
      e["batch"] = pick->batch;
      e["train_images_per_s"] = pick->ips;
      e["memory_fraction"] = pick->mem_frac;
      e["peak_memory_bytes"] = pick->mem_bytes;
      e["reason"] = "smallest batch at " + fmt(100 * pick->ips / plateau, 1) + "% of the plateau (" + fmt(plateau, 0) +
                    " images/s at batch " + std::to_string(plateau_batch) + ") using " + fmt(100 * pick->mem_frac, 1) +
                    "% of device memory";
    }
    out.push_back(e);
  }
  return out;
}

std::vector<std::string> batch_recommendation_lines(const json& analysis) {
  std::vector<std::string> lines;
  for (const auto& e : analysis) {
    std::string l = where_label(e) + " ResNet-50 convolutions " +
                    e["precision"].get<std::string>() + "/" + e["layout"].get<std::string>() + ": ";
    l += e["batch"].is_null() ? std::string("no recommendation: ") : "recommended batch " + std::to_string(e["batch"].get<int64_t>()) + ": ";
    l += e["reason"].get<std::string>();
    lines.push_back(l);
  }
  return lines;
}

}  // namespace nb
