// `run --gbench-out FILE`: the run's samples in Google Benchmark's JSON format, written by Google
// Benchmark's own JSONReporter, so its tools/compare.py (a Mann-Whitney U test over repetitions)
// and the dashboards built on that format read nodebench runs. Each timed record is one
// benchmark named "<id>/gpu<list>", each sample one repetition (real time per launch, in
// microseconds), followed by the mean, median and stddev aggregates; the record's numeric
// metrics are its counters. Records with nothing timed (skipped, failed) are left out.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace nb {

void write_gbench_json(const nlohmann::json& doc, const std::string& path);

}  // namespace nb

#include "run/reporter.hpp"

namespace nb {

// `run --gbench-out FILE` as a Reporter: written when the run finishes.
class GbenchJson : public Reporter {
 public:
  explicit GbenchJson(std::string path) : path_(std::move(path)) {}
  std::string what() const override { return "Google Benchmark JSON"; }
  void finished(const RunDocument& doc) override;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace nb
