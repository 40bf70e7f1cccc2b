#include "validate.hpp"
#include "plan.hpp"
#include "runner.hpp"
#include "session.hpp"
#include "text.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <set>
#include <sstream>

#include "error.hpp"
#include "profiles.hpp"
#include "result.hpp"
#include "runner.hpp"

#include "build_info.hpp"

namespace nb {

extern const char* const kBuiltinThresholdsJson;  // generated from harness/profiles/thresholds.json

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// The check ids validate judges: its own (GEMM, memory, host link, peer copies and all-reduce by
// link class) and those the families declare (Family::validation_checks()).
bool known_check_id(const std::string& id) {
  static const char* const kFixed[] = {"gemm.fp32", "memory.copy", "memory.triad", "hostlink.h2d", "hostlink.d2h"};
  for (const char* k : kFixed)
    if (id == k) return true;
  for (const std::string prefix : {"p2p.", "nccl.all_reduce."})
    if (id.size() > prefix.size() && id.compare(0, prefix.size(), prefix) == 0 &&
        id.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_", prefix.size()) == std::string::npos)
      return true;
  for (const auto& f : family_registry())
    for (const ValidationCheck& vc : f->validation_checks())
      if (vc.id == id) return true;
  return false;
}

void check_entries(const json& entries, const std::string& where, bool need_unit) {
  if (!entries.is_object()) throw Error("thresholds: '" + where + "' must be an object of check ids");
  for (auto it = entries.begin(); it != entries.end(); ++it) {
    const json& e = it.value();
    if (!known_check_id(it.key()))
      throw Error("thresholds: " + where + "." + it.key() + ": unknown check id '" + it.key() +
                  "' (known: gemm.fp32, memory.copy, memory.triad, hostlink.h2d, hostlink.d2h, p2p.<link>, "
                  "nccl.all_reduce.<link>, and the checks families declare)");
    if (!e.is_object() || !e.contains("min") || !e["min"].is_number())
      throw Error("thresholds: " + where + "." + it.key() + " needs a numeric 'min'");
    if (need_unit && (!e.contains("unit") || !e["unit"].is_string()))
      throw Error("thresholds: " + where + "." + it.key() + " needs a 'unit'");
  }
}

// A whole document needs a unit on every default; an override merged over one may leave it out.
void validate_doc(const json& j, bool need_unit = true) {
  if (!j.is_object()) throw Error("thresholds: expected a JSON object with 'defaults' and/or 'models'");
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "about" && it.key() != "defaults" && it.key() != "models")
      throw Error("thresholds: unknown key '" + it.key() + "' (expected 'about', 'defaults' and 'models')");
  if (j.contains("defaults")) check_entries(j["defaults"], "defaults", need_unit);
  if (j.contains("models")) {
    if (!j["models"].is_object()) throw Error("thresholds: 'models' must be an object of model names");
    for (auto it = j["models"].begin(); it != j["models"].end(); ++it) check_entries(it.value(), "models." + it.key(), false);
  }
}

const json* gpu_json(const json& env, int index) {
  if (!env.is_object() || !env.contains("gpus") || !env["gpus"].is_array()) return nullptr;
  for (const auto& g : env["gpus"])
    if (g.value("index", -1) == index) return &g;
  return nullptr;
}

// j[k], or null where j has no such key (const operator[] must not be used on missing keys).
const json& at(const json& j, const char* k) {
  static const json null_json;
  return j.is_object() && j.contains(k) ? j[k] : null_json;
}

double num_or(const json& j, const char* k, double dflt) {
  return j.is_object() && j.contains(k) && j[k].is_number() ? j[k].get<double>() : dflt;
}

std::string str_or(const json& j, const char* k, const std::string& dflt = "") {
  return j.is_object() && j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : dflt;
}

bool on_gpu(const json& r, int g) {
  return r.contains("gpus") && r["gpus"].is_array() && r["gpus"].size() == 1 && r["gpus"][0].is_number() &&
         r["gpus"][0].get<int>() == g;
}

// The per-direction PCIe rate of a GPU's maximum link (so that a link trained down shows).
std::optional<double> max_link_gbps(const json& env, int index, const json* record = nullptr) {
  std::optional<unsigned> gen, width;
  if (const json* g = gpu_json(env, index); g && g->contains("pcie") && (*g)["pcie"].is_object()) {
    const json& p = (*g)["pcie"];
    if (p.contains("gen_max") && p["gen_max"].is_number()) gen = p["gen_max"].get<unsigned>();
    if (p.contains("width_max") && p["width_max"].is_number()) width = p["width_max"].get<unsigned>();
  }
  if ((!gen || !width) && record && at(at(*record, "details"), "link").is_object()) {
    const json& l = at(at(*record, "details"), "link");
    if (l.contains("gen_max") && l["gen_max"].is_number()) gen = l["gen_max"].get<unsigned>();
    if (l.contains("width_max") && l["width_max"].is_number()) width = l["width_max"].get<unsigned>();
  }
  if (!gen || !width) return std::nullopt;
  return pcie_gbps(*gen, *width);
}

Check skipped_check(const std::string& id, std::optional<int> gpu, const std::string& why, const std::string& evidence = "") {
  Check c;
  c.id = id;
  c.gpu = gpu;
  c.severity = Severity::info;
  c.skipped = true;
  c.summary = "skipped: " + why;
  c.evidence = evidence;
  return c;
}

// The record with the largest params.bytes among those `pred` accepts (records without bytes
// count as 0), or null.
template <class Pred>
const json* largest(const json& records, Pred pred) {
  const json* best = nullptr;
  double best_bytes = -1;
  for (const auto& r : records) {
    if (!pred(r)) continue;
    const double b = num_or(at(r, "params"), "bytes", 0);
    if (b > best_bytes) {
      best = &r;
      best_bytes = b;
    }
  }
  return best;
}

const char* kGemmCase = "gemm/fp32/cublas/square_8192";

// The link class a peer or collective threshold is chosen by: "nvlink", "sys" (across CPU
// sockets) or "pcie". From the record's params.link, else from the p2p family's
// analysis.p2p.link_type matrix (NVLink, PIX, PXB, PHB, NODE, SYS) over the GPUs involved: NVLink
// when every pair is, SYS when any pair is; "pcie" when nothing says.
std::string link_class(const json& doc, const json& rec, const std::vector<int>& members) {
  const std::string given = str_or(at(rec, "params"), "link");
  if (!given.empty()) {
    std::string l = given;
    std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return std::tolower(c); });
    return l;
  }
  const json& p2p = at(at(doc, "analysis"), "p2p");
  const json& ids = at(p2p, "gpus");
  const json& types = at(p2p, "link_type");
  if (!ids.is_array() || !types.is_array()) return "pcie";
  auto pos = [&](int g) -> std::optional<size_t> {
    for (size_t i = 0; i < ids.size(); ++i)
      if (ids[i].is_number() && ids[i].get<int>() == g) return i;
    return std::nullopt;
  };
  bool all_nvlink = true, any_sys = false, known = false;
  for (size_t x = 0; x < members.size(); ++x)
    for (size_t y = 0; y < members.size(); ++y) {
      if (x == y) continue;
      const auto a = pos(members[x]), b = pos(members[y]);
      if (!a || !b || *a >= types.size() || !types[*a].is_array() || *b >= types[*a].size() || !types[*a][*b].is_string())
        return "pcie";
      const std::string t = types[*a][*b].get<std::string>();
      known = true;
      all_nvlink = all_nvlink && t == "NVLink";
      any_sys = any_sys || t == "SYS";
    }
  if (!known) return "pcie";
  if (all_nvlink) return "nvlink";
  return any_sys ? "sys" : "pcie";
}

