// One interface for every output a command writes -- the JSON result file, the console's progress
// lines and summary table, Google Benchmark JSON, validate's JUnit XML and Prometheus textfile,
// the monitor's table, CSV, JSON lines and textfile -- so that a format is one class (output/,
// check/) and the commands only choose which ones to attach. Every hook has a default that does
// nothing; a format implements what it writes.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "node/monitor.hpp"

namespace nb {

class RunDocument;

// Where a run stands after a record.
struct Progress {
  size_t done = 0, total = 0;            // steps of the schedule
  double elapsed_s = 0;
  std::optional<double> left_s;          // the estimate of the time left (run/estimate.hpp)
  double step_s = 0;                     // the wall time of the step the record came from
  bool first_of_step = true;             // a step with several records (parts): the first one
};

// What a run is about to do, said before the first case.
struct RunForecast {
  size_t cases = 0, steps = 0, gpus = 0;
  double predicted_s = 0;                // the estimate of the whole run
  nlohmann::json plan = nlohmann::json::object();  // what a --budget shortened or left out
};

class Reporter {
 public:
  virtual ~Reporter() = default;
  // A name for messages ("JSON result file", "JUnit XML").
  virtual std::string what() const = 0;
  virtual void started(const RunDocument& /*doc*/, const RunForecast& /*forecast*/) {}
  virtual void recorded(const RunDocument& /*doc*/, const nlohmann::json& /*record*/, const Progress& /*p*/) {}
  // The document is complete (records, analyses, run status). Throws nb::Error when the output
  // cannot be written; the command says so and goes on with the others.
  virtual void finished(const RunDocument& /*doc*/) {}
  // The monitor: one round of samples, a sample per GPU.
  virtual void sampled(const std::vector<GpuSample>& /*round*/, double /*unix_time*/) {}
};

}  // namespace nb
