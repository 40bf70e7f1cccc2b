#include "run/options.hpp"

#include <algorithm>
#include <set>
#include <sstream>

#include "base/error.hpp"

namespace nb {

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
    const long v = std::stol(item);
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
