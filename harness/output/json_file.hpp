// The JSON result file (docs/SCHEMA.md) as a Reporter: written when the run starts (so that an
// unwritable path stops the command before anything runs), after a record at most every
// `min_interval_s`, and when the run finishes; each write goes to a temporary file in the same
// folder and is renamed over the target, so readers never see a partial file.
#pragma once
#include <chrono>
#include <string>

#include "run/reporter.hpp"
#include "run/result.hpp"

namespace nb {

class JsonResultFile : public Reporter {
 public:
  // Writes `doc` as it is now; throws nb::Error when the file cannot be written.
  JsonResultFile(std::string path, const RunDocument& doc, double min_interval_s = 2.0);
  std::string what() const override { return "JSON result file"; }
  void recorded(const RunDocument& doc, const nlohmann::json& record, const Progress& p) override;
  void finished(const RunDocument& doc) override { write(doc); }
  void write(const RunDocument& doc);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  double min_interval_s_;
  std::chrono::steady_clock::time_point last_write_{};
};

}  // namespace nb
