#include "check/validate.hpp"
#include "run/plan.hpp"
#include "run/session.hpp"
#include "base/text.hpp"
#include "base/json_fields.hpp"
#include "bench/analysis.hpp"
#include "bench/validate_values.hpp"

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

#include "base/error.hpp"
#include "base/json_file.hpp"
#include "node/profiles.hpp"
#include "run/result.hpp"

#include "build_info.hpp"

namespace nb {

extern const char* const kBuiltinThresholdsJson;  // generated from harness/profiles/thresholds.json

using nlohmann::json;
using jf::at;
using jf::num_or;
using jf::str_or;
namespace fs = std::filesystem;

namespace {

// The check ids validate judges are those the families declare (Family::validation_checks()):
// a check's id, or for a check per link class its prefix and a lowercase word.
bool known_check_id(const std::string& id) {
  for (const auto& f : family_registry())
    for (const ValidationCheck& vc : f->validation_checks())
      if (vc.has_key(id)) return true;
  return false;
}

std::string known_check_ids() {
  std::vector<std::string> ids;
  for (const auto& f : family_registry())
    for (const ValidationCheck& vc : f->validation_checks()) ids.push_back(vc.keys_prefix.empty() ? vc.id : vc.keys_prefix + "<link>");
  return ids.empty() ? "none: no family of this build declares a check" : join(ids, ", ");
}

void check_entries(const json& entries, const std::string& where, bool need_unit) {
  if (!entries.is_object()) throw Error("thresholds: '" + where + "' must be an object of check ids");
  for (auto it = entries.begin(); it != entries.end(); ++it) {
    const json& e = it.value();
    if (!known_check_id(it.key()))
      throw Error("thresholds: " + where + "." + it.key() + ": unknown check id '" + it.key() + "' (known: " +
                  known_check_ids() + ")");
    const bool has_min = e.is_object() && e.contains("min") && e["min"].is_number();
    const bool has_max = e.is_object() && e.contains("max") && e["max"].is_number();
    if (!has_min && !has_max) throw Error("thresholds: " + where + "." + it.key() + " needs a numeric 'min' (or 'max')");
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

// Judges one record: failed or wrong fail; skipped skips; otherwise the value against the threshold.
Check judge_record(const std::string& id, std::optional<int> gpu, const json* rec, const std::string& model,
                   const ThresholdDb& db, const std::string& what, const std::string& fix,
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
  return judge_value(id, gpu, *v, *t, ev, fix);
}

std::string unit_text(const std::string& unit) {
  if (unit == "percent_of_peak") return "% of peak";
  if (unit == "percent_of_link") return "% of link";
  if (unit == "gbps") return " GB/s";
  return " " + unit;
}

}  // namespace

// ---- Thresholds --------------------------------------------------------------------------------

// The core file, then each built family's fragment over it (a family's thresholds live in its
// folder: benchmarks/<family>/thresholds.json).
ThresholdDb ThresholdDb::builtin() {
  const std::string core = "harness/profiles/thresholds.json";
  ThresholdDb db = from_json(json::parse(kBuiltinThresholdsJson), "built-in " + core);
  std::vector<std::string> files{core};
  for (const ThresholdFragment& f : threshold_fragments()) {
    db.merge(json::parse(f.json), "built-in " + f.origin);
    files.push_back(f.origin);
  }
  db.origin_ = "built-in (" + join(files, ", ") + ")";
  return db;
}

ThresholdDb ThresholdDb::from_json(const json& j, const std::string& origin) {
  validate_doc(j);
  ThresholdDb db;
  db.doc_ = {{"defaults", json::object()}, {"models", json::object()}};
  db.merge_entries(j, origin);
  db.origin_ = origin;
  return db;
}

// Entry by entry: the fields given replace those there; each entry touched is from `origin`.
void ThresholdDb::merge_entries(const json& j, const std::string& origin) {
  if (j.contains("defaults"))
    for (auto it = j["defaults"].begin(); it != j["defaults"].end(); ++it) {
      json& dst = doc_["defaults"][it.key()];
      if (!dst.is_object()) dst = json::object();
      dst.update(it.value());
      entry_origin_["defaults|" + it.key()] = origin;
    }
  if (j.contains("models"))
    for (auto it = j["models"].begin(); it != j["models"].end(); ++it) {
      json& dst = doc_["models"][it.key()];
      if (!dst.is_object()) dst = json::object();
      for (auto e = it.value().begin(); e != it.value().end(); ++e) {
        if (!dst[e.key()].is_object()) dst[e.key()] = json::object();
        dst[e.key()].update(e.value());
        entry_origin_["models|" + it.key() + "|" + e.key()] = origin;
      }
    }
}

void ThresholdDb::merge(const json& j, const std::string& origin) {
  validate_doc(j, false);
  merge_entries(j, origin);
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
  if (primary.contains("max") && primary["max"].is_number()) t.max = primary["max"].get<double>();
  else if (primary.contains("min") && primary["min"].is_number()) t.min = primary["min"].get<double>();
  else if (def && def->contains("max")) t.max = (*def)["max"].get<double>();
  else if (def && def->contains("min")) t.min = (*def)["min"].get<double>();
  t.unit = str_or(primary, "unit", def ? str_or(*def, "unit") : "");
  t.why = str_or(primary, "why", def ? str_or(*def, "why") : "");
  const auto from = entry_origin_.find(mod ? "models|" + model + "|" + check : "defaults|" + check);
  t.source = (mod ? "model:" + model : std::string("defaults")) + " (" + (from != entry_origin_.end() ? from->second : origin_) + ")";
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
    std::string text;
    try {
      text = read_input_file(arg);  // a gzip file read decompressed; a huge one refused
    } catch (const Error& e) {
      throw Error(std::string("--profile: ") + e.what());
    }
    json j;
    try {
      j = json::parse(text);
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

bool level_includes(int level, int min_level) {
  if (level == 4) return min_level <= 2 || min_level == 4;
  return min_level <= level;
}

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
  if (level <= 1) return p;
  auto is_built = [&](const std::string& f) { return std::find(built.begin(), built.end(), f) != built.end(); };
  // Families whose checks this level requires and that are not built.
  for (const auto& f : family_registry()) {
    if (is_built(f->name())) continue;
    for (const ValidationCheck& vc : f->validation_checks())
      if (vc.required_level && vc.required_level <= level) {
        p.missing.push_back(f->name());
        break;
      }
  }
  if (level == 3) {
    p.suite = Suite::full;
    p.run_all = !built.empty();
    // Every family's full suite, less those that run only when named (the burn: level 4).
    for (const auto& f : family_registry())
      if (is_built(f->name()) && !f->explicit_only()) p.families.push_back(f->name());
    for (const auto& f : built)
      if (std::none_of(family_registry().begin(), family_registry().end(), [&](const auto& r) { return r->name() == f; }))
        p.families.push_back(f);
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
  // The checks the families declare in their own files: the largest case each names.
  for (const auto& f : family_registry()) {
    if (!is_built(f->name())) continue;
    for (const ValidationCheck& vc : f->validation_checks())
      if (vc.runs_case && level_includes(level, vc.min_level) && gpu_count >= vc.min_gpus)
        add(pick([&](const Case& c) { return c.family == f->name() && vc.runs_case(c); }));
  }
  return p;
}

// ---- Judging -----------------------------------------------------------------------------------

Check judge_value(const std::string& id, std::optional<int> gpu, double value, const Threshold& t,
                  const std::string& evidence, const std::string& fix) {
  Check c;
  c.id = id;
  c.gpu = gpu;
  c.value = value;
  c.threshold = t.max ? *t.max : t.min;
  c.unit = t.unit;
  const std::string v = fmt(value, 1) + unit_text(t.unit);
  const std::string m = fmt(t.max ? *t.max : t.min, 1) + unit_text(t.unit);
  c.evidence = evidence + "; threshold " + (t.max ? "at most " : "") + m + " from " + t.source + (t.why.empty() ? "" : ": " + t.why);
  // A threshold is a floor (min) or, for counts and shares of time, a ceiling (max).
  const bool passes = t.max ? value <= *t.max : value >= t.min;
  c.severity = passes ? Severity::ok : Severity::fail;
  if (passes) {
    c.summary = v + (t.max ? " (<= " : " (>= ") + m + ")";
  } else {
    c.summary = v + (t.max ? ", above the " + m + " limit" : ", below the " + m + " threshold");
    c.fix = fix;
  }
  return c;
}

namespace {

// What judging a document's records needs: the records, the thresholds, the level, the families
// built and the GPUs validated.
struct Judging {
  Judging(const json& d, const ProfileChoice& p, int l, const std::vector<std::string>& b, const std::vector<int>& g)
      : doc(d), profile(p), level(l), built(b), gpus(g),
        records(d.contains("records") && d["records"].is_array() ? d["records"] : json::array()),
        env(d.contains("environment") ? d["environment"] : json::object()) {}
  const json& doc;
  const ProfileChoice& profile;
  int level;
  const std::vector<std::string>& built;
  const std::vector<int>& gpus;
  const json records;
  const json env;

  bool is_built(const std::string& f) const { return std::find(built.begin(), built.end(), f) != built.end(); }
  std::string model_of(int g) const {
    auto it = profile.model.find(g);
    return it == profile.model.end() ? std::string() : it->second;
  }
  bool applies(const ValidationCheck& vc, const std::string& family) const {
    return level_includes(level, vc.min_level) && (is_built(family) || (vc.required_level && vc.required_level <= level));
  }

  // Checks of each GPU, family by family, in the order the families registered.
  void gpu_checks(std::vector<Check>& out) const {
    for (int g : gpus)
      for (const auto& f : family_registry())
        for (const ValidationCheck& vc : f->validation_checks()) {
          if (vc.node || !applies(vc, f->name())) continue;
          if (!is_built(f->name())) {
            out.push_back(skipped_check(vc.id, g, "family not built"));
            continue;
          }
          const json* rec = largest_record(records, [&](const json& r) {
            return str_or(r, "family") == f->name() && record_on(r, GpuBrief{g, "", 0, 0, "", -1}) && (!vc.judges || vc.judges(r));
          });
          const auto t = profile.db.get(vc.id, model_of(g));
          const CheckInput in{env, g, t ? t->unit : std::string()};
          out.push_back(judge_record(vc.id, g, rec, model_of(g), profile.db, vc.what, vc.fix,
                                     [&](const json& r, std::string& how) { return vc.value(r, in, how); }));
        }
  }

  // Checks of the node (peer pairs, collectives).
  void node_checks(std::vector<Check>& out) const {
    const NodeCheckInput node_in{doc, gpus, [&](const std::string& id, int g) {
                                   const auto t = profile.db.get(id, model_of(g));
                                   return t ? t->unit : std::string();
                                 }};
    for (const auto& f : family_registry())
      for (const ValidationCheck& vc : f->validation_checks()) {
        if (!vc.node || !applies(vc, f->name())) continue;
        if (!is_built(f->name())) {
          out.push_back(skipped_check(vc.id, std::nullopt, "family not built"));
          continue;
        }
        if (int(gpus.size()) < vc.min_gpus) {
          out.push_back(skipped_check(vc.id, std::nullopt,
                                      "needs " + (vc.min_gpus == 2 ? std::string("two") : std::to_string(vc.min_gpus)) + " GPUs"));
          continue;
        }
        for (const Judgement& j : vc.node(node_in)) {
          if (!j.skip.empty()) {
            out.push_back(skipped_check(j.id, j.gpu, j.skip));
            continue;
          }
          Check c = judge_record(j.id, j.gpu, j.record, model_of(j.model_gpu), profile.db, j.what, vc.fix, j.value);
          if (j.peer) c.peer = j.peer;
          out.push_back(c);
        }
      }
  }
};

// Every case that ran: failed or wrong ones fail the node.
Check run_cases_check(const json& records) {
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
  return c;
}

}  // namespace

std::vector<Check> judge_results(const json& doc, const ProfileChoice& profile, int level,
                                 const std::vector<std::string>& built, const std::vector<int>& gpus) {
  std::vector<Check> out;
  if (level < 2) return out;
  const Judging j(doc, profile, level, built, gpus);
  j.gpu_checks(out);
  j.node_checks(out);
  out.push_back(run_cases_check(j.records));
  return out;
}

}  // namespace nb
