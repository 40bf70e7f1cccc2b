// Small text helpers shared by the commands' printing.
#pragma once
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

namespace nb {

// `v` with `prec` digits after the point.
inline std::string fmt(double v, int prec = 2) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(prec) << v;
  return os.str();
}

inline std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

}  // namespace nb
