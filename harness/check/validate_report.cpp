// `nodebench validate`'s reports: the verdict, the result file's analysis.validation, JUnit XML,
// the Prometheus textfile and the printed table.
#include "base/prometheus.hpp"
#include "check/validate.hpp"

#include <cmath>
#include <iomanip>
#include <map>
#include <ostream>
#include <sstream>
#include <utility>

#include "base/text.hpp"

namespace nb {

using nlohmann::json;

// ---- Reports -----------------------------------------------------------------------------------

bool ValidationReport::pass() const {
  for (const auto* v : {&doctor, &benchmarks})
    for (const auto& c : *v)
      if (c.severity == Severity::fail) return false;
  return true;
}

json ValidationReport::to_json() const {
  json d = json::array(), b = json::array();
  for (const auto& c : doctor) d.push_back(c.to_json());
  for (const auto& c : benchmarks) b.push_back(c.to_json());
  std::vector<Check> all = doctor;
  all.insert(all.end(), benchmarks.begin(), benchmarks.end());
  const CheckCounts n = count_checks(all);
  return {{"level", level},
          {"verdict", pass() ? "pass" : "fail"},
          {"counts", {{"ok", n.ok}, {"info", n.info}, {"warn", n.warn}, {"fail", n.fail}, {"skipped", n.skipped}}},
          {"profile", profile},
          {"missing_families", missing_families},
          {"doctor", d},
          {"benchmarks", b}};
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (c < 0x20 && c != '\n' && c != '\t' && c != '\r') out += ' ';  // not allowed in XML 1.0
        else out += char(c);
    }
  }
  return out;
}

std::string junit_xml(const ValidationReport& r, const std::string& hostname, const std::string& timestamp, double duration_s) {
  std::ostringstream os;
  auto suite = [&](const std::string& name, const std::vector<Check>& checks) {
    const CheckCounts n = count_checks(checks);
    os << "  <testsuite name=\"" << xml_escape(name) << "\" tests=\"" << checks.size() << "\" failures=\"" << n.fail
       << "\" errors=\"0\" skipped=\"" << n.skipped << "\" hostname=\"" << xml_escape(hostname) << "\" timestamp=\""
       << xml_escape(timestamp) << "\">\n";
    for (const auto& c : checks) {
      os << "    <testcase classname=\"" << xml_escape(name) << "\" name=\"" << xml_escape(c.id + (c.gpu ? " gpu" + c.gpu_label() : ""))
         << "\" time=\"0\">\n";
      const std::string body = "evidence: " + c.evidence + (c.fix.empty() ? "" : "\nfix: " + c.fix);
      if (c.severity == Severity::fail)
        os << "      <failure message=\"" << xml_escape(c.summary) << "\" type=\"fail\">" << xml_escape(body) << "</failure>\n";
      else if (c.skipped)
        os << "      <skipped message=\"" << xml_escape(c.summary) << "\"/>\n";
      else
        os << "      <system-out>" << xml_escape(to_string(c.severity) + ": " + c.summary + "\n" + body) << "</system-out>\n";
      os << "    </testcase>\n";
    }
    os << "  </testsuite>\n";
  };
  std::vector<Check> all = r.doctor;
  all.insert(all.end(), r.benchmarks.begin(), r.benchmarks.end());
  const CheckCounts n = count_checks(all);
  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  os << "<testsuites name=\"nodebench validate (level " << r.level << ")\" tests=\"" << all.size() << "\" failures=\""
     << n.fail << "\" errors=\"0\" skipped=\"" << n.skipped << "\" time=\"" << fmt(duration_s, 3) << "\">\n";
  suite("nodebench.doctor", r.doctor);
  suite("nodebench.benchmarks", r.benchmarks);
  os << "</testsuites>\n";
  return os.str();
}


