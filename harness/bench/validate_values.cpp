#include "bench/validate_values.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <utility>

#include "base/json_fields.hpp"
#include "base/text.hpp"
#include "bench/contributions.hpp"
#include "node/profiles.hpp"

namespace nb {

// The built-in device profiles, parsed once (a profile found in them outlives the call).
static const ProfileDb& builtin_profiles() {
  static const ProfileDb db = ProfileDb::builtin();
  return db;
}

using nlohmann::json;
using jf::at;
using jf::num_or;
using jf::str_or;

ValidationCheck gpu_check(std::string id, std::string what, std::string fix, int required_level) {
  ValidationCheck c;
  c.id = std::move(id);
  c.what = std::move(what);
  c.fix = std::move(fix);
  c.required_level = required_level;
  return c;
}

const json* environment_gpu(const json& env, int index) {
  if (!env.is_object() || !env.contains("gpus") || !env["gpus"].is_array()) return nullptr;
  for (const auto& g : env["gpus"])
    if (g.value("index", -1) == index) return &g;
  return nullptr;
}

const json* largest_record(const json& records, const std::function<bool(const json&)>& pred) {
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

std::optional<double> percent_of_peak_value(const json& r, std::string& how) {
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
}

std::optional<double> percent_at_clock_value(const json& r, std::string& how) {
  const json& p = at(r, "percent_of_peak");
  const double at_clock = num_or(p, "percent_at_clock", NAN);
  const double sm = num_or(p, "sm_mhz", NAN), peak_mhz = num_or(p, "peak_clock_mhz", NAN);
  if (std::isfinite(at_clock) && std::isfinite(sm) && std::isfinite(peak_mhz)) {
    const std::string metric = str_or(p, "metric", "?");
    how = fmt(num_or(at(r, "metrics"), metric.c_str(), NAN), 2) + " " + metric + " = " + fmt(at_clock, 1) +
          "% of the " + fmt(num_or(p, "peak_at_clock", NAN), 2) + " peak at the " + fmt(sm, 0) +
          " MHz it ran at (" + fmt(num_or(p, "percent", NAN), 1) + "% of the " + fmt(num_or(p, "peak", NAN), 2) +
          " peak at " + fmt(peak_mhz, 0) + " MHz; " + str_or(p, "source") + ")";
    return at_clock;
  }
  const auto v = percent_of_peak_value(r, how);
  if (v) how += "; the clock it ran at is not recorded: judged against the peak's own clock";
  return v;
}

std::optional<double> clock_vs_base_value(const json& r, const json& env, int gpu, std::string& how) {
  const double sm = num_or(at(r, "clocks"), "sm_mhz_during", NAN);
  const json* g = environment_gpu(env, gpu);
  const std::string profile = g ? str_or(*g, "profile") : std::string();
  const DeviceProfile* p = profile.empty() ? nullptr : builtin_profiles().find(profile);
  std::optional<double> base;
  if (p)
    if (auto it = p->numbers.find("base_mhz"); it != p->numbers.end()) base = it->second;
  if (!std::isfinite(sm)) {
    how = "the SM clock during the case is not recorded";
    return std::nullopt;
  }
  if (!base) {
    how = "SM clock " + fmt(sm, 0) + " MHz; no base clock is known for this GPU (profile " +
          (profile.empty() ? std::string("none") : profile) + " has no base_mhz)";
    return std::nullopt;
  }
  how = "SM clock " + fmt(sm, 0) + " MHz during the case, base clock " + fmt(*base, 0) + " MHz (profile " + profile + ")";
  const json& after = at(at(r, "clocks"), "after");
  std::vector<std::string> seen;
  if (at(after, "throttle_reasons").is_array() && !after["throttle_reasons"].empty()) {
    std::vector<std::string> rs;
    for (const auto& x : after["throttle_reasons"])
      if (x.is_string()) rs.push_back(x.get<std::string>());
    seen.push_back("throttle reasons " + join(rs, ", "));
  }
  if (std::isfinite(num_or(after, "temperature_c", NAN))) seen.push_back(fmt(num_or(after, "temperature_c", NAN), 0) + " C");
  if (std::isfinite(num_or(after, "power_w", NAN))) seen.push_back(fmt(num_or(after, "power_w", NAN), 0) + " W");
  if (!seen.empty()) how += "; after it: " + join(seen, ", ");
  return 100 * sm / *base;
}

std::optional<double> max_link_gbps(const json& env, int index, const json* record) {
  std::optional<unsigned> gen, width;
  if (const json* g = environment_gpu(env, index); g && g->contains("pcie") && (*g)["pcie"].is_object()) {
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

std::optional<double> slowest_link_gbps(const json& env, const std::vector<int>& gpus, bool every) {
  std::optional<double> slowest;
  for (int g : gpus) {
    const std::optional<double> l = max_link_gbps(env, g);
    if (!l && every) return std::nullopt;
    if (l) slowest = slowest ? std::min(*slowest, *l) : *l;
  }
  return slowest;
}

std::optional<double> rate_against_link(double gbps, const std::string& unit, std::optional<double> link,
                                        const std::string& prefix, const std::string& link_note,
                                        const std::string& link_class, std::string& how) {
  if (!std::isfinite(gbps)) return std::nullopt;
  if (unit == "percent_of_link") {
    if (!link || *link <= 0) return std::nullopt;
    how = prefix + fmt(gbps, 1) + " GB/s of " + fmt(*link, 1) + " GB/s (" + link_note + "), link " + link_class;
    return 100.0 * gbps / *link;
  }
  how = prefix + fmt(gbps, 1) + " GB/s, link " + link_class;
  return gbps;
}

std::string link_class(const json& doc, const json& rec, const std::vector<int>& members) {
  const std::string given = str_or(at(rec, "params"), "link");
  if (!given.empty()) {
    std::string l = given;
    std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return std::tolower(c); });
    return l;
  }
  for (const LinkClassifier& classify : link_classifiers())
    if (classify)
      if (const std::optional<std::string> c = classify(doc, members)) return *c;
  return "pcie";
}

}  // namespace nb
