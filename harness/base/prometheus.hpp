// The Prometheus text exposition format's label-value escaping (backslash, double quote and line
// feed), shared by the monitor's textfile and validate's.
#pragma once
#include <string>

namespace nb {

inline std::string prometheus_label_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

}  // namespace nb
