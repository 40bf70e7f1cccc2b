// Helpers of the tests of the settings (bench/settings.hpp) the core and the families declare.
#pragma once
#include <map>
#include <string>

#include "base/error.hpp"
#include "bench/settings.hpp"

namespace nb::test {

// The message Settings::from_map gives for env; empty when it accepts env.
inline std::string settings_error(const std::map<std::string, std::string>& env) {
  try {
    (void)Settings::from_map(env);
  } catch (const Error& e) {
    return std::string(e.what());
  }
  return std::string();
}

}  // namespace nb::test
