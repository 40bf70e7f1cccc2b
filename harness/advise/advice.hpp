// The advice of `nodebench advise` (docs/ADVISE.md) from result files' inputs: the rows, the
// recommendation and the text, with the model of advise.hpp.
#pragma once
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "advise/advise_inputs.hpp"
#include "advise/options.hpp"
#include "bench/metric.hpp"

namespace nb {

namespace advise {

// The advice rows' figures that carry a metric's name (docs/ADVISE.md), declared once: the exposed
// all-reduce of a row's step and the peak device memory of the step it rests on.
inline constexpr MetricDecl kRowExposedComm{"exposed_comm", Unit::ms, Better::lower};
inline constexpr MetricDecl kRowPeakMemory{"peak_memory", Unit::bytes, Better::lower};

// The advice as a JSON document: inputs, rows (one per precision, layout, per-GPU batch, GPU
// count and accumulation), the recommendation (statements with their figures) and the
// assumptions. Throws nb::Error on input that cannot be used (the message names the option).
nlohmann::json build_advice(const Inputs& in, const AdviseOptions& o);
// The recommendation (advise_report.cpp): statements {topic, text}, each with the figures it
// rests on, from the rows of `advice`.
// `input_pipeline`: Inputs::input_pipeline (the host's decoding, when measured).
nlohmann::json recommend(const nlohmann::json& advice, const CommModel& comm, const std::vector<std::string>& fp16,
                         std::optional<bool> fp16_pays, const AdviseOptions& o, const InputPipeline& input_pipeline = {},
                         const std::set<std::string>& partial_kinds = {});
// The same as readable text.
std::string advice_text(const nlohmann::json& advice);
// "1,2,4" -> {1, 2, 4}; throws nb::Error naming --gpus.
std::vector<int> parse_counts(const std::string& text);

}  // namespace advise
}  // namespace nb