std::string fix_for(const std::string& id) {
  if (id.rfind("gemm.", 0) == 0)
    return "SGEMM runs below what this GPU should reach: look at gpu.throttle, gpu.thermal and gpu.processes above; "
           "check the power limit and clocks (nvidia-smi -q -d PERFORMANCE,POWER,CLOCK; nvidia-smi -rgc resets locked "
           "clocks); make sure the device profile matches this GPU (its peak assumes the boost clock).";
  if (id.rfind("memory.", 0) == 0)
    return "Device memory bandwidth is low: check that the memory clock reaches its maximum (application clocks: "
           "nvidia-smi -rac), that no other process uses the GPU, gpu.throttle, and ecc.retired (a GPU with pending "
           "remaps runs degraded).";
  if (id.rfind("hostlink.", 0) == 0)
    return "Host-device bandwidth is low: see pcie.link (a link trained at lower width or generation), run the copy "
           "from the GPU's NUMA node (numactl --cpunodebind=N --membind=N), check p2p.iommu (a translating IOMMU slows "
           "DMA), and the BIOS PCIe settings (link speed, max payload size).";
  if (id.rfind("p2p.", 0) == 0)
    return "Peer bandwidth is low: see p2p.access, p2p.topology and p2p.iommu; on NVLink systems check "
           "nvidia-smi nvlink -s for inactive links and the fabric manager (nvidia-fabricmanager) on NVSwitch systems.";
  if (id.rfind("nccl.", 0) == 0)
    return "All-reduce bandwidth is low: run with NCCL_DEBUG=INFO to see the transport chosen (P2P/SHM/NET), check "
           "p2p.* above, and that nvidia-fabricmanager runs on NVSwitch systems.";
  return "";
}

// Judges one record: failed or wrong fail; skipped skips; otherwise the value against the threshold.
Check judge_record(const std::string& id, std::optional<int> gpu, const json* rec, const std::string& model,
                   const ThresholdDb& db, const std::string& what,
                   const std::function<std::optional<double>(const json&, std::string&)>& value_of) {
  if (!rec) return skipped_check(id, gpu, "no " + what + " record in this run");
  const std::string rid = str_or(*rec, "id");
  const std::string status = str_or(*rec, "status");
  const std::string reason = str_or(*rec, "reason");
  if (status == "failed" || status == "wrong") {
    Check c;
    c.id = id;
    c.gpu = gpu;
    c.severity = Severity::fail;
    c.summary = rid + " " + status + (reason.empty() ? "" : ": " + reason);
    c.evidence = "record " + rid;
    c.fix = status == "wrong" ? "A wrong result means the GPU computed incorrect data: rerun; if it repeats, drain the node "
                                "and check ECC and Xid errors (dmesg)."
                              : "The benchmark itself failed: see the reason, and the record in the result file.";
    return c;
  }
  if (status != "ok") return skipped_check(id, gpu, rid + " " + status + (reason.empty() ? "" : ": " + reason));
  std::string how;
  const std::optional<double> v = value_of(*rec, how);
  if (!v) return skipped_check(id, gpu, "no value to judge in " + rid + (how.empty() ? "" : " (" + how + ")"));
  const auto t = db.get(id, model);
  if (!t) {
    Check c = skipped_check(id, gpu, "no threshold for " + id + (model.empty() ? "" : " (model " + model + ")"), how);
    c.value = v;
    return c;
  }
  std::string ev = rid + ": " + how;
  if (rec->contains("flags") && (*rec)["flags"].is_array() && !(*rec)["flags"].empty()) {
    std::vector<std::string> f;
    for (const auto& x : (*rec)["flags"])
      if (x.is_string() && x != "clock_unknown") f.push_back(x.get<std::string>());
    if (!f.empty()) ev += "; flags: " + join(f, ", ");
  }
  return judge_value(id, gpu, *v, *t, ev, fix_for(id));
}

std::string unit_text(const std::string& unit) {
  if (unit == "percent_of_peak") return "% of peak";
  if (unit == "percent_of_link") return "% of link";
  if (unit == "gbps") return " GB/s";
  return " " + unit;
}

}  // namespace

// ---- Thresholds --------------------------------------------------------------------------------

ThresholdDb ThresholdDb::builtin() {
  return from_json(json::parse(kBuiltinThresholdsJson), "built-in harness/profiles/thresholds.json");
}

