#include "benchmark.hpp"

namespace nb {

std::vector<std::unique_ptr<Family>>& family_registry() {
  static std::vector<std::unique_ptr<Family>> families;
  return families;
}

std::vector<Analysis>& analysis_registry() {
  static std::vector<Analysis> analyses;
  return analyses;
}

std::optional<Suite> parse_suite(const std::string& s) {
  if (s == "quick") return Suite::quick;
  if (s == "full") return Suite::full;
  return std::nullopt;
}

std::string to_string(Suite s) { return s == Suite::quick ? "quick" : "full"; }

}  // namespace nb
