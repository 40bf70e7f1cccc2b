#include "bench/benchmark.hpp"

#include "base/error.hpp"

namespace nb {

std::vector<std::unique_ptr<Family>>& family_registry() {
  static std::vector<std::unique_ptr<Family>> families;
  return families;
}

std::vector<ThresholdFragment>& threshold_fragments() {
  static std::vector<ThresholdFragment> fragments;
  return fragments;
}

bool ValidationCheck::has_key(const std::string& key) const {
  if (key == id) return true;
  const std::string& p = keys_prefix;
  return !p.empty() && key.size() > p.size() && key.compare(0, p.size(), p) == 0 &&
         key.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_", p.size()) == std::string::npos;
}

std::vector<Analysis>& analysis_registry() {
  static std::vector<Analysis> analyses;
  return analyses;
}

std::string bytes_label(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (u < 4 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++u;
  }
  return std::to_string(bytes) + units[u];
}

Axes& Axes::add_values(const std::string& name, const std::vector<AxisValue>& values) {
  for (const AxisValue& v : values)
    if (!v.params.is_object()) throw Error("axis " + name + ": a value's params must be an object");
  axes_.push_back({name, values});
  return *this;
}

Axes& Axes::add_string(const std::string& name, const std::vector<std::string>& values) {
  std::vector<AxisValue> vs;
  for (const auto& v : values) vs.push_back({{{name, v}}, v});
  return add_values(name, vs);
}

Axes& Axes::add_int64(const std::string& name, const std::vector<int64_t>& values, const std::string& prefix) {
  std::vector<AxisValue> vs;
  for (int64_t v : values) vs.push_back({{{name, v}}, prefix + std::to_string(v)});
  return add_values(name, vs);
}

Axes& Axes::add_bytes(const std::string& name, const std::vector<int64_t>& values) {
  std::vector<AxisValue> vs;
  for (int64_t v : values) vs.push_back({{{name, v}}, bytes_label(v)});
  return add_values(name, vs);
}

Axes& Axes::set(const std::string& param, nlohmann::json value) {
  return add_values(param, {AxisValue{{{param, std::move(value)}}, ""}});
}

Axes& Axes::where(std::function<bool(const AxisPoint&)> keep) {
  keep_.push_back(std::move(keep));
  return *this;
}

Axes& Axes::name(std::string tmpl) {
  template_ = std::move(tmpl);
  return *this;
}

std::string Axes::name_of(const AxisPoint& p) const {
  if (template_.empty()) {
    std::string out;
    for (const Axis& a : axes_) {
      const std::string& l = p.labels.at(a.name);
      if (!l.empty()) out += (out.empty() ? "" : "/") + l;
    }
    return out;
  }
  std::string out;
  for (size_t i = 0; i < template_.size(); ++i) {
    if (template_[i] != '{') {
      out += template_[i];
      continue;
    }
    const size_t close = template_.find('}', i);
    if (close == std::string::npos) throw Error("case name template '" + template_ + "': unclosed '{'");
    const std::string key = template_.substr(i + 1, close - i - 1);
    if (auto it = p.labels.find(key); it != p.labels.end() && !it->second.empty()) out += it->second;
    else if (p.params.contains(key)) out += p.params[key].is_string() ? p.params[key].get<std::string>() : p.params[key].dump();
    else throw Error("case name template '" + template_ + "': no axis or param '" + key + "'");
    i = close;
  }
  return out;
}

std::vector<AxisPoint> Axes::points() const {
  if (axes_.empty()) return {};
  std::vector<AxisPoint> out(1);
  for (const Axis& a : axes_) {
    std::vector<AxisPoint> next;
    for (const AxisPoint& p : out)
      for (const AxisValue& v : a.values) {
        AxisPoint q = p;
        q.params.update(v.params);
        q.labels[a.name] = v.label;
        next.push_back(std::move(q));
      }
    out = std::move(next);
  }
  std::vector<AxisPoint> kept;
  for (AxisPoint& p : out) {
    bool keep = true;
    for (const auto& k : keep_) keep = keep && k(p);
    if (!keep) continue;
    p.name = name_of(p);
    kept.push_back(std::move(p));
  }
  return kept;
}

std::vector<Case> Axes::cases(const std::string& family, const std::function<void(const AxisPoint&, Case&)>& fill) const {
  std::vector<Case> out;
  for (const AxisPoint& p : points()) {
    Case c;
    c.family = family;
    c.name = p.name;
    c.params = p.params;
    if (fill) fill(p, c);
    out.push_back(std::move(c));
  }
  return out;
}

void append_cases(std::vector<Case>& out, std::vector<Case> more) {
  for (Case& c : more) out.push_back(std::move(c));
}

std::optional<Suite> parse_suite(const std::string& s) {
  if (s == "quick") return Suite::quick;
  if (s == "full") return Suite::full;
  return std::nullopt;
}

std::string to_string(Suite s) { return s == Suite::quick ? "quick" : "full"; }

}  // namespace nb