ThresholdDb ThresholdDb::from_json(const json& j, const std::string& origin) {
  validate_doc(j);
  ThresholdDb db;
  db.doc_ = {{"defaults", j.value("defaults", json::object())}, {"models", j.value("models", json::object())}};
  db.origin_ = origin;
  return db;
}

void ThresholdDb::merge(const json& j, const std::string& origin) {
  validate_doc(j, false);
  for (const char* section : {"defaults", "models"}) {
    if (!j.contains(section)) continue;
    for (auto it = j[section].begin(); it != j[section].end(); ++it) {
      json& dst = doc_[section][it.key()];
      if (std::string(section) == "defaults") {
        if (!dst.is_object()) dst = json::object();
        dst.update(it.value());
      } else {
        if (!dst.is_object()) dst = json::object();
        for (auto e = it.value().begin(); e != it.value().end(); ++e) {
          if (!dst[e.key()].is_object()) dst[e.key()] = json::object();
          dst[e.key()].update(e.value());
        }
      }
    }
  }
  validate_doc(doc_);  // a new default without a unit
  origin_ += " + " + origin;
}

bool ThresholdDb::has_model(const std::string& model) const { return doc_["models"].contains(model); }

std::vector<std::string> ThresholdDb::models() const {
  std::vector<std::string> out;
  for (auto it = doc_["models"].begin(); it != doc_["models"].end(); ++it) out.push_back(it.key());
  return out;
}

std::optional<Threshold> ThresholdDb::get(const std::string& check, const std::string& model) const {
  const json& d = doc_["defaults"];
  const json* def = d.contains(check) ? &d[check] : nullptr;
  const json* mod = nullptr;
  if (!model.empty() && doc_["models"].contains(model) && doc_["models"][model].contains(check))
    mod = &doc_["models"][model][check];
  if (!def && !mod) return std::nullopt;
  Threshold t;
  const json& primary = mod ? *mod : *def;
  t.min = primary["min"].get<double>();
  t.unit = str_or(primary, "unit", def ? str_or(*def, "unit") : "");
  t.why = str_or(primary, "why", def ? str_or(*def, "why") : "");
  t.source = (mod ? "model:" + model : std::string("defaults")) + " (" + origin_ + ")";
  if (t.unit.empty()) return std::nullopt;
  return t;
}

json ProfileChoice::to_json() const {
  json m = json::object();
  for (const auto& [g, name] : model) m[std::to_string(g)] = name.empty() ? json(nullptr) : json(name);
  return {{"requested", requested}, {"thresholds", db.origin()}, {"models", m}};
}

ProfileChoice resolve_profile(const std::string& arg, const json& environment) {
  ProfileChoice p;
  p.requested = arg;
  std::string forced;
  std::error_code ec;
  if (arg == "auto") {
    // by GPU below
  } else if (fs::is_regular_file(arg, ec)) {
    std::ifstream f(arg);
    json j;
    try {
      j = json::parse(f);
    } catch (const json::exception& e) {
      throw Error("--profile: '" + arg + "' is not valid JSON: " + e.what());
    }
    try {
      p.db.merge(j, "file " + arg);
    } catch (const Error& e) {
      throw Error("--profile: '" + arg + "': " + e.what());
    }
  } else if (p.db.has_model(arg)) {
    forced = arg;
  } else {
    throw Error("--profile: '" + arg + "' is neither 'auto', a model of the thresholds file (" + join(p.db.models(), ", ") +
                "), nor a readable file");
  }
  if (environment.is_object() && environment.contains("gpus") && environment["gpus"].is_array())
    for (const auto& g : environment["gpus"]) {
      const int idx = g.value("index", 0);
      if (!forced.empty()) {
        p.model[idx] = forced;
      } else {
        const std::string prof = str_or(g, "profile");
        p.model[idx] = p.db.has_model(prof) ? prof : "";
      }
    }
  return p;
}

// ---- Planning ----------------------------------------------------------------------------------

std::string exact_id_filter(const std::vector<std::string>& ids) {
  std::string out = "^(";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out += "|";
    for (char c : ids[i]) {
      if (std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '_' || c == '-') out += c;
      else out += std::string("\\") + c;
    }
  }
  return out + ")$";
}

BenchPlan plan_benchmarks(int level, const std::vector<std::string>& built, const std::vector<Case>& quick_cases,
                          int gpu_count) {
  BenchPlan p;
  auto is_built = [&](const std::string& f) { return std::find(built.begin(), built.end(), f) != built.end(); };
  const std::vector<std::string> needed =
      level >= 3 ? std::vector<std::string>{"gemm", "memory", "hostlink", "p2p", "nccl"}
                 : std::vector<std::string>{"gemm", "memory", "hostlink"};
  if (level <= 1) return p;
  for (const auto& f : needed)
    if (!is_built(f)) p.missing.push_back(f);
  if (level >= 3) {
    p.suite = Suite::full;
    p.run_all = !built.empty();
    p.families = built;
    return p;
  }
  p.suite = Suite::quick;
  auto bytes_of = [](const Case& c) { return c.params.contains("bytes") && c.params["bytes"].is_number() ? c.params["bytes"].get<double>() : 0.0; };
  auto pick = [&](auto pred) -> const Case* {
    const Case* best = nullptr;
    for (const auto& c : quick_cases)
      if (pred(c) && (!best || bytes_of(c) > bytes_of(*best))) best = &c;
    return best;
  };
  auto add = [&](const Case* c) {
    if (!c) return;
    p.case_ids.push_back(c->id());
    if (std::find(p.families.begin(), p.families.end(), c->family) == p.families.end()) p.families.push_back(c->family);
  };
  add(pick([](const Case& c) { return c.id() == kGemmCase; }));
  for (const char* k : {"copy", "triad"})
    add(pick([k](const Case& c) { return c.family == "memory" && c.params.value("kernel", "") == k; }));
  for (const char* d : {"h2d", "d2h"}) {
    // Pinned memory, copy engine where the family says which engine.
    add(pick([d](const Case& c) {
      return c.family == "hostlink" && c.params.value("direction", "") == d && c.params.value("memory", "") == "pinned" &&
             c.params.value("engine", "ce") == "ce";
    }));
  }
  // Checks the families declare in their own files.
  for (const auto& f : family_registry()) {
    if (!is_built(f->name())) continue;
    for (const ValidationCheck& vc : f->validation_checks())
      if (vc.runs_case) add(pick([&](const Case& c) { return c.family == f->name() && vc.runs_case(c); }));
  }
  // Peer copies between every ordered pair: one multi-GPU case, when there are pairs.
  if (gpu_count >= 2)
    add(pick([](const Case& c) {
      return c.family == "p2p" && c.params.value("test", "bandwidth") == "bandwidth" &&
             c.params.value("mode", "one_way") == "one_way" && c.params.value("peer", "enabled") == "enabled" &&
             c.params.value("engine", "ce") == "ce";
    }));
  return p;
}

