// The batch-size recommendation over the train family's sweep (analysis `train_recommendation`):
// per GPU, precision and layout, the smallest batch at >= plateau_share of the plateau
// throughput, the largest batch within memory_fraction of device memory, and the
// gradient-accumulation steps that reach `global_batch`, each with its reason.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace nb::train {

struct GpuCc {
  int index = 0;
  int cc = 0;  // major * 10 + minor
};
nlohmann::json train_recommendation(const nlohmann::json& records, double memory_fraction, int global_batch,
                                    const std::vector<GpuCc>& gpus, double plateau_share = 0.95);
std::vector<std::string> train_recommendation_lines(const nlohmann::json& analysis);

// The record's memory fraction: device_used_bytes / device memory (memory_fraction metric).
// Case ids of the family for a suite, for tests.
std::vector<std::string> train_case_ids(bool full);

}  // namespace nb::train
