// The doctor's output: the table of checks and the JSON report.
#include "check/doctor.hpp"
#include "check/doctor_util.hpp"

#include <algorithm>
#include <cctype>
#include <iomanip>
#include <ostream>

namespace nb {

using namespace doctor_detail;

// ---- Output --------------------------------------------------------------------------------------

void print_checks(const std::vector<Check>& checks, std::ostream& os) {
  for (const auto& c : checks) {
    std::string sev = c.skipped ? "skip" : to_string(c.severity);
    if (c.severity == Severity::warn || c.severity == Severity::fail)
      std::transform(sev.begin(), sev.end(), sev.begin(), [](unsigned char ch) { return std::toupper(ch); });
    os << "  " << std::left << std::setw(6) << sev << std::setw(26) << c.id << (c.id.size() >= 26 ? " " : "") << std::setw(6)
       << c.gpu_label() << c.summary << "\n";
    if (c.severity != Severity::ok && !c.evidence.empty()) os << std::string(8, ' ') << "evidence: " << c.evidence << "\n";
    if (c.severity != Severity::ok && !c.fix.empty()) os << std::string(8, ' ') << "fix: " << c.fix << "\n";
  }
  const CheckCounts n = count_checks(checks);
  os << "\n" << n.fail << " fail, " << n.warn << " warn, " << n.info << " info, " << n.ok << " ok";
  if (n.skipped) os << " (" << n.skipped << " skipped)";
  os << ": " << (n.fail ? "FAIL" : n.warn ? "PASS with warnings" : "PASS") << "\n";
}

json doctor_report_json(const DoctorInput& in, const std::vector<Check>& checks) {
  json cj = json::array();
  for (const auto& c : checks) cj.push_back(c.to_json());
  const CheckCounts n = count_checks(checks);
  return {{"schema", "nodebench.doctor"},
          {"schema_version", 1},
          {"verdict", n.fail ? "fail" : n.warn ? "warn" : "pass"},
          {"counts", {{"ok", n.ok}, {"info", n.info}, {"warn", n.warn}, {"fail", n.fail}}},
          {"checks", cj},
          {"cuda_architectures", in.cuda_architectures},
          {"environment", in.environment},
          {"live", in.live.to_json()}};
}

}  // namespace nb