// ---- Judging -----------------------------------------------------------------------------------

Check judge_value(const std::string& id, std::optional<int> gpu, double value, const Threshold& t,
                  const std::string& evidence, const std::string& fix) {
  Check c;
  c.id = id;
  c.gpu = gpu;
  c.value = value;
  c.threshold = t.min;
  c.unit = t.unit;
  const int prec = t.unit == "gbps" ? 1 : 1;
  const std::string v = fmt(value, prec) + unit_text(t.unit);
  const std::string m = fmt(t.min, prec) + unit_text(t.unit);
  c.evidence = evidence + "; threshold " + m + " from " + t.source + (t.why.empty() ? "" : ": " + t.why);
  if (value >= t.min) {
    c.severity = Severity::ok;
    c.summary = v + " (>= " + m + ")";
  } else {
    c.severity = Severity::fail;
    c.summary = v + ", below the " + m + " threshold";
    c.fix = fix;
  }
  return c;
}

std::vector<Check> judge_results(const json& doc, const ProfileChoice& profile, int level,
                                 const std::vector<std::string>& built, const std::vector<int>& gpus) {
  std::vector<Check> out;
  if (level < 2) return out;
  const json records = doc.contains("records") && doc["records"].is_array() ? doc["records"] : json::array();
  const json env = doc.contains("environment") ? doc["environment"] : json::object();
  auto is_built = [&](const std::string& f) { return std::find(built.begin(), built.end(), f) != built.end(); };
  auto model_of = [&](int g) {
    auto it = profile.model.find(g);
    return it == profile.model.end() ? std::string() : it->second;
  };
  auto pct_of_peak = [](const json& r, std::string& how) -> std::optional<double> {
    if (r.contains("percent_of_peak") && r["percent_of_peak"].is_object()) {
      const json& p = r["percent_of_peak"];
      const double pct = num_or(p, "percent", NAN);
      if (std::isfinite(pct)) {
        how = fmt(num_or(at(r, "metrics"), str_or(p, "metric", "?").c_str(), NAN), 2) + " " + str_or(p, "metric") + " of " +
              fmt(num_or(p, "peak", NAN), 1) + " peak (" + str_or(p, "source") + ")";
        return pct;
      }
    }
    how = "no expected peak is known for this GPU: add it to harness/profiles/devices.json";
    return std::nullopt;
  };

  for (int g : gpus) {
    const std::string model = model_of(g);
    // GEMM
    if (!is_built("gemm")) {
      out.push_back(skipped_check("gemm.fp32", g, "family not built"));
    } else {
      const json* rec = nullptr;
      for (const auto& r : records)
        if (str_or(r, "id") == kGemmCase && on_gpu(r, g)) rec = &r;
      out.push_back(judge_record("gemm.fp32", g, rec, model, profile.db, kGemmCase, pct_of_peak));
    }
    // Device memory
    for (const char* k : {"copy", "triad"}) {
      const std::string id = std::string("memory.") + k;
      if (!is_built("memory")) {
        out.push_back(skipped_check(id, g, "family not built"));
        continue;
      }
      const json* rec = largest(records, [&](const json& r) {
        return str_or(r, "family") == "memory" && on_gpu(r, g) && str_or(at(r, "params"), "kernel") == k;
      });
      const json* peaks = nullptr;
      if (const json* gj = gpu_json(env, g)) peaks = &at(*gj, "peaks");
      out.push_back(judge_record(id, g, rec, model, profile.db, std::string("memory ") + k,
                                 [&](const json& r, std::string& how) -> std::optional<double> {
                                   if (auto v = pct_of_peak(r, how)) return v;
                                   const double gbps = num_or(at(r, "metrics"), "gbps", NAN);
                                   const double peak = peaks ? num_or(at(*peaks, "mem_gbps"), "value", NAN) : NAN;
                                   if (!std::isfinite(gbps) || !std::isfinite(peak) || peak <= 0) return std::nullopt;
                                   how = fmt(gbps, 1) + " GB/s of " + fmt(peak, 0) + " GB/s (mem_gbps)";
                                   return 100.0 * gbps / peak;
                                 }));
    }
    // Host link
    for (const char* d : {"h2d", "d2h"}) {
      const std::string id = std::string("hostlink.") + d;
      if (!is_built("hostlink")) {
        out.push_back(skipped_check(id, g, "family not built"));
        continue;
      }
      const json* rec = largest(records, [&](const json& r) {
        if (str_or(r, "family") != "hostlink" || !on_gpu(r, g)) return false;
        const json& p = at(r, "params");
        return str_or(p, "direction") == d && str_or(p, "memory") == "pinned" && str_or(p, "engine", "ce") == "ce";
      });
      out.push_back(judge_record(id, g, rec, model, profile.db, std::string("pinned ") + d,
                                 [&](const json& r, std::string& how) -> std::optional<double> {
                                   const json& m = at(r, "metrics");
                                   const double gbps = num_or(m, "gbps", NAN);
                                   if (!std::isfinite(gbps)) return std::nullopt;
                                   const auto t = profile.db.get(id, model);
                                   if (t && t->unit == "gbps") {
                                     how = fmt(gbps, 1) + " GB/s";
                                     return gbps;
                                   }
                                   const double bytes = num_or(at(r, "params"), "bytes", 0);
                                   const std::string size = bytes > 0 ? fmt(bytes / double(1 << 20), 0) + " MiB, " : "";
                                   if (auto link = max_link_gbps(env, g, &r); link && *link > 0) {
                                     how = size + fmt(gbps, 1) + " GB/s of " + fmt(*link, 1) +
                                           " GB/s (the PCIe rate at the GPU's maximum generation and width)";
                                     if (m.contains("link_pct") && m["link_pct"].is_number())
                                       how += "; " + fmt(m["link_pct"].get<double>(), 1) + "% of the link as trained";
                                     return 100.0 * gbps / *link;
                                   }
                                   if (m.contains("link_pct") && m["link_pct"].is_number()) {
                                     how = size + fmt(gbps, 1) + " GB/s, " + fmt(m["link_pct"].get<double>(), 1) +
                                           "% of the link as trained (its maximum is unknown)";
                                     return m["link_pct"].get<double>();
                                   }
                                   return std::nullopt;
                                 }));
    }
  }

  // Checks the families declare in their own files, per GPU.
  for (const auto& f : family_registry()) {
    if (!is_built(f->name())) continue;
    for (const ValidationCheck& vc : f->validation_checks())
      for (int g : gpus) {
        const json* rec = largest(records, [&](const json& r) {
          return str_or(r, "family") == f->name() && on_gpu(r, g) && (!vc.judges || vc.judges(r));
        });
        const auto t = profile.db.get(vc.id, model_of(g));
        const CheckInput in{env, g, t ? t->unit : std::string()};
        out.push_back(judge_record(vc.id, g, rec, model_of(g), profile.db, vc.what,
                                   [&](const json& r, std::string& how) { return vc.value(r, in, how); }));
      }
  }

  // Peer copies (level 2 and 3, when the family is built): one check per ordered pair, by link type.
  if (!is_built("p2p")) {
    if (level >= 3) out.push_back(skipped_check("p2p.bandwidth", std::nullopt, "family not built"));
  } else if (gpus.size() < 2) {
    out.push_back(skipped_check("p2p.bandwidth", std::nullopt, "needs two GPUs"));
  } else {
    // One-way copies with peer access on (the staged, peer-off copies measure the host path).
    auto usable = [](const json& r) {
      const json& p = at(r, "params");
      return str_or(r, "family") == "p2p" && at(p, "src").is_number() && at(p, "dst").is_number() &&
             str_or(p, "test", "bandwidth") == "bandwidth" && str_or(p, "mode", "one_way") == "one_way" &&
             str_or(p, "peer", "enabled") == "enabled" && str_or(p, "engine", "ce") == "ce";
    };
    std::set<std::pair<int, int>> pairs;
    for (const auto& r : records)
      if (usable(r)) {
        const int a = at(at(r, "params"), "src").get<int>(), b = at(at(r, "params"), "dst").get<int>();
        if (a != b) pairs.insert({a, b});
      }
    if (pairs.empty()) out.push_back(skipped_check("p2p.bandwidth", std::nullopt, "no one-way peer copy record in this run"));
    for (const auto& [s, d] : pairs) {
      const json* rec = largest(records, [&, s = s, d = d](const json& r) {
        return usable(r) && num_or(at(r, "params"), "src", -1) == s && num_or(at(r, "params"), "dst", -1) == d;
      });
      const std::string link = rec ? link_class(doc, *rec, {s, d}) : "pcie";
      const std::string id = "p2p." + link;
      Check c = judge_record(id, s, rec, model_of(s), profile.db, "p2p " + std::to_string(s) + "->" + std::to_string(d),
                             [&, s = s, d = d](const json& r, std::string& how) -> std::optional<double> {
                               const double gbps = num_or(at(r, "metrics"), "gbps", NAN);
                               if (!std::isfinite(gbps)) return std::nullopt;
                               const auto t = profile.db.get(id, model_of(s));
                               if (t && t->unit == "percent_of_link") {
                                 const auto a = max_link_gbps(env, s), b = max_link_gbps(env, d);
                                 if (!a || !b) return std::nullopt;
                                 const double l = std::min(*a, *b);
                                 how = fmt(gbps, 1) + " GB/s of " + fmt(l, 1) + " GB/s (the slower GPU's PCIe link), link " + link;
                                 return 100.0 * gbps / l;
                               }
                               how = fmt(gbps, 1) + " GB/s, link " + link;
                               return gbps;
                             });
      c.peer = d;
      out.push_back(c);
    }
  }

  if (level >= 3) {
    // All-reduce: the largest message at the most GPUs (float, out of place where the records say).
    if (!is_built("nccl")) {
      out.push_back(skipped_check("nccl.all_reduce", std::nullopt, "family not built"));
    } else if (gpus.size() < 2) {
      out.push_back(skipped_check("nccl.all_reduce", std::nullopt, "needs two GPUs"));
    } else {
      const json* rec = nullptr;
      double best_n = -1, best_b = -1;
      for (const auto& r : records) {
        const json& p = at(r, "params");
        if (str_or(r, "family") != "nccl") continue;
        const std::string coll = str_or(p, "collective");
        if (coll != "all_reduce" && coll != "allreduce") continue;
        if (str_or(p, "dtype", "float") != "float" || (at(p, "in_place").is_boolean() && at(p, "in_place").get<bool>()))
          continue;
        const double ng = num_or(p, "ngpus", 0), b = num_or(p, "bytes", 0);
        if (ng < 2) continue;
        if (ng > best_n || (ng == best_n && b > best_b)) {
          rec = &r;
          best_n = ng;
          best_b = b;
        }
      }
      std::vector<int> members;
      if (rec && at(*rec, "gpus").is_array())
        for (const auto& g : at(*rec, "gpus"))
          if (g.is_number()) members.push_back(g.get<int>());
      if (members.size() < 2) members = gpus;
      const std::string link = rec ? link_class(doc, *rec, members) : "pcie";
      const std::string id = "nccl.all_reduce." + link;
      out.push_back(judge_record(id, std::nullopt, rec, model_of(gpus.front()), profile.db, "all-reduce over two or more GPUs",
                                 [&](const json& r, std::string& how) -> std::optional<double> {
                                   const double bus = num_or(at(r, "metrics"), "busbw_gbps", NAN);
                                   if (!std::isfinite(bus)) return std::nullopt;
                                   const std::string size = fmt(num_or(at(r, "params"), "bytes", 0) / double(1 << 20), 0) + " MiB over " +
                                                            fmt(num_or(at(r, "params"), "ngpus", 0), 0) + " GPUs: ";
                                   const auto t = profile.db.get(id, model_of(gpus.front()));
                                   if (t && t->unit == "percent_of_link") {
                                     std::optional<double> l;
                                     for (int g : members)
                                       if (auto v = max_link_gbps(env, g)) l = l ? std::min(*l, *v) : *v;
                                     if (!l) return std::nullopt;
                                     how = size + "bus bandwidth " + fmt(bus, 1) + " GB/s of " + fmt(*l, 1) + " GB/s (slowest PCIe link)";
                                     return 100.0 * bus / *l;
                                   }
                                   how = size + "bus bandwidth " + fmt(bus, 1) + " GB/s, link " + link;
                                   return bus;
                                 }));
    }
  }

  // Every case that ran: failed or wrong ones fail the node.
  std::vector<std::string> bad;
  int ok = 0, skipped = 0;
  for (const auto& r : records) {
    const std::string s = str_or(r, "status");
    if (s == "failed" || s == "wrong") bad.push_back(str_or(r, "id") + " " + s + ": " + str_or(r, "reason"));
    ok += s == "ok";
    skipped += s == "skipped";
  }
  Check c;
  c.id = "run.cases";
  c.evidence = std::to_string(records.size()) + " record(s): " + std::to_string(ok) + " ok, " + std::to_string(skipped) +
               " skipped, " + std::to_string(bad.size()) + " failed or wrong";
  if (!bad.empty()) {
    c.severity = Severity::fail;
    c.summary = std::to_string(bad.size()) + " case(s) failed or gave wrong results";
    c.evidence += ": " + join(bad, "; ");
    c.fix = "See each record's reason in the result file; a wrong result on a healthy-looking GPU calls for ECC and Xid "
            "checks (dmesg).";
  } else {
    c.severity = Severity::ok;
    c.summary = std::to_string(ok) + " case(s) ok, " + std::to_string(skipped) + " skipped";
  }
  out.push_back(c);
  return out;
}

