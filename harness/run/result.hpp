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

// The run's document in memory: the header, then the records as they come, the analyses and the
// summary; finish() sets how the run ended. Writing it (atomically, as the run goes) is the JSON
// result file's job (output/json_file.hpp), one Reporter among others.
class RunDocument {
 public:
  explicit RunDocument(nlohmann::json header);
  void add(nlohmann::json record);
  void set_analysis(const std::string& key, nlohmann::json value);
  // A top-level field of the document (e.g. algo_cache, timeline, plan).
  void set_field(const std::string& key, nlohmann::json value) { doc_[key] = std::move(value); }
  void finish(const std::string& run_status, const std::string& error = "");
  // The document with its summary brought up to date.
  const nlohmann::json& doc() const;
  nlohmann::json summary() const;

 private:
  mutable nlohmann::json doc_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace nb
