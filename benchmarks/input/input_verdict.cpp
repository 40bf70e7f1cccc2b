#include "input_verdict.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "base/text.hpp"
#include "input_metrics.hpp"

namespace nb::input {

using nlohmann::json;

namespace {

double num(const json& o, const char* k, double fallback = 0) {
  return o.is_object() && o.contains(k) && o[k].is_number() ? o[k].get<double>() : fallback;
}
std::string str(const json& o, const char* k) {
  return o.is_object() && o.contains(k) && o[k].is_string() ? o[k].get<std::string>() : std::string();
}
bool starts(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

// The running maximum of the rates: a point slower than a smaller count cannot be relied on to
// feed more (a worse point is noise or contention, not capacity).
std::vector<CurvePoint> monotone(std::vector<CurvePoint> p) {
  std::sort(p.begin(), p.end(), [](const CurvePoint& a, const CurvePoint& b) { return a.cores < b.cores; });
  for (size_t i = 1; i < p.size(); ++i) p[i].images_per_s = std::max(p[i].images_per_s, p[i - 1].images_per_s);
  return p;
}

std::string plural(int n, const char* one, const char* many) { return std::to_string(n) + " " + (n == 1 ? one : many); }

}  // namespace

const std::vector<int>& judged_gpu_counts() {
  static const std::vector<int> counts{1, 2, 4, 8};
  return counts;
}

Scaling scaling_of(const Curve& c, double linear_share) {
  Scaling s;
  std::vector<CurvePoint> p = c.points;
  std::sort(p.begin(), p.end(), [](const CurvePoint& a, const CurvePoint& b) { return a.cores < b.cores; });
  if (p.empty() || p[0].cores <= 0) return s;
  s.per_core_images_per_s = p[0].images_per_s / double(p[0].cores);
  bool linear = true;
  for (const CurvePoint& q : p) {
    const double e = s.per_core_images_per_s > 0 ? q.images_per_s / (double(q.cores) * s.per_core_images_per_s) : 0;
    s.efficiency.push_back(e);
    if (linear && e >= linear_share) s.linear_to = q.cores;
    else if (linear) {
      linear = false;
      s.stops_at = q.cores;
    }
  }
  return s;
}

double workers_for(const Curve& c, double images_per_s, bool& extrapolated) {
  extrapolated = false;
  const std::vector<CurvePoint> p = monotone(c.points);
  if (p.empty() || !(images_per_s > 0)) return 0;
  if (images_per_s <= p[0].images_per_s) return images_per_s / (p[0].images_per_s / double(p[0].cores));
  for (size_t j = 1; j < p.size(); ++j)
    if (images_per_s <= p[j].images_per_s) {
      const CurvePoint& a = p[j - 1];
      const CurvePoint& b = p[j];
      return double(a.cores) + (images_per_s - a.images_per_s) / (b.images_per_s - a.images_per_s) * double(b.cores - a.cores);
    }
  // Beyond the curve: its fastest point's rate per worker for every further worker.
  const auto top = std::find_if(p.begin(), p.end(), [&](const CurvePoint& q) { return q.images_per_s == p.back().images_per_s; });
  extrapolated = true;
  return double(top->cores) + (images_per_s - top->images_per_s) / (top->images_per_s / double(top->cores));
}

json feed_row(const Curve& c, const GpuDecode* gpu, double per_gpu, int gpus) {
  const double need = per_gpu * gpus;
  bool extrapolated = false;
  const double exact = workers_for(c, need, extrapolated);
  const int decode = int(std::ceil(exact - 1e-9));
  const int needed = decode + gpus;
  const int shortfall = std::max(0, needed - c.host_cpus);
  const std::vector<CurvePoint> p = monotone(c.points);
  const CurvePoint top = p.empty() ? CurvePoint{} : p.back();
  const std::string how =
      extrapolated ? "beyond the measured " + std::to_string(top.cores) + " workers at " + fmt(top.images_per_s / top.cores, 0) +
                         " images/s per worker"
                   : "on the measured curve, " + fmt(p.empty() ? 0 : p[0].images_per_s / p[0].cores, 0) + " images/s per core";
  json row = {{"gpus", gpus},
              {"per_gpu_images_per_s", per_gpu},
              {"need_images_per_s", need},
              {"decode_workers", exact},
              {"decode_cores", decode},
              {"drive_cores", gpus},
              {"cores_needed", needed},
              {"host_cpus", c.host_cpus},
              {"cores_short", shortfall},
              {"extrapolated", extrapolated},
              {"status", shortfall == 0 ? "pass" : "warn"}};
  std::string text = plural(gpus, "GPU", "GPUs") + " x " + fmt(per_gpu, 0) + " images/s = " + fmt(need, 0) + " images/s: " +
                     plural(decode, "decode core", "decode cores") + " (" + c.series + ", " + how + ") + " +
                     std::to_string(gpus) + " driving the GPUs = " + std::to_string(needed) + " of " +
                     (c.host.empty() ? std::string("the host's") : c.host + "'s") + " " + std::to_string(c.host_cpus) +
                     " CPUs: " +
                     (shortfall == 0 ? std::string("the input pipeline keeps up")
                                     : plural(shortfall, "core", "cores") + " short");
  if (gpu) {
    const double share = per_gpu * gpu->gpu_time_per_image_ms / 1000.0;
    const bool keeps_up = gpu->images_per_s >= per_gpu;
    const int cores = 2 * gpus;  // a decode thread and a driving thread per GPU
    const bool closes = keeps_up && cores <= c.host_cpus;
    row["gpu_decode"] = {{"id", gpu->id},
                         {"images_per_s", gpu->images_per_s},
                         {"keeps_up", keeps_up},
                         {"gpu_time_share", share},
                         {"train_images_per_s_per_gpu", per_gpu / (1.0 + share)},
                         {"cores_needed", cores},
                         {"closes_gap", closes}};
    text += "; GPU decode (" + gpu->id + "): " + fmt(gpu->images_per_s, 0) + " images/s per GPU with one host thread, " +
            fmt(100 * share, 1) + "% of each GPU's time at this rate (the step then about " + fmt(per_gpu / (1.0 + share), 0) +
            " images/s per GPU), " + std::to_string(cores) + " cores: " +
            (closes ? "closes the gap" : keeps_up ? "does not close it (too few CPUs even so)" : "does not keep up either");
  } else if (shortfall > 0) {
    text += "; GPU decode not measured (the input family's GPU case: nvJPEG)";
  }
  row["text"] = text;
  return row;
}

DecodeData decode_data(const json& records) {
  DecodeData d;
  using Key = std::pair<std::string, std::string>;  // host, series
  std::map<Key, std::map<int, double>> pts;
  std::map<Key, int> cpus;
  std::map<Key, json> numa;
  for (const json& r : records) {
    if (!r.is_object() || str(r, "family") != "input") continue;
    const std::string id = str(r, "id"), status = str(r, "status");
    const json& p = r.contains("params") ? r["params"] : json();
    const double ips = kImagesPerS.of(r).value_or(0);
    const json& det = r.contains("details") ? r["details"] : json();
    const std::string series = str(p, "layout") + "/" + str(p, "dtype");
    const Key key{str(r, "host"), series};
    if (starts(id, "input/gpu/") && status == "ok" && ips > 0) {
      d.gpu.push_back({id, series, ips, kGpuTimePerImage.of(r).value_or(0)});
      continue;
    }
    if (!starts(id, "input/cpu/")) continue;
    const std::string place = str(p, "placement");
    if (place == "spread" && status == "ok" && ips > 0) {
      double& best = pts[key][int(num(p, "cores"))];
      best = std::max(best, ips);
      cpus[key] = std::max(cpus[key], int(num(det, "cpus_available")));
    } else if (place == "gpu_node" || place == "other_node") {
      json& e = numa[key];
      e["series"] = series;
      if (!key.first.empty()) e["host"] = key.first;
      if (status == "ok") {
        e[place + "_images_per_s"] = ips;
        e[place] = det.value("numa_node", json(nullptr));
      } else {
        e[place + "_reason"] = r.value("reason", json(nullptr));
      }
    }
  }
  for (const auto& [key, byc] : pts) {
    Curve c{key.second, key.first, cpus[key], {}};
    for (const auto& [cores, ips] : byc) c.points.push_back({cores, ips});
    d.curves.push_back(c);
  }
  for (auto& [key, e] : numa) {
    if (e.contains("gpu_node_images_per_s") && e.contains("other_node_images_per_s") && num(e, "gpu_node_images_per_s") > 0)
      e["other_over_gpu_node_ratio"] = num(e, "other_node_images_per_s") / num(e, "gpu_node_images_per_s");
    d.numa.push_back(e);
  }
  return d;
}

const Curve* curve_for(const DecodeData& d, const std::string& precision, const std::string& layout, std::string& note) {
  note.clear();
  if (d.curves.empty()) return nullptr;
  const std::string want = layout + "/" + (precision == "fp16" ? "fp16" : "fp32");
  for (const Curve& c : d.curves)
    if (c.series == want) return &c;
  const Curve* pick = &d.curves.front();
  for (const Curve& c : d.curves)
    if (starts(c.series, (layout + "/").c_str())) {
      pick = &c;
      break;
    }
  note = "no " + want + " decode curve measured: the " + pick->series + " one instead (decoding dominates; the output differs)";
  return pick;
}

namespace {

const GpuDecode* gpu_for(const DecodeData& d, const std::string& series) {
  const GpuDecode* best = nullptr;
  for (const GpuDecode& g : d.gpu)
    if (!best || (g.series == series && best->series != series) ||
        ((g.series == series) == (best->series == series) && g.images_per_s > best->images_per_s))
      best = &g;
  return best;
}

int judged_count(int node_gpus) {
  int at = 1;
  for (int n : judged_gpu_counts())
    if (n <= std::max(1, node_gpus)) at = n;
  return at;
}

json curve_json(const Curve& c) {
  const Scaling s = scaling_of(c);
  json pts = json::array();
  std::vector<CurvePoint> p = c.points;
  std::sort(p.begin(), p.end(), [](const CurvePoint& a, const CurvePoint& b) { return a.cores < b.cores; });
  for (size_t i = 0; i < p.size(); ++i)
    pts.push_back({{"cores", p[i].cores}, {"images_per_s", p[i].images_per_s},
                   {"per_core_images_per_s", p[i].images_per_s / p[i].cores}, {"efficiency", s.efficiency[i]}});
  json j = {{"series", c.series}, {"host_cpus", c.host_cpus}, {"points", pts}, {"per_core_images_per_s", s.per_core_images_per_s},
            {"linear_to_cores", s.linear_to}, {"scaling_stops_at_cores", s.stops_at ? json(s.stops_at) : json(nullptr)}};
  if (!c.host.empty()) j["host"] = c.host;
  return j;
}

}  // namespace

json input_pipeline_analysis(const json& records, int node_gpus) {
  const DecodeData d = decode_data(records);
  json out = {{"curves", json::array()}, {"numa", d.numa}, {"gpu_decode", json::array()}, {"verdicts", json::array()}};
  for (const Curve& c : d.curves) out["curves"].push_back(curve_json(c));
  for (const GpuDecode& g : d.gpu)
    out["gpu_decode"].push_back({{"id", g.id}, {"series", g.series}, {"images_per_s", g.images_per_s}, {"gpu_time_per_image_ms", g.gpu_time_per_image_ms}});
  // The training series: the fastest batch of each precision and layout (what a GPU consumes at most).
  std::map<std::pair<std::string, std::string>, std::tuple<double, int, std::string>> train;
  for (const json& r : records) {
    if (!r.is_object() || str(r, "family") != "train" || str(r, "status") != "ok") continue;
    const json& p = r["params"];
    // The training rate: the train family's bare images_per_s, the name this family's rate has too.
    const double ips = kImagesPerS.of(r).value_or(0);
    auto& best = train[{str(p, "precision"), str(p, "layout")}];
    if (ips > std::get<0>(best)) best = {ips, int(num(p, "batch")), str(r, "id")};
  }
  const int at = judged_count(node_gpus);
  out["judged_at_gpus"] = at;
  for (const auto& [key, best] : train) {
    std::string note;
    const Curve* c = curve_for(d, key.first, key.second, note);
    if (!c) break;
    const GpuDecode* g = gpu_for(d, c->series);
    json v = {{"precision", key.first}, {"layout", key.second}, {"batch", std::get<1>(best)},
              {"per_gpu_images_per_s", std::get<0>(best)}, {"source", std::get<2>(best)}, {"curve", c->series},
              {"rows", json::array()}};
    if (!note.empty()) v["note"] = note;
    for (int n : judged_gpu_counts()) {
      json row = feed_row(*c, g, std::get<0>(best), n);
      if (n == at) v["status"] = row["status"], v["text"] = row["text"];
      v["rows"].push_back(std::move(row));
    }
    out["verdicts"].push_back(std::move(v));
  }
  if (train.empty())
    out["note"] = "no train record in this result: `nodebench advise TRAIN_RESULT.json THIS_RESULT.json` judges the input "
                  "pipeline against a measured training step";
  return out;
}

std::vector<std::string> input_pipeline_lines(const json& a) {
  std::vector<std::string> lines;
  for (const json& c : a.value("curves", json::array())) {
    std::string l = "input decode " + c["series"].get<std::string>() + ": " + fmt(c["per_core_images_per_s"].get<double>(), 0) +
                    " images/s per core, linear to " + std::to_string(c["linear_to_cores"].get<int>()) + " of " +
                    std::to_string(c["points"].back()["cores"].get<int>()) + " workers (" +
                    fmt(c["points"].back()["images_per_s"].get<double>(), 0) + " images/s)";
    if (!c["scaling_stops_at_cores"].is_null())
      l += "; scaling stops at " + std::to_string(c["scaling_stops_at_cores"].get<int>()) + " workers";
    lines.push_back(l);
  }
  for (const json& v : a.value("verdicts", json::array()))
    lines.push_back("input pipeline for the " + v["precision"].get<std::string>() + "/" + v["layout"].get<std::string>() +
                    " training step (batch " + std::to_string(v["batch"].get<int>()) + "), at " +
                    std::to_string(a["judged_at_gpus"].get<int>()) + " GPU(s): " + v["text"].get<std::string>() + " (" +
                    v["status"].get<std::string>() + ")");
  if (a.contains("note")) lines.push_back("input pipeline: " + a["note"].get<std::string>());
  return lines;
}

json judge_step(const json& records, const std::string& precision, const std::string& layout, double images_per_s, int gpus) {
  const DecodeData d = decode_data(records);
  std::string note;
  const Curve* c = curve_for(d, precision, layout, note);
  if (!c || gpus < 1) return nullptr;
  json row = feed_row(*c, gpu_for(d, c->series), images_per_s / gpus, gpus);
  if (!note.empty()) row["text"] = row["text"].get<std::string>() + " (" + note + ")";
  if (!c->host.empty()) row["host"] = c->host;
  return row;
}

}  // namespace nb::input
