// What `nodebench advise` reads from result files: the measured all-reduce curves (nccl family),
// the host link (hostlink family), the one-GPU step times (train family, else the conv family's
// network case), the measured data-parallel steps (train_dp family) and the FP16 verdict.
// Pure over parsed JSON documents, so it is unit-tested without files.
#pragma once
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "advise/advise.hpp"

namespace nb::advise {

struct StepSource {
  std::string precision, layout;
  int batch = 0;
  double step_s = 0;      // the slowest GPU's one-GPU step
  std::string source;     // "train/resnet50/fp16/nhwc/b256" or the conv case, with its caveat
  bool from_conv = false; // the conv family's network case: convolutions only
  std::optional<double> peak_memory_bytes;  // the train record's peak device memory, where recorded
};

struct MeasuredDp {
  std::string id, precision, layout;
  int batch = 0, gpus = 0, accumulation = 1;
  double images_per_s = 0;
  std::optional<double> efficiency, step_ms, exposed_comm_ms;
};

// The host's measured input pipeline for the input line: the records of the family that
// measures it and that family's judge (bench/benchmark.hpp's InputPipelineJudge, handed over by
// the command), so that the line rests on the decode rate and not on the copy alone.
struct InputPipeline {
  nlohmann::json records = nlohmann::json::array();
  // For a step of `precision`/`layout` at `images_per_s` over `gpus` GPUs: an object with at
  // least "status" ("pass" or "warn") and "text"; null when the records cannot judge it.
  std::function<nlohmann::json(const nlohmann::json& records, const std::string& precision, const std::string& layout,
                               double images_per_s, int gpus)>
      judge;
  bool measured() const { return judge && records.is_array() && !records.empty(); }
};

struct Inputs {
  std::vector<CommModel::Curve> curves;  // per GPU count, the gradient dtype's points preferred
  std::string curve_dtype;               // the NCCL dtype the curves were taken from
  // The NCCL_* settings in force for the all-reduce records (details.nccl_env without
  // NCCL_VERSION and NCCL_DEBUG*), each distinct set as "A=1 B=0" ("defaults" when none): a
  // transport forced by NCCL_P2P_DISABLE / NCCL_SHM_DISABLE changes the curve, so curves of
  // different settings must not be mixed.
  std::set<std::string> nccl_settings;
  std::optional<double> pinned_gbps, pageable_gbps;  // h2d, the slowest GPU's largest transfer
  std::string host_source;
  std::vector<StepSource> steps;
  std::vector<MeasuredDp> dp;
  std::vector<std::string> fp16_verdicts;  // "pays: FP16 runs 12.45x ..." per GPU
  InputPipeline input_pipeline;  // set by the command (empty: not measured)
  // The smallest GPU memory of the files' environments (what CUDA reports: with ECC on, what the
  // ECC reserve leaves), and how it was read (the ECC state and what ECC costs, where known).
  std::optional<double> gpu_memory_bytes;
  std::string gpu_memory_note;
  int files = 0;
};

// Gathers the inputs from parsed result documents; only records with status "ok" count. When a
// train record exists for a (precision, layout, batch), conv records for it are not used.
Inputs gather_inputs(const std::vector<nlohmann::json>& docs, const std::string& grad_dtype);

// Whether `doc`, read from `path`, is a result file the advisor can read: a JSON object with a
// 'records' array of objects (not a Google Benchmark JSON file, not another nodebench document),
// whose ok records of the families the advisor reads give each figure it uses as a number in its
// range (a step time of -5 or "fast" is refused, not dropped). Throws nb::Error naming the file,
// the record and the field.
void check_result_document(const nlohmann::json& doc, const std::string& path);

}  // namespace nb::advise
