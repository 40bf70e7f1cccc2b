// Version strings and compute capabilities (the lists of CUDA architectures: node/arch_rule.cpp).
#include "check/doctor.hpp"
#include "check/doctor_util.hpp"

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

namespace nb {

using namespace doctor_detail;

// ---- Versions and architectures --------------------------------------------------------------

std::vector<int> parse_version(const std::string& text) {
  std::vector<int> out;
  size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    long v = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      v = v * 10 + (text[i] - '0');
      if (v > 1000000000L) v = 1000000000L;
      ++i;
    }
    out.push_back(int(v));
    if (i < text.size() && text[i] == '.') ++i;
    else break;
  }
  return out;
}

int compare_versions(const std::vector<int>& a, const std::vector<int>& b) {
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const int x = i < a.size() ? a[i] : 0, y = i < b.size() ? b[i] : 0;
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

std::optional<int> parse_cc(const std::string& text) {
  const auto v = parse_version(text);
  if (v.size() != 2 || v[1] > 9) return std::nullopt;
  return v[0] * 10 + v[1];
}

std::string cc_string(int cc) { return std::to_string(cc / 10) + "." + std::to_string(cc % 10); }

}  // namespace nb
