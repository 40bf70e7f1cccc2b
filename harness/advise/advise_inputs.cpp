#include "advise/advise_inputs.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <sstream>
#include <tuple>

#include "base/error.hpp"
#include "node/profiles.hpp"

namespace nb::advise {
namespace {

// The built-in device profiles, parsed once (a profile found in them outlives the call).
static const ProfileDb& builtin_profiles() {
  static const ProfileDb db = ProfileDb::builtin();
  return db;
}

using nlohmann::json;

std::optional<double> num(const json& obj, const char* key) {
  if (!obj.is_object()) return std::nullopt;
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::string str(const json& obj, const char* key) {
  if (!obj.is_object()) return {};
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

std::string fmt_num(double v) {
  std::ostringstream os;
  os << std::setprecision(3) << v;
  return os.str();
}

// "23,040 MiB"
std::string fmt_mib(double bytes) {
  std::string s = std::to_string((long long)std::llround(bytes / 1048576.0));
  for (int i = int(s.size()) - 3; i > 0; i -= 3) s.insert(size_t(i), ",");
  return s + " MiB";
}

bool has_flag(const json& r, const char* flag) {
  const auto it = r.find("flags");
  return it != r.end() && it->is_array() && std::find(it->begin(), it->end(), json(flag)) != it->end();
}

// What the result files hold for the advisor, gathered record by record, then summarised into
// Inputs (finish).
class Gatherer {
 public:
  explicit Gatherer(Inputs& in) : in_(in) {}

  void add_fp16_verdicts(const json& an) {
    if (!an.is_object() || !an.contains("fp16_vs_fp32") || !an["fp16_vs_fp32"].is_array()) return;
    for (const json& v : an["fp16_vs_fp32"]) {
      const std::string verdict = str(v, "verdict");
      if (verdict.empty() || verdict == "not_measured") continue;  // a file without gemm/peak says nothing
      std::string gpu = v.contains("gpu") && v["gpu"].is_number() ? "GPU " + std::to_string(v["gpu"].get<int>()) : "";
      in_.fp16_verdicts.push_back(verdict + ": " + str(v, "reason") + (gpu.empty() ? "" : " (" + gpu + ")"));
    }
  }

  void add_record(const json& r) {
    if (!r.is_object() || str(r, "status") != "ok") return;
    const std::string id = str(r, "id");
    const json& p = r.contains("params") ? r["params"] : json();
    const json& m = r.contains("metrics") ? r["metrics"] : json();
    const int gpu = r.contains("gpus") && r["gpus"].is_array() && !r["gpus"].empty() && r["gpus"][0].is_number()
                        ? r["gpus"][0].get<int>()
                        : 0;
    if (starts_with(id, "nccl/") && str(p, "collective") == "all_reduce") {
      add_allreduce(r, p, m);
    } else if (starts_with(id, "hostlink/h2d/") && str(p, "direction") == "h2d" &&
               (str(p, "engine").empty() || str(p, "engine") == "ce")) {
      add_host_copy(p, m, gpu);
    } else if (starts_with(id, "train/resnet50/")) {
      const auto ms = num(m, "step_time_ms");
      add_step(train_, id, p, ms ? std::optional<double>(*ms * 1e-3) : std::nullopt, false);
      if (const auto mem = num(m, "peak_memory_bytes"); mem && num(p, "batch")) {
        const auto it = train_.find({str(p, "precision"), str(p, "layout"), int(*num(p, "batch"))});
        if (it != train_.end() && (!it->second.peak_memory_bytes || *mem > *it->second.peak_memory_bytes))
          it->second.peak_memory_bytes = *mem;
      }
    } else if (starts_with(id, "conv/resnet50/") && str(p, "pass") == "train") {
      const auto us = num(m, "time_us");
      add_step(conv_, id, p, us ? std::optional<double>(*us * 1e-6) : std::nullopt, true);
    } else if (starts_with(id, "train_dp/")) {
      add_dp(id, p, m);
    }
  }

  void finish(const std::string& grad_dtype) {
    add_curves(grad_dtype == "fp16" ? "half" : "float");
    // Host link: the slowest GPU (a synchronous step waits for it).
    for (const auto& [key, h] : host_) {
      auto& slot = key.first == "pinned" ? in_.pinned_gbps : in_.pageable_gbps;
      if (!slot || h.gbps < *slot) slot = h.gbps;
    }
    if (in_.pinned_gbps || in_.pageable_gbps)
      in_.host_source = "hostlink h2d (copy engine, largest transfer, slowest GPU)";
    for (const auto& [k, s] : train_) in_.steps.push_back(s);
    for (const auto& [k, s] : conv_)
      if (!train_.count(k)) in_.steps.push_back(s);
    std::sort(in_.steps.begin(), in_.steps.end(), [](const StepSource& a, const StepSource& b) {
      return std::tie(a.precision, a.layout, a.batch) < std::tie(b.precision, b.layout, b.batch);
    });
  }

 private:
  struct Host {
    double bytes = 0, gbps = 0;
  };
  using Key = std::tuple<std::string, std::string, int>;

  void add_allreduce(const json& r, const json& p, const json& m) {
    const auto bw = num(m, "busbw_gbps");
    const auto bytes = num(m, "data_bytes") ? num(m, "data_bytes") : num(p, "bytes");
    auto n = num(m, "gpu_count");
    if (!n) n = num(p, "ngpus");
    // One rank crosses no link (flag single_rank; files before the flag: one GPU): not a curve point.
    if (!bw || !bytes || !n || *n < 2 || !(*bw > 0) || has_flag(r, "single_rank")) return;
    std::string settings;
    const json& d = r.contains("details") ? r["details"] : json();
    if (d.is_object() && d.contains("nccl_env") && d["nccl_env"].is_object())
      for (const auto& [k, v] : d["nccl_env"].items())
        if (k != "NCCL_VERSION" && !starts_with(k, "NCCL_DEBUG") && v.is_string())
          settings += (settings.empty() ? "" : " ") + k + "=" + v.get<std::string>();
    in_.nccl_settings.insert(settings.empty() ? "defaults" : settings);
    auto& cell = ar_[str(p, "dtype")][int(*n)][*bytes];
    std::get<0>(cell) += *bw;
    std::get<1>(cell) += num(m, "time_us").value_or(0) * 1e-6;
    std::get<2>(cell) += 1;
  }

  void add_host_copy(const json& p, const json& m, int gpu) {
    const std::string mem = str(p, "memory");
    const auto gbps = num(m, "gbps");
    const auto bytes = num(p, "bytes");
    if ((mem != "pinned" && mem != "pageable") || !gbps || !bytes) return;
    Host& h = host_[{mem, gpu}];
    if (*bytes > h.bytes || (*bytes == h.bytes && *gbps > h.gbps)) h = {*bytes, *gbps};
  }

  // A one-GPU step of `step_s` seconds: the slowest per (precision, layout, batch).
  static void add_step(std::map<Key, StepSource>& into, const std::string& id, const json& p,
                       std::optional<double> step_s, bool from_conv) {
    const auto b = num(p, "batch");
    if (!step_s || !b || !(*step_s > 0)) return;
    Key k{str(p, "precision"), str(p, "layout"), int(*b)};
    StepSource& s = into[k];
    if (*step_s > s.step_s) s = {std::get<0>(k), std::get<1>(k), int(*b), *step_s, id, from_conv, std::nullopt};
  }

  void add_dp(const std::string& id, const json& p, const json& m) {
    MeasuredDp d;
    d.id = id;
    d.precision = str(p, "precision");
    d.layout = str(p, "layout");
    d.batch = int(num(p, "batch").value_or(0));
    d.gpus = int(num(p, "gpus").value_or(0));
    d.accumulation = int(num(p, "accumulation").value_or(1));
    d.images_per_s = num(m, "images_per_s").value_or(0);
    d.efficiency = num(m, "scaling_efficiency_ratio");
    d.step_ms = num(m, "step_time_ms");
    d.exposed_comm_ms = num(m, "exposed_comm_ms");
    if (d.batch > 0 && d.gpus > 0 && d.images_per_s > 0) in_.dp.push_back(d);
  }

  // Curves: the gradient's dtype where it was measured, else whichever dtype has the most points.
  void add_curves(const std::string& want_dtype) {
    std::string dtype = want_dtype;
    if (!ar_.count(dtype)) {
      size_t most = 0;
      for (const auto& [dt, counts] : ar_) {
        size_t n = 0;
        for (const auto& c : counts) n += c.second.size();
        if (n > most) most = n, dtype = dt;
      }
    }
    if (!ar_.count(dtype)) return;
    in_.curve_dtype = dtype;
    for (const auto& [n, sizes] : ar_[dtype]) {
      CommModel::Curve c;
      c.ngpus = n;
      for (const auto& [bytes, cell] : sizes) {
        const double k = std::get<2>(cell);
        c.points.push_back({bytes, std::get<0>(cell) / k, std::get<1>(cell) / k});
      }
      in_.curves.push_back(c);
    }
  }

  Inputs& in_;
  // all-reduce points: dtype -> count -> bytes -> (sum busbw, sum time, n)
  std::map<std::string, std::map<int, std::map<double, std::tuple<double, double, int>>>> ar_;
  std::map<std::pair<std::string, int>, Host> host_;  // (memory, gpu) -> largest transfer
  std::map<Key, StepSource> train_, conv_;
};

// The smallest GPU memory of an environment, with its ECC state and (from the device profile's
// memory_mib and ecc_memory_share) what ECC costs.
void add_gpu_memory(Inputs& in, const json& env) {
  if (!env.is_object() || !env.contains("gpus") || !env["gpus"].is_array()) return;
  for (const json& g : env["gpus"]) {
    const auto bytes = num(g, "memory_bytes");
    if (!bytes || (in.gpu_memory_bytes && *bytes >= *in.gpu_memory_bytes)) continue;
    in.gpu_memory_bytes = *bytes;
    const std::string name = str(g, "name");
    std::string note = fmt_mib(*bytes) + " per GPU (" + (name.empty() ? std::string("GPU") : name);
    const auto ecc = g.contains("ecc_enabled") && g["ecc_enabled"].is_boolean() ? std::optional<bool>(g["ecc_enabled"].get<bool>())
                                                                                  : std::nullopt;
    const DeviceProfile* prof = str(g, "profile").empty() ? nullptr : builtin_profiles().find(str(g, "profile"));
    std::optional<double> share, total;
    if (prof) {
      if (auto it = prof->numbers.find("ecc_memory_share"); it != prof->numbers.end()) share = it->second;
      if (auto it = prof->numbers.find("memory_mib"); it != prof->numbers.end()) total = it->second;
    }
    if (ecc && *ecc)
      note += ", ECC on" + (share && total ? ": it reserves " + fmt_mib(*share * *total * 1048576.0) + ", " +
                                                 fmt_num(100 * *share) + "% of " + fmt_mib(*total * 1048576.0)
                                           : std::string());
    else if (ecc)
      note += ", ECC off" + (share && total ? ": turning it on reserves " + fmt_mib(*share * *total * 1048576.0) +
                                                  " of it"
                                            : std::string());
    in.gpu_memory_note = note + ")";
  }
}

}  // namespace

Inputs gather_inputs(const std::vector<json>& docs, const std::string& grad_dtype) {
  Inputs in;
  Gatherer g(in);
  for (const json& doc : docs) {
    ++in.files;
    if (!doc.is_object()) continue;
    g.add_fp16_verdicts(doc.contains("analysis") ? doc["analysis"] : json());
    if (doc.contains("environment")) add_gpu_memory(in, doc["environment"]);
    if (!doc.contains("records") || !doc["records"].is_array()) continue;
    for (const json& r : doc["records"]) g.add_record(r);
  }
  g.finish(grad_dtype);
  return in;
}

namespace {

// The figures the advisor reads, by family (the id's first part), and the least each may be:
// strict: above `least`; else at least `least`.
struct FieldRule {
  const char* family;
  const char* section;
  const char* key;
  double least;
  bool strict;
};
constexpr FieldRule kRules[] = {
    {"nccl", "metrics", "busbw_gbps", 0, false}, {"nccl", "metrics", "data_bytes", 0, true},
    {"nccl", "metrics", "time_us", 0, true},     {"nccl", "metrics", "gpu_count", 1, false},
    {"nccl", "params", "bytes", 0, true},        {"nccl", "params", "ngpus", 1, false},
    {"hostlink", "metrics", "gbps", 0, true},    {"hostlink", "params", "bytes", 0, true},
    {"train", "metrics", "step_time_ms", 0, true}, {"train", "params", "batch", 1, false},
    {"conv", "metrics", "time_us", 0, true},     {"conv", "params", "batch", 1, false},
    {"train_dp", "metrics", "images_per_s", 0, false}, {"train_dp", "metrics", "step_time_ms", 0, true},
    {"train_dp", "params", "batch", 1, false},   {"train_dp", "params", "gpus", 1, false},
    {"train_dp", "params", "accumulation", 1, false},
};

std::string shown(const json& v) {
  std::string s = v.dump();
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

}  // namespace

void check_result_document(const json& doc, const std::string& path) {
  if (!doc.is_object())
    throw Error(path + ": not a nodebench result file (a JSON object with 'records'; found " + doc.type_name() + ")");
  const std::string schema = str(doc, "schema");
  if (doc.contains("benchmarks") && !doc.contains("records"))
    throw Error(path + ": a Google Benchmark JSON file (run --gbench-out), not a nodebench result file: give the "
                       "result file written beside it");
  if (!schema.empty() && schema != "nodebench.result")
    throw Error(path + ": a '" + schema + "' document, not a nodebench result file ('nodebench.result')");
  if (!doc.contains("records")) throw Error(path + ": not a nodebench result file (no 'records')");
  const json& recs = doc["records"];
  if (!recs.is_array()) throw Error(path + ": 'records' must be an array (found " + recs.type_name() + ")");
  for (size_t i = 0; i < recs.size(); ++i) {
    const json& r = recs[i];
    const std::string at = path + ": records[" + std::to_string(i) + "]";
    if (!r.is_object()) throw Error(at + " must be an object (a case's record), found " + r.type_name() + " " + shown(r));
    if (r.contains("id") && !r["id"].is_string()) throw Error(at + ": 'id' must be a string, found " + shown(r["id"]));
    if (str(r, "status") != "ok") continue;
    const std::string id = str(r, "id");
    const std::string family = id.substr(0, id.find('/'));
    for (const FieldRule& rule : kRules) {
      if (family != rule.family) continue;
      if (!r.contains(rule.section) || r[rule.section].is_null()) continue;
      const json& sec = r[rule.section];
      const std::string field = std::string(rule.section) + "." + rule.key;
      if (!sec.is_object()) throw Error(at + " (" + id + "): '" + rule.section + "' must be an object, found " + shown(sec));
      const auto it = sec.find(rule.key);
      if (it == sec.end() || it->is_null()) continue;
      const bool ok = it->is_number() && std::isfinite(it->get<double>()) &&
                      (rule.strict ? it->get<double>() > rule.least : it->get<double>() >= rule.least);
      if (!ok)
        throw Error(at + " (" + id + "): '" + field + "' must be a number " + (rule.strict ? "above " : "of at least ") +
                    std::to_string(int(rule.least)) + ", found " + shown(*it));
    }
  }
}

}  // namespace nb::advise
