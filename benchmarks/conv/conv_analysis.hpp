// The conv family's analyses: the batch-size recommendation over its network cases
// (analysis `batch_recommendation`) and its evidence for the FP16-versus-FP32 verdict.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace nb::conv {

// Per GPU (host, rank and index: records of GPU 0 on two hosts are two series), precision and
// layout, from the network records (params.layer resnet50_total): the smallest batch whose
// training throughput reaches `plateau_share` (95%) of the best measured and whose measured
// memory stays at most `memory_fraction` of the device.
nlohmann::json batch_recommendation(const nlohmann::json& records, double memory_fraction, double plateau_share = 0.95);
std::vector<std::string> batch_recommendation_lines(const nlohmann::json& analysis);

}  // namespace nb::conv
