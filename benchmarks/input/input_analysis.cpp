// Registers the input family's verdict: the analysis `input_pipeline` after a run (the training
// steps of the same result), and the judge `nodebench advise` asks for its input line (the
// training step of one file, the decode of another).
#include "bench/benchmark.hpp"
#include "bench/contributions.hpp"
#include "input_verdict.hpp"

namespace nb::input {
namespace {

using nlohmann::json;

bool has_cpu_record(const json& records) {
  for (const json& r : records)
    if (r.value("family", "") == "input" && r.value("id", "").rfind("input/cpu/", 0) == 0 && r.value("status", "") == "ok")
      return true;
  return false;
}

const AnalysisRegistrar analysis({"input_pipeline", has_cpu_record,
                                  [](const json& records, const AnalysisContext& ctx) {
                                    const json& g = ctx.environment.is_object() ? ctx.environment.value("gpus", json::array())
                                                                                : json::array();
                                    return input_pipeline_analysis(records, int(g.size()));
                                  },
                                  input_pipeline_lines});

// The input family's records of every file, each with the host it ran on.
json gather(const std::vector<json>& docs) {
  json out = json::array();
  for (const json& doc : docs) {
    if (!doc.is_object() || !doc.contains("records") || !doc["records"].is_array()) continue;
    std::string host;
    if (doc.contains("environment") && doc["environment"].is_object() && doc["environment"].contains("host"))
      host = doc["environment"]["host"].value("hostname", "");
    for (const json& r : doc["records"]) {
      if (!r.is_object() || r.value("family", "") != "input") continue;
      json x = r;
      if (!x.contains("host")) x["host"] = host;
      out.push_back(std::move(x));
    }
  }
  return out;
}

// Its contribution to `nodebench advise` (bench/contributions.hpp): the input rate, judged
// against each step the advice rests on; no record of it is a step, a curve or a copy.
const AdviceRegistrar advice({"input", nullptr, {}, "", InputRateJudge{gather, judge_step}, "^input/"});

}  // namespace
}  // namespace nb::input