std::string prometheus_text(const ValidationReport& r, const PromContext& ctx) {
  std::ostringstream os;
  auto num = [](double v) {
    if (std::isnan(v)) return std::string("NaN");
    std::ostringstream s;
    s << std::setprecision(10) << v;
    return s.str();
  };
  auto head = [&](const char* name, const char* help) {
    os << "# HELP " << name << " " << help << "\n# TYPE " << name << " gauge\n";
  };
  // One series per (check, gpu): where a check id repeats for a GPU, the worst wins.
  std::vector<Check> all;
  std::map<std::pair<std::string, std::string>, size_t> seen;
  for (const auto* v : {&r.doctor, &r.benchmarks})
    for (const auto& c : *v) {
      const auto key = std::make_pair(c.id, c.gpu_label());
      auto it = seen.find(key);
      if (it == seen.end()) {
        seen[key] = all.size();
        all.push_back(c);
      } else if (int(c.severity) > int(all[it->second].severity)) {
        all[it->second] = c;
      }
    }
  auto labels = [](const Check& c) {
    return "check=\"" + prometheus_label_escape(c.id) + "\",gpu=\"" + prometheus_label_escape(c.gpu_label()) + "\"";
  };
  head("nodebench_validate_pass", "1 when nodebench validate passed (no check failed), else 0.");
  os << "nodebench_validate_pass " << (r.pass() ? 1 : 0) << "\n";
  head("nodebench_validate_level", "The validation level run (1 checks, 2 quick benchmarks, 3 full sweeps).");
  os << "nodebench_validate_level " << r.level << "\n";
  head("nodebench_validate_timestamp_seconds", "Unix time the validation finished.");
  os << "nodebench_validate_timestamp_seconds " << num(std::floor(ctx.unix_time)) << "\n";
  head("nodebench_validate_checks", "Number of checks by result.");
  const CheckCounts n = count_checks(all);
  os << "nodebench_validate_checks{result=\"ok\"} " << n.ok << "\n"
     << "nodebench_validate_checks{result=\"info\"} " << n.info << "\n"
     << "nodebench_validate_checks{result=\"warn\"} " << n.warn << "\n"
     << "nodebench_validate_checks{result=\"fail\"} " << n.fail << "\n"
     << "nodebench_validate_checks{result=\"skipped\"} " << n.skipped << "\n";
  head("nodebench_gpus", "GPUs seen: by CUDA in this process, and by the driver (NVML).");
  os << "nodebench_gpus{source=\"cuda\"} " << ctx.cuda_gpus << "\n";
  if (ctx.nvml_gpus) os << "nodebench_gpus{source=\"nvml\"} " << *ctx.nvml_gpus << "\n";
  head("nodebench_check_status", "1 when the check passed (ok, info, warn or skipped), 0 when it failed.");
  for (const auto& c : all) os << "nodebench_check_status{" << labels(c) << "} " << (c.severity == Severity::fail ? 0 : 1) << "\n";
  head("nodebench_check_severity", "Severity of the check: 0 ok, 1 info, 2 warn, 3 fail.");
  for (const auto& c : all) os << "nodebench_check_severity{" << labels(c) << "} " << int(c.severity) << "\n";
  head("nodebench_check_skipped", "1 for a benchmark check that could not be judged (family not built, case skipped).");
  for (const auto& c : all)
    if (c.skipped) os << "nodebench_check_skipped{" << labels(c) << "} 1\n";
  head("nodebench_check_value", "Measured value of a benchmark check, in the unit label.");
  for (const auto& c : all)
    if (c.value && c.threshold)
      os << "nodebench_check_value{" << labels(c) << ",unit=\"" << prometheus_label_escape(c.unit) << "\"} " << num(*c.value) << "\n";
  head("nodebench_check_threshold", "The minimum a benchmark check needs to pass, in the unit label.");
  for (const auto& c : all)
    if (c.value && c.threshold)
      os << "nodebench_check_threshold{" << labels(c) << ",unit=\"" << prometheus_label_escape(c.unit) << "\"} "
         << num(*c.threshold) << "\n";
  return os.str();
}

void print_validation(const ValidationReport& r, std::ostream& os) {
  os << "\nnodebench validate, level " << r.level << ": doctor\n";
  print_checks(r.doctor, os);
  if (r.level >= 2) {
    os << "\nnodebench validate, level " << r.level << ": benchmarks against thresholds\n";
    print_checks(r.benchmarks, os);
  }
  std::vector<Check> all = r.doctor;
  all.insert(all.end(), r.benchmarks.begin(), r.benchmarks.end());
  const CheckCounts n = count_checks(all);
  os << "\nVERDICT: " << (r.pass() ? "PASS" : "FAIL") << " (" << n.fail << " fail, " << n.warn << " warn, " << n.skipped
     << " skipped, " << all.size() << " checks)\n";
}

}  // namespace nb
