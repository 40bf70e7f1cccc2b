#include "run/options.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <string>
#include <set>
#include <sstream>

#include "base/error.hpp"

namespace nb {

double parse_duration(const std::string& text) {
  const std::string what = "'" + text + "' is not a duration (e.g. 90s, 10m, 1h30m: each unit once, hours first; "
                           "a plain number is seconds)";
  if (text.empty() || text.size() > 32) throw Error(what);
  double total = 0;
  size_t i = 0;
  bool any = false;
  double last_unit = 1e9;  // each unit once, largest first: "1h1h" and "30m1h" are refused
  while (i < text.size()) {
    size_t j = i;
    while (j < text.size() && (std::isdigit(static_cast<unsigned char>(text[j])) || text[j] == '.')) ++j;
    if (j == i) throw Error(what);
    const std::string num = text.substr(i, j - i);
    if (std::count(num.begin(), num.end(), '.') > 1) throw Error(what);
    const double v = std::stod(num);  // digits and one dot: cannot throw, at most 32 characters
    double unit = 1;
    if (j < text.size()) {
      const char u = text[j++];
      unit = u == 'h' ? 3600 : u == 'm' ? 60 : u == 's' ? 1 : -1;
      if (unit < 0 || unit >= last_unit) throw Error(what);
      last_unit = unit;
    } else if (any) {
      throw Error(what);  // "1h30": the unit of the last part is missing
    }
    total += v * unit;
    any = true;
    i = j;
  }
  if (!(total > 0) || total > 30 * 86400.0) throw Error("'" + text + "': must be more than 0 and at most 30 days");
  return total;
}

double default_max_time(Suite s) { return s == Suite::quick ? 0.4 : 1.0; }

std::vector<int> parse_gpu_list(const std::string& text, int visible_count) {
  std::vector<int> out;
  if (text == "all" || text.empty()) {
    for (int i = 0; i < visible_count; ++i) out.push_back(i);
    return out;
  }
  std::stringstream ss(text);
  std::string item;
  std::set<int> seen;
  while (std::getline(ss, item, ',')) {
    if (item.empty() || !std::all_of(item.begin(), item.end(), [](unsigned char c) { return std::isdigit(c); }))
      throw Error("--gpus: '" + item + "' is not a device index (expected 'all' or a list like 0,1,3)");
    long v = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (ec != std::errc() || end != item.data() + item.size() || v > 65535)
      throw Error("--gpus: '" + item + "' is not a device index (too large)");
    if (v >= visible_count) {
      std::ostringstream os;
      os << "--gpus: GPU " << v << " is not visible: this process sees " << visible_count << " GPU"
         << (visible_count == 1 ? "" : "s");
      if (visible_count > 0) os << " (0.." << visible_count - 1 << ")";
      throw Error(os.str());
    }
    if (seen.insert(int(v)).second) out.push_back(int(v));
  }
  if (out.empty()) throw Error("--gpus: empty list");
  return out;
}

}  // namespace nb
