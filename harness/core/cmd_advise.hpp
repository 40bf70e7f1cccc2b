// `nodebench advise RESULT.json... [options]` (docs/ADVISE.md): reads result files, predicts
// data-parallel training with the model of advise.hpp, prints a table and the recommendation,
// and with --json writes them as a document (schema "nodebench.advise"). Bad input exits 2.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "advise_inputs.hpp"
#include "cli.hpp"

namespace nb {

int cmd_advise(const Command& cmd);

namespace advise {

// The advice as a JSON document: inputs, rows (one per precision, layout, per-GPU batch, GPU
// count and accumulation), the recommendation (statements with their figures) and the
// assumptions. Throws nb::Error on input that cannot be used (the message names the option).
nlohmann::json build_advice(const Inputs& in, const AdviseOptions& o);
// The recommendation (advise_report.cpp): statements {topic, text}, each with the figures it
// rests on, from the rows of `advice`.
// `input_pipeline`: Inputs::input_pipeline, judged by the registered InputPipelineJudge.
nlohmann::json recommend(const nlohmann::json& advice, const CommModel& comm, const std::vector<std::string>& fp16,
                         std::optional<bool> fp16_pays, const AdviseOptions& o,
                         const nlohmann::json& input_pipeline = nlohmann::json::array());
// The same as readable text.
std::string advice_text(const nlohmann::json& advice);
// "1,2,4" -> {1, 2, 4}; throws nb::Error naming --gpus.
std::vector<int> parse_counts(const std::string& text);

}  // namespace advise
}  // namespace nb
