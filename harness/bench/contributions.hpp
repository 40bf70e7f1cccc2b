// What a family contributes to the core's commands besides its cases: the figures `nodebench
// advise` takes from its records, how it classifies the link between GPUs, and what a line about
// one of its records shows. The core defines
// the interfaces here once; a family registers its contribution from a static initialiser in its
// own folder (as it registers itself), and the core iterates the registries: no code of the
// harness picks records by a family's name or id, nor reads a family's metric by name (a probe in
// tests/layering keeps it so).
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace nb {

// ------------------------------------------------------------------ advise (docs/ADVISE.md)

// One measured point of the all-reduce (the collective time model): a message of `bytes` over
// `gpus` GPUs in `dtype`, its bus bandwidth and time, under the collective library's `settings`
// (e.g. "NCCL_P2P_DISABLE=1", "defaults": curves of different settings must not be mixed).
struct CollectivePoint {
  std::string dtype;
  int gpus = 0;
  double bytes = 0, busbw_gbps = 0, time_s = 0;
  std::string settings;
};

// One host-to-device copy rate: `memory` "pinned" or "pageable", the GPU, the transfer's size.
struct HostCopyRate {
  std::string memory;
  int gpu = 0;
  double bytes = 0, gbps = 0;
};

// One GPU's training step at a precision, layout and per-GPU batch (step_s <= 0: the record has
// no usable step time, though its peak memory may still count). `kind` labels where it came from
// (the advice rows' step_kind); a `partial` step (a network's convolutions only) is used only
// where no full step of the same precision, layout and batch was measured.
struct StepTime {
  std::string precision, layout;
  int batch = 0;
  double step_s = 0;
  std::string source;  // the record's id
  std::string kind;
  bool partial = false;
  std::optional<double> peak_memory_bytes;  // the record's peak device memory, where recorded
};

// A measured data-parallel step over several GPUs.
struct DataParallelStep {
  std::string id, precision, layout;
  int batch = 0, gpus = 0, accumulation = 1;
  double images_per_s = 0;
  std::optional<double> efficiency, step_ms, exposed_comm_ms;
};

// What the records of a file tell the advisor, in record order.
struct AdviceFacts {
  std::vector<CollectivePoint> allreduce;
  std::vector<HostCopyRate> host_copies;
  std::vector<StepTime> steps;
  std::vector<DataParallelStep> dp;
};

// A figure of a family's record the advisor relies on, refused out of range when a file is read
// (a step time of -5 or "fast"): `section` "metrics" or "params", its key; strict: above `least`,
// else at least `least`.
struct FigureRule {
  std::string section, key;
  double least = 0;
  bool strict = false;
};

// The input rate (a family that measures the host's input pipeline): `gather` picks its records
// out of the result files (an array; empty: nothing measured), `judge` says whether they keep up
// with a step of `precision`/`layout` at `images_per_s` over `gpus` GPUs ({"status": "pass"|"warn",
// "text", ...}; null: cannot say).
struct InputRateJudge {
  std::function<nlohmann::json(const std::vector<nlohmann::json>& docs)> gather;
  std::function<nlohmann::json(const nlohmann::json& records, const std::string& precision, const std::string& layout,
                               double images_per_s, int gpus)>
      judge;
};

struct AdviceContribution {
  std::string family;
  // Reads one ok record of the family into `facts` (what it does not hold, it leaves out).
  std::function<void(const nlohmann::json& record, AdviceFacts& facts)> read;
  std::vector<FigureRule> figures;
  // The assumption the advice states when a row's step is one of this family's partial steps.
  std::string partial_step_note;
  std::optional<InputRateJudge> input;
  // The cases whose records this contribution reads: a --filter pattern over the family's case
  // ids ("^nccl/all_reduce/"). `nodebench advise --measure` runs the cases of the suite that the
  // contributions' patterns select, each from its own family (docs/ADVISE.md).
  std::string measure_filter;
};
std::vector<AdviceContribution>& advice_contributions();
struct AdviceRegistrar {
  explicit AdviceRegistrar(AdviceContribution c) { advice_contributions().push_back(std::move(c)); }
};

// ------------------------------------------------------------------ link classification

// The class of the link between `members` (GPU indices) that a result document shows ("nvlink",
// "pcie", "sys"), as a family that measured the topology knows it; nullopt: the document does not
// say. validate's link_class (bench/validate_values.hpp) asks each registered classifier in turn.
using LinkClassifier = std::function<std::optional<std::string>(const nlohmann::json& doc, const std::vector<int>& members)>;
std::vector<LinkClassifier>& link_classifiers();
struct LinkClassifierRegistrar {
  explicit LinkClassifierRegistrar(LinkClassifier c) { link_classifiers().push_back(std::move(c)); }
};

// ------------------------------------------------------------------ what a record's line shows

// The figure the console's line shows for a record of `family` that has no throughput of its own
// (tflops, tops, gbps): the name of the metric that says most about it, or nullopt (then its
// latency, where it has one).
struct HeadlineContribution {
  std::string family;
  std::function<std::optional<std::string>(const nlohmann::json& record)> metric;
};
std::vector<HeadlineContribution>& headline_contributions();
struct HeadlineRegistrar {
  explicit HeadlineRegistrar(HeadlineContribution c) { headline_contributions().push_back(std::move(c)); }
};

// What a command that runs one family (`nodebench burn`) prints for each of its records after
// the run (`line`, without the newline), and whether the record says its run was cut short.
struct RecordReport {
  std::string family;
  std::function<std::string(const nlohmann::json& record)> line;
  std::function<bool(const nlohmann::json& record)> cut_short;
};
std::vector<RecordReport>& record_reports();
const RecordReport* find_record_report(const std::string& family);
struct RecordReportRegistrar {
  explicit RecordReportRegistrar(RecordReport r) { record_reports().push_back(std::move(r)); }
};

// The family of a record: the first part of its `id` (without an id, its `family`).
std::string family_of_record(const nlohmann::json& record);

}  // namespace nb
