// Result records (schema v1) and the result file, written atomically.
#pragma once
#include <chrono>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "base/files.hpp"
#include "bench/benchmark.hpp"

namespace nb {

constexpr int kSchemaVersion = 1;


nlohmann::json clock_to_json(const ClockSnapshot& s);

struct RecordInput {
  const Case* c = nullptr;
  std::vector<int> gpus;
  Status status = Status::failed;
  std::string reason;
  CaseOutput* out = nullptr;  // may be null for skipped/failed before measuring
  const GpuInfo* gpu = nullptr;
  std::optional<ClockSnapshot> before, after;
  bool nvml_available = false;
  std::string started_at;
  double duration_s = 0;
  ReasonKind reason_kind = ReasonKind::none;  // none: inferred (error for failed, unsupported for skipped)
};

// Builds one record: stats from the samples, the throughput metric from the median time,
// percent of peak, and flags. A case with status ok but no samples becomes failed.
nlohmann::json make_record(const RecordInput& in);

// Writes the run's file: after each added record at most every `min_interval_s`, and on
// finish(); each write goes to a temporary file in the same folder and is renamed over the
// target, so readers never see a partial file. An empty path keeps the document in memory only.
class ResultFile {
 public:
  ResultFile(std::string path, nlohmann::json header, double min_interval_s = 2.0);
  void add(nlohmann::json record);
  void set_analysis(const std::string& key, nlohmann::json value);
  // A top-level field of the document (e.g. algo_cache, timeline).
  void set_field(const std::string& key, nlohmann::json value) { doc_[key] = std::move(value); }
  void finish(const std::string& run_status, const std::string& error = "");
  void flush(bool force);
  const std::string& path() const { return path_; }
  const nlohmann::json& doc() const { return doc_; }
  nlohmann::json summary() const;

 private:
  void write();
  std::string path_;
  nlohmann::json doc_;
  double min_interval_s_;
  std::chrono::steady_clock::time_point last_write_{};
  std::chrono::steady_clock::time_point t0_;
};


}  // namespace nb
