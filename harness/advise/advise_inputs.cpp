#include "advise/advise_inputs.hpp"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <iomanip>
#include <map>
#include <sstream>
#include <tuple>

#include "base/error.hpp"
#include "bench/metric_registry.hpp"
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
    const std::string family = family_of_record(r);
    AdviceFacts facts;
    for (const AdviceContribution& c : advice_contributions())
      if (c.family == family && c.read) {
        c.read(r, facts);
        if (!c.partial_step_note.empty())
          for (const StepTime& s : facts.steps)
            if (s.partial) in_.partial_step_notes.emplace(s.kind, c.partial_step_note);
      }
    for (const CollectivePoint& p : facts.allreduce) add_allreduce(p);
    for (const HostCopyRate& h : facts.host_copies) add_host_copy(h);
    for (const StepTime& s : facts.steps) add_step(s);
    for (const DataParallelStep& d : facts.dp)
      if (d.batch > 0 && d.gpus > 0 && d.images_per_s > 0) in_.dp.push_back(d);
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
    for (const auto& [k, s] : full_) in_.steps.push_back(s);
    for (const auto& [k, s] : partial_)
      if (!full_.count(k)) in_.steps.push_back(s);
    std::sort(in_.steps.begin(), in_.steps.end(), [](const StepSource& a, const StepSource& b) {
      return std::tie(a.precision, a.layout, a.batch) < std::tie(b.precision, b.layout, b.batch);
    });
  }

 private:
  struct Host {
    double bytes = 0, gbps = 0;
  };
  using Key = std::tuple<std::string, std::string, int>;

  void add_allreduce(const CollectivePoint& p) {
    in_.nccl_settings.insert(p.settings.empty() ? "defaults" : p.settings);
    auto& cell = ar_[p.dtype][p.gpus][p.bytes];
    std::get<0>(cell) += p.busbw_gbps;
    std::get<1>(cell) += p.time_s;
    std::get<2>(cell) += 1;
  }

  // The largest transfer per (memory, GPU); of equal sizes the fastest.
  void add_host_copy(const HostCopyRate& c) {
    if (c.memory != "pinned" && c.memory != "pageable") return;
    Host& h = host_[{c.memory, c.gpu}];
    if (c.bytes > h.bytes || (c.bytes == h.bytes && c.gbps > h.gbps)) h = {c.bytes, c.gbps};
  }

  // A one-GPU step: the slowest per (precision, layout, batch); the peak memory of the records of
  // that key, the largest since the slowest was taken.
  void add_step(const StepTime& st) {
    std::map<Key, StepSource>& into = st.partial ? partial_ : full_;
    const Key k{st.precision, st.layout, st.batch};
    if (st.step_s > 0) {
      StepSource& s = into[k];
      if (st.step_s > s.step_s) {
        s = st;
        s.peak_memory_bytes.reset();
      }
    }
    if (!st.peak_memory_bytes) return;
    const auto it = into.find(k);
    if (it != into.end() && (!it->second.peak_memory_bytes || *st.peak_memory_bytes > *it->second.peak_memory_bytes))
      it->second.peak_memory_bytes = st.peak_memory_bytes;
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
  std::map<Key, StepSource> full_, partial_;
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
  // The host's input rate, judged by the family that contributes one (when built).
  for (const AdviceContribution& c : advice_contributions())
    if (c.input && c.input->gather && c.input->judge) {
      in.input_pipeline = {c.input->gather(docs), c.input->judge};
      break;
    }
  return in;
}

namespace {

std::string shown(const json& v) {
  std::string s = v.dump();
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

// A figure a contribution relies on, refused out of range (named).
void check_figure(const json& r, const FigureRule& rule, const std::string& at, const std::string& id) {
  if (!r.contains(rule.section) || r[rule.section].is_null()) return;
  const json& sec = r[rule.section];
  const std::string field = rule.section + "." + rule.key;
  if (!sec.is_object()) throw Error(at + " (" + id + "): '" + rule.section + "' must be an object, found " + shown(sec));
  const auto it = sec.find(rule.key);
  if (it == sec.end() || it->is_null()) return;
  const bool ok = it->is_number() && std::isfinite(it->get<double>()) &&
                  (rule.strict ? it->get<double>() > rule.least : it->get<double>() >= rule.least);
  if (!ok)
    throw Error(at + " (" + id + "): '" + field + "' must be a number " + (rule.strict ? "above " : "of at least ") +
                std::to_string(int(rule.least)) + ", found " + shown(*it));
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
    for (const AdviceContribution& c : advice_contributions()) {
      if (c.family != family) continue;
      for (const FigureRule& rule : c.figures) check_figure(r, rule, at, id);
    }
  }
  // Every record's metrics against the declarations: a value that is not a number refused, a
  // name nobody declares named once (bench/metric_registry.hpp).
  check_record_metrics(doc, path, std::cerr);
}

}  // namespace nb::advise
