// validate's verdict in the formats monitoring takes, as Reporters (run/reporter.hpp) that the
// validate command finishes once the checks are judged: JUnit XML (CI dashboards) and a
// node_exporter textfile (Prometheus). Each writes its file atomically, its folder made.
#pragma once
#include <chrono>
#include <string>

#include "check/validate.hpp"
#include "run/formats.hpp"
#include "run/reporter.hpp"

namespace nb {

class JunitReport : public Reporter {
 public:
  JunitReport(std::string path, const ValidationReport& report, std::string hostname,
              std::chrono::steady_clock::time_point started)
      : path_(std::move(path)), report_(report), hostname_(std::move(hostname)), started_(started) {}
  std::string what() const override { return "JUnit XML"; }
  void finished(const RunDocument& doc) override;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const ValidationReport& report_;
  std::string hostname_;
  std::chrono::steady_clock::time_point started_;
};

class PrometheusReport : public Reporter {
 public:
  PrometheusReport(std::string path, const ValidationReport& report, PromContext ctx)
      : path_(std::move(path)), report_(report), ctx_(ctx) {}
  std::string what() const override { return "Prometheus textfile"; }
  void finished(const RunDocument& doc) override;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const ValidationReport& report_;
  PromContext ctx_;
};

// What validate hands its verdict formats (run/formats.hpp, FormatStage::verdict; check/formats/).
struct VerdictExtra : FormatExtra {
  VerdictExtra(const ValidationReport& r, std::string host, std::chrono::steady_clock::time_point t0, PromContext pc)
      : report(r), hostname(std::move(host)), started(t0), prom(pc) {}
  const ValidationReport& report;
  std::string hostname;
  std::chrono::steady_clock::time_point started;
  PromContext prom;
};

// "2026-12-01T21:26:34Z" (format "%Y-%m-%dT%H:%M:%SZ") or "20261201T212634Z", now, in UTC.
std::string utc_stamp(const char* format);

}  // namespace nb
