// What `nodebench advise` reads from result files: what each family contributes
// (bench/contributions.hpp: the measured all-reduce curves, the host link, the one-GPU step times,
// the measured data-parallel steps, the input rate) and the FP16 verdict. Pure over parsed JSON
// documents, so it is unit-tested without files.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "advise/advise.hpp"
#include "bench/contributions.hpp"

namespace nb::advise {

// A one-GPU step the advice rows rest on: the slowest GPU's, per precision, layout and batch.
using StepSource = StepTime;
using MeasuredDp = DataParallelStep;

// The host's measured input pipeline for the input line: the records of the family that
// measures it and that family's judge (its AdviceContribution's input), so that the line rests on
// the decode rate and not on the copy alone.
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
  // The assumption for rows whose step is a partial one (StepTime::partial), by its kind.
  std::map<std::string, std::string> partial_step_notes;
  std::vector<MeasuredDp> dp;
  std::vector<std::string> fp16_verdicts;  // "pays: FP16 runs 12.45x ..." per GPU
  InputPipeline input_pipeline;  // from the family that contributes an input rate (empty: not measured)
  // The smallest GPU memory of the files' environments (what CUDA reports: with ECC on, what the
  // ECC reserve leaves), and how it was read (the ECC state and what ECC costs, where known).
  std::optional<double> gpu_memory_bytes;
  std::string gpu_memory_note;
  int files = 0;
};

// Gathers the inputs from parsed result documents through the registered contributions; only
// records with status "ok" count. Where a full step exists for a (precision, layout, batch),
// partial steps for it are not used.
Inputs gather_inputs(const std::vector<nlohmann::json>& docs, const std::string& grad_dtype);

// Whether `doc`, read from `path`, is a result file the advisor can read: a JSON object with a
// 'records' array of objects (not a Google Benchmark JSON file, not another nodebench document),
// whose ok records of the families that contribute to the advisor give each figure it uses (their
// FigureRules) as a number in its range (a step time of -5 or "fast" is refused, not dropped). Throws nb::Error naming the file,
// the record and the field.
void check_result_document(const nlohmann::json& doc, const std::string& path);

}  // namespace nb::advise
