// A result record (docs/SCHEMA.md, "Records") as a typed value, built in one place from what a
// case reported (build_record) and serialised in one place (Record::to_json): its status and
// reason kind are enums, its metrics carry their unit and direction (bench/metric.hpp), its
// percent of peak names the peak key it used.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/benchmark.hpp"
#include "bench/metric.hpp"

namespace nb {

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
  ReasonKind reason_kind = ReasonKind::none;  // none: by status (error for failed, unsupported for skipped)
};

// A throughput against the GPU's expected peak for its key (e.g. fp16_tensor_tflops).
struct PeakShare {
  std::string metric, peak_key, source;
  double peak = 0, percent = 0;
  std::optional<double> peak_clock_mhz, sm_mhz;  // the peak scaled to the clock measured during the case
  nlohmann::json to_json() const;
};

struct Record {
  std::string id, family, name;
  nlohmann::json params = nlohmann::json::object();
  std::vector<int> gpus;
  Status status = Status::failed;
  ReasonKind reason_kind = ReasonKind::error;
  std::string reason;
  nlohmann::json stats = nullptr;             // of the samples; null when nothing was timed
  std::vector<double> samples_s;
  std::vector<Metric> metrics;                // in the order they were set; names unique
  std::optional<PeakShare> peak;
  std::vector<std::string> flags;
  std::optional<Metric> primary;              // the figure of merit (its name and direction)
  nlohmann::json clocks = nlohmann::json::object();
  nlohmann::json measurement = nlohmann::json::object();
  nlohmann::json details = nlohmann::json::object();
  std::string started_at;
  double duration_s = 0;

  // Sets (or replaces) a metric by name.
  void set(Metric m);
  const Metric* metric(const std::string& name) const;
  // The record as the schema writes it.
  nlohmann::json to_json() const;
};

// Builds one record: stats from the samples, the throughput metric from the median time,
// percent of peak, and flags. A case with status ok but no samples becomes failed.
Record build_record(const RecordInput& in);
inline nlohmann::json make_record(const RecordInput& in) { return build_record(in).to_json(); }

}  // namespace nb