// ---- Reports -----------------------------------------------------------------------------------

bool ValidationReport::pass() const {
  for (const auto* v : {&doctor, &benchmarks})
    for (const auto& c : *v)
      if (c.severity == Severity::fail) return false;
  return true;
}

json ValidationReport::to_json() const {
  json d = json::array(), b = json::array();
  for (const auto& c : doctor) d.push_back(c.to_json());
  for (const auto& c : benchmarks) b.push_back(c.to_json());
  std::vector<Check> all = doctor;
  all.insert(all.end(), benchmarks.begin(), benchmarks.end());
  const CheckCounts n = count_checks(all);
  return {{"level", level},
          {"verdict", pass() ? "pass" : "fail"},
          {"counts", {{"ok", n.ok}, {"info", n.info}, {"warn", n.warn}, {"fail", n.fail}, {"skipped", n.skipped}}},
          {"profile", profile},
          {"missing_families", missing_families},
          {"doctor", d},
          {"benchmarks", b}};
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (c < 0x20 && c != '\n' && c != '\t' && c != '\r') out += ' ';  // not allowed in XML 1.0
        else out += char(c);
    }
  }
  return out;
}

std::string junit_xml(const ValidationReport& r, const std::string& hostname, const std::string& timestamp, double duration_s) {
  std::ostringstream os;
  auto suite = [&](const std::string& name, const std::vector<Check>& checks) {
    const CheckCounts n = count_checks(checks);
    os << "  <testsuite name=\"" << xml_escape(name) << "\" tests=\"" << checks.size() << "\" failures=\"" << n.fail
       << "\" errors=\"0\" skipped=\"" << n.skipped << "\" hostname=\"" << xml_escape(hostname) << "\" timestamp=\""
       << xml_escape(timestamp) << "\">\n";
    for (const auto& c : checks) {
      os << "    <testcase classname=\"" << xml_escape(name) << "\" name=\"" << xml_escape(c.id + (c.gpu ? " gpu" + c.gpu_label() : ""))
         << "\" time=\"0\">\n";
      const std::string body = "evidence: " + c.evidence + (c.fix.empty() ? "" : "\nfix: " + c.fix);
      if (c.severity == Severity::fail)
        os << "      <failure message=\"" << xml_escape(c.summary) << "\" type=\"fail\">" << xml_escape(body) << "</failure>\n";
      else if (c.skipped)
        os << "      <skipped message=\"" << xml_escape(c.summary) << "\"/>\n";
      else
        os << "      <system-out>" << xml_escape(to_string(c.severity) + ": " + c.summary + "\n" + body) << "</system-out>\n";
      os << "    </testcase>\n";
    }
    os << "  </testsuite>\n";
  };
  std::vector<Check> all = r.doctor;
  all.insert(all.end(), r.benchmarks.begin(), r.benchmarks.end());
  const CheckCounts n = count_checks(all);
  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  os << "<testsuites name=\"nodebench validate (level " << r.level << ")\" tests=\"" << all.size() << "\" failures=\""
     << n.fail << "\" errors=\"0\" skipped=\"" << n.skipped << "\" time=\"" << fmt(duration_s, 3) << "\">\n";
  suite("nodebench.doctor", r.doctor);
  suite("nodebench.benchmarks", r.benchmarks);
  os << "</testsuites>\n";
  return os.str();
}

