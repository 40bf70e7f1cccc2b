#include "bench/benchmark.hpp"

namespace nb {

std::vector<std::unique_ptr<Family>>& family_registry() {
  static std::vector<std::unique_ptr<Family>> families;
  return families;
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

Axes& Axes::add_string(const std::string& name, const std::vector<std::string>& values) {
  Axis a{name, {}, {}};
  for (const auto& v : values) {
    a.values.emplace_back(v);
    a.labels.push_back(v);
  }
  axes_.push_back(std::move(a));
  return *this;
}

Axes& Axes::add_int64(const std::string& name, const std::vector<int64_t>& values, const std::string& prefix) {
  Axis a{name, {}, {}};
  for (int64_t v : values) {
    a.values.emplace_back(v);
    a.labels.push_back(prefix + std::to_string(v));
  }
  axes_.push_back(std::move(a));
  return *this;
}

Axes& Axes::add_bytes(const std::string& name, const std::vector<int64_t>& values) {
  Axis a{name, {}, {}};
  for (int64_t v : values) {
    a.values.emplace_back(v);
    a.labels.push_back(bytes_label(v));
  }
  axes_.push_back(std::move(a));
  return *this;
}

std::vector<AxisPoint> Axes::points() const {
  std::vector<AxisPoint> out(1);
  for (const Axis& a : axes_) {
    std::vector<AxisPoint> next;
    for (const AxisPoint& p : out)
      for (size_t i = 0; i < a.values.size(); ++i) {
        AxisPoint q = p;
        q.params[a.name] = a.values[i];
        q.name += (q.name.empty() ? "" : "/") + a.labels[i];
        next.push_back(std::move(q));
      }
    out = std::move(next);
  }
  if (axes_.empty()) out.clear();
  return out;
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

std::optional<Suite> parse_suite(const std::string& s) {
  if (s == "quick") return Suite::quick;
  if (s == "full") return Suite::full;
  return std::nullopt;
}

std::string to_string(Suite s) { return s == Suite::quick ? "quick" : "full"; }

}  // namespace nb
