// Helpers of the tests that read recorded fixtures from tests/data (NB_TEST_DATA_DIR).
#pragma once
#include <fstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace nb::test {

inline std::string data_path(const std::string& name) { return std::string(NB_TEST_DATA_DIR) + "/" + name; }

inline nlohmann::json read_json(const std::string& name) {
  std::ifstream f(data_path(name));
  if (!f) throw std::runtime_error("missing fixture " + name);
  return nlohmann::json::parse(f);
}

inline bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace nb::test
