// From one run of a case to its records: the case's own record and one per part it emitted
// (CaseOutput::parts), with the params it learned at run time merged in, and the analysis it
// wrote. Used by the runner; unit-tested without a GPU.
#pragma once
#include <vector>

#include <nlohmann/json.hpp>

#include "node/environment.hpp"
#include "run/result.hpp"

namespace nb {

struct CaseRecords {
  std::vector<nlohmann::json> records;  // parts first, in the order emitted, then the case's own
  nlohmann::json analysis = nlohmann::json::object();
};

// `gpus`: every GPU of the environment (a part's record looks up its first GPU for peaks).
// Never throws: a record that cannot be built becomes a failed record saying why.
CaseRecords make_case_records(const RecordInput& in, const std::vector<GpuInfo>& gpus);

// Clock-normalised rates: for each throughput metric of the record (`tflops`, `tops`, `gbps`,
// `images_per_s`, or a name ending in `_<one of them>`), `<metric>_per_ghz` = metric /
// (clocks.sm_mhz_during / 1000), when that clock is known, so that a trend can tell a clock
// change from a code change. Applied to every record make_case_records builds.
bool is_rate_metric(const std::string& name);
void add_per_ghz_metrics(nlohmann::json& record);

// A percent of peak above `limit_pct` (103: a measured figure cannot beat the hardware by more
// than clock and rounding slack) adds the flag `above_peak` and turns an ok record `wrong` with
// reason_kind `above_peak` and the reason. True when the record was above its peak. Applied to
// every record make_case_records builds.
bool mark_above_peak(nlohmann::json& record, double limit_pct = 103.0);

// Merges `analysis` (an object of keys) into the run document's analysis, key by key, with JSON
// merge-patch semantics (objects merge, everything else replaces).
void merge_analysis(RunDocument& file, const nlohmann::json& analysis);

}  // namespace nb
