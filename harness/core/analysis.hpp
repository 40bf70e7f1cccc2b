// Findings derived from a run's records: the FP16-versus-FP32 verdict.
#pragma once
#include <vector>

#include <nlohmann/json.hpp>

#include "environment.hpp"

namespace nb {

// For each GPU: a table of FP16/FP32 speedups (peak kernels, GEMM, and convolution when
// present) and a verdict: mixed precision "pays" when the best practical speedup (GEMM, else
// convolution, else the peak kernels) is at least 1.5x; otherwise "does_not_pay", and when
// INT8 runs at least 2x FP32 (DP4A on sm_61) the recommendation names INT8 for inference.
// `gpus`: index and compute capability of each GPU, as in the environment.
struct GpuBrief {
  int index = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
};
nlohmann::json fp16_vs_fp32(const nlohmann::json& records, const std::vector<GpuBrief>& gpus);

// One line per GPU for the console.
std::vector<std::string> fp16_verdict_lines(const nlohmann::json& analysis);

}  // namespace nb

namespace nb {
// Per GPU, precision and layout, from the conv family's network records: the smallest batch
// whose training throughput reaches `plateau_share` (95%) of the best measured and whose
// measured memory stays at most `memory_fraction` of the device.
nlohmann::json batch_recommendation(const nlohmann::json& records, double memory_fraction,
                                    double plateau_share = 0.95);
std::vector<std::string> batch_recommendation_lines(const nlohmann::json& analysis);
}  // namespace nb