std::string prometheus_label_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string prometheus_text(const ValidationReport& r, const PromContext& ctx) {
  std::ostringstream os;
  auto num = [](double v) {
    if (std::isnan(v)) return std::string("NaN");
    std::ostringstream s;
    s << std::setprecision(10) << v;
    return s.str();
  };
  auto head = [&](const char* name, const char* help) {
    os << "# HELP " << name << " " << help << "\n# TYPE " << name << " gauge\n";
  };
  // One series per (check, gpu): where a check id repeats for a GPU, the worst wins.
  std::vector<Check> all;
  std::map<std::pair<std::string, std::string>, size_t> seen;
  for (const auto* v : {&r.doctor, &r.benchmarks})
    for (const auto& c : *v) {
      const auto key = std::make_pair(c.id, c.gpu_label());
      auto it = seen.find(key);
      if (it == seen.end()) {
        seen[key] = all.size();
        all.push_back(c);
      } else if (int(c.severity) > int(all[it->second].severity)) {
        all[it->second] = c;
      }
    }
  auto labels = [](const Check& c) {
    return "check=\"" + prometheus_label_escape(c.id) + "\",gpu=\"" + prometheus_label_escape(c.gpu_label()) + "\"";
  };
  head("nodebench_validate_pass", "1 when nodebench validate passed (no check failed), else 0.");
  os << "nodebench_validate_pass " << (r.pass() ? 1 : 0) << "\n";
  head("nodebench_validate_level", "The validation level run (1 checks, 2 quick benchmarks, 3 full sweeps).");
  os << "nodebench_validate_level " << r.level << "\n";
  head("nodebench_validate_timestamp_seconds", "Unix time the validation finished.");
  os << "nodebench_validate_timestamp_seconds " << num(std::floor(ctx.unix_time)) << "\n";
  head("nodebench_validate_checks", "Number of checks by result.");
  const CheckCounts n = count_checks(all);
  os << "nodebench_validate_checks{result=\"ok\"} " << n.ok << "\n"
     << "nodebench_validate_checks{result=\"info\"} " << n.info << "\n"
     << "nodebench_validate_checks{result=\"warn\"} " << n.warn << "\n"
     << "nodebench_validate_checks{result=\"fail\"} " << n.fail << "\n"
     << "nodebench_validate_checks{result=\"skipped\"} " << n.skipped << "\n";
  head("nodebench_gpus", "GPUs seen: by CUDA in this process, and by the driver (NVML).");
  os << "nodebench_gpus{source=\"cuda\"} " << ctx.cuda_gpus << "\n";
  if (ctx.nvml_gpus) os << "nodebench_gpus{source=\"nvml\"} " << *ctx.nvml_gpus << "\n";
  head("nodebench_check_status", "1 when the check passed (ok, info, warn or skipped), 0 when it failed.");
  for (const auto& c : all) os << "nodebench_check_status{" << labels(c) << "} " << (c.severity == Severity::fail ? 0 : 1) << "\n";
  head("nodebench_check_severity", "Severity of the check: 0 ok, 1 info, 2 warn, 3 fail.");
  for (const auto& c : all) os << "nodebench_check_severity{" << labels(c) << "} " << int(c.severity) << "\n";
  head("nodebench_check_skipped", "1 for a benchmark check that could not be judged (family not built, case skipped).");
  for (const auto& c : all)
    if (c.skipped) os << "nodebench_check_skipped{" << labels(c) << "} 1\n";
  head("nodebench_check_value", "Measured value of a benchmark check, in the unit label.");
  for (const auto& c : all)
    if (c.value && c.threshold)
      os << "nodebench_check_value{" << labels(c) << ",unit=\"" << prometheus_label_escape(c.unit) << "\"} " << num(*c.value) << "\n";
  head("nodebench_check_threshold", "The minimum a benchmark check needs to pass, in the unit label.");
  for (const auto& c : all)
    if (c.value && c.threshold)
      os << "nodebench_check_threshold{" << labels(c) << ",unit=\"" << prometheus_label_escape(c.unit) << "\"} "
         << num(*c.threshold) << "\n";
  return os.str();
}

