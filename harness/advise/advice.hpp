// The advice of `nodebench advise` (docs/ADVISE.md) from result files' inputs: the rows, the
// recommendation and the text, with the model of advise.hpp.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "advise/advise_inputs.hpp"
#include "advise/options.hpp"

namespace nb {

namespace advise {

// The advice as a JSON document: inputs, rows (one per precision, layout, per-GPU batch, GPU
// count and accumulation), the recommendation (statements with their figures) and the
// assumptions. Throws nb::Error on input that cannot be used (the message names the option).
nlohmann::json build_advice(const Inputs& in, const AdviseOptions& o);
// The recommendation (advise_report.cpp): statements {topic, text}, each with the figures it
// rests on, from the rows of `advice`.
nlohmann::json recommend(const nlohmann::json& advice, const CommModel& comm, const std::vector<std::string>& fp16,
                         std::optional<bool> fp16_pays, const AdviseOptions& o);
// The same as readable text.
std::string advice_text(const nlohmann::json& advice);
// "1,2,4" -> {1, 2, 4}; throws nb::Error naming --gpus.
std::vector<int> parse_counts(const std::string& text);

}  // namespace advise
}  // namespace nb