void print_validation(const ValidationReport& r, std::ostream& os) {
  os << "\nnodebench validate, level " << r.level << ": doctor\n";
  print_checks(r.doctor, os);
  if (r.level >= 2) {
    os << "\nnodebench validate, level " << r.level << ": benchmarks against thresholds\n";
    print_checks(r.benchmarks, os);
  }
  std::vector<Check> all = r.doctor;
  all.insert(all.end(), r.benchmarks.begin(), r.benchmarks.end());
  const CheckCounts n = count_checks(all);
  os << "\nVERDICT: " << (r.pass() ? "PASS" : "FAIL") << " (" << n.fail << " fail, " << n.warn << " warn, " << n.skipped
     << " skipped, " << all.size() << " checks)\n";
}

// ---- The command -------------------------------------------------------------------------------

namespace {

std::string utc_stamp(const char* format) {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

bool write_text(const std::string& path, const std::string& text, const char* what) {
  try {
    const fs::path p(path);
    if (p.has_parent_path()) fs::create_directories(p.parent_path());
    write_file_atomic(path, text);
    std::cout << what << ": " << path << "\n";
    return true;
  } catch (const std::exception& e) {
    std::cerr << "nodebench: cannot write " << what << " '" << path << "': " << e.what() << "\n";
    return false;
  }
}

}  // namespace

int cmd_validate(const Command& cmd) {
  const auto t0 = std::chrono::steady_clock::now();
  const ValidateOptions& v = cmd.validate;
  const RunOptions& o = cmd.options;
  if (v.level < 1 || v.level > 3) {
    std::cerr << "nodebench: --level must be 1, 2 or 3\n";
    return kExitUsage;
  }
  Session session(ProfileDb::builtin(), current_settings());
  const Nvml& nvml = session.nvml();
  const Environment& env = session.env();
  ProfileChoice profile;
  try {
    profile = resolve_profile(v.profile, env.json);
  } catch (const Error& e) {
    std::cerr << "nodebench: " << e.what() << "\n";
    return kExitUsage;
  }
  std::vector<int> gpu_ids;
  if (!env.gpus.empty()) {
    try {
      gpu_ids = parse_gpu_list(o.gpus, int(env.gpus.size()));
    } catch (const Error& e) {
      std::cerr << "nodebench: " << e.what() << "\n";
      return kExitUsage;
    }
  }

  ValidationReport report;
  report.level = v.level;
  report.profile = profile.to_json();
  DoctorInput in;
  in.environment = env.json;
  in.cuda_architectures = NODEBENCH_CUDA_ARCHITECTURES;
  in.live = gather_live_facts(nvml, env, true);
  report.doctor = run_doctor_rules(in);
  const std::string hostname = str_or(at(env.json, "host"), "hostname", "host");
  auto write_reports = [&]() {
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    bool ok = true;
    if (!v.junit_file.empty())
      ok &= write_text(v.junit_file, junit_xml(report, hostname, utc_stamp("%Y-%m-%dT%H:%M:%SZ"), secs), "JUnit XML");
    if (!v.prometheus_file.empty()) {
      PromContext pc;
      pc.unix_time = double(std::time(nullptr));
      pc.cuda_gpus = int(env.gpus.size());
      pc.nvml_gpus = in.live.nvml_device_count;
      ok &= write_text(v.prometheus_file, prometheus_text(report, pc), "Prometheus textfile");
    }
    return ok;
  };

  if (env.gpus.empty()) {
    print_validation(report, std::cout);
    write_reports();
    std::cerr << no_gpu_diagnosis(env.cuda_error) << "\n";
    return kExitNoGpu;
  }

  // The benchmarks of the level, run by `nodebench run` itself into a result file of our naming.
  std::vector<std::string> built;
  for (const auto& f : family_registry()) built.push_back(f->name());
  const BenchPlan plan = plan_benchmarks(v.level, built, select_cases(Suite::quick, {}, ""), int(gpu_ids.size()));
  report.missing_families = plan.missing;
  std::string host_tag = hostname;
  for (char& c : host_tag)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') c = '_';
  const std::string path =
      (fs::path(o.out_dir) / ("nodebench-validate-" + host_tag + "-" + utc_stamp("%Y%m%dT%H%M%SZ") + ".json")).string();
  json doc;
  std::optional<ResultFile> file;
  if (!plan.empty()) {
    // The benchmarks of the level, run in this process over the same session, judged in memory.
    RunOptions ro;
    ro.suite = plan.suite;
    ro.gpus = o.gpus;
    ro.quiet = o.quiet;
    ro.out_file = path;
    ro.algo_cache_file = o.algo_cache_file;
    ro.algo_search = o.algo_search;
    Plan run;
    try {
      run.cases = select_cases(plan.suite, plan.run_all ? std::vector<std::string>{} : plan.families,
                               plan.run_all ? "" : exact_id_filter(plan.case_ids));
    } catch (const Error& e) {
      std::cerr << "nodebench: " << e.what() << "\n";
      return kExitUsage;
    }
    run.gpus = gpu_ids;
    const double max_time = default_max_time(plan.suite);
    run.base.max_time_s = max_time;
    run.base.target_cv = ro.target_cv;
    run.base.min_samples = ro.min_samples;
    run.algo_cache_file = o.algo_cache_file;
    run.algo_search = o.algo_search;
    std::cout << "\nnodebench validate, level " << v.level << ": running "
              << (plan.run_all ? "every case (full suite)" : std::to_string(plan.case_ids.size()) + " case(s)") << std::endl;
    try {
      fs::create_directories(fs::path(path).parent_path());
      file.emplace(path, run_header(cmd, session, ro, max_time, make_run_id()));
    } catch (const std::exception& e) {
      std::cerr << "nodebench: cannot write the result file '" << path << "': " << e.what() << "\n";
      return kExitUsage;
    }
    RunHooks hooks;
    hooks.on_record = [&](const json& rec, size_t done, size_t total) {
      if (!o.quiet)
        std::cout << "[" << done << "/" << total << "] " << rec["id"].get<std::string>() << "  "
                  << rec["status"].get<std::string>() << std::endl;
    };
    const RunOutcome outcome = run_plan(run, session, *file, hooks);
    if (!outcome.error.empty()) std::cerr << "nodebench: run aborted: " << outcome.error << "\n";
    doc = file->doc();
  } else {
    // Level 1 (or nothing built): a result file without records, for the validation section.
    RunOptions ro;
    ro.gpus = o.gpus;
    doc = run_header(cmd, session, ro, 0, make_run_id());
    doc["schema"] = "nodebench.result";
    doc["schema_version"] = kSchemaVersion;
    doc["finished_at"] = iso_utc(std::chrono::system_clock::now());
    doc["run_status"] = "complete";
    doc["run_error"] = nullptr;
    doc["options"]["validate_level"] = v.level;
    doc["options"]["profile"] = v.profile;
    doc["records"] = json::array();
    doc["summary"] = {{"ok", 0}, {"skipped", 0}, {"failed", 0}, {"wrong", 0}, {"total", 0}, {"wall_time_s", 0.0}};
  }
  if (!doc.is_null()) {
    if (v.level >= 2) {
      std::vector<Check> judged = judge_results(doc, profile, v.level, built, gpu_ids);
      report.benchmarks.insert(report.benchmarks.end(), judged.begin(), judged.end());
    }
    try {
      if (file) {
        file->set_analysis("validation", report.to_json());
        file->flush(true);
      } else {
        doc["analysis"]["validation"] = report.to_json();
        fs::create_directories(fs::path(path).parent_path());
        write_file_atomic(path, doc.dump(1, ' ', false, json::error_handler_t::replace));
      }
    } catch (const std::exception& e) {
      std::cerr << "nodebench: could not write the result file: " << e.what() << "\n";
    }
  }
  print_validation(report, std::cout);
  std::cout << "results: " << path << "\n";
  write_reports();
  return report.pass() ? kExitOk : kExitCaseFailed;
}

}  // namespace nb
