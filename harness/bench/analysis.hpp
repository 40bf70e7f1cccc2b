// Findings derived from a run's records: the FP16-versus-FP32 verdict.
#pragma once
#include <vector>

#include <nlohmann/json.hpp>

#include "node/environment.hpp"

namespace nb {

// For each GPU: a table of FP16/FP32 speedups (peak kernels, GEMM, and convolution when
// present) and a verdict: mixed precision "pays" when the best practical speedup (GEMM, else
// convolution, else the peak kernels) is at least 1.5x; otherwise "does_not_pay", and when
// INT8 runs at least 2x FP32 (DP4A on sm_61) the recommendation names INT8 for inference.
// `gpus`: index and compute capability of each GPU, as in the environment.
// Under MPI a brief also names its `host` and `rank`: GPU 0 of two hosts (or of two ranks with
// their own CUDA_VISIBLE_DEVICES) are different GPUs, and a record belongs to a brief only when
// its `rank`/`host` match too. Without them (one process) the GPU index alone identifies it.
struct GpuBrief {
  int index = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  std::string host;  // empty: any (one process)
  int rank = -1;     // -1: any (one process)
};
nlohmann::json fp16_vs_fp32(const nlohmann::json& records, const std::vector<GpuBrief>& gpus);

// Whether a single-GPU record ran on this GPU (index, and rank and host where the brief has them).
bool record_on(const nlohmann::json& record, const GpuBrief& g);

// The GPUs a result's records ran on: one per rank from `environment.ranks` (compute capability
// from the rank's node environment, by PCI bus id, else index) under MPI; else `local`, the GPUs
// of this process.
std::vector<GpuBrief> gpu_briefs(const nlohmann::json& environment, const std::vector<GpuBrief>& local);

// "gpu0", or "rank 1 (hostB) gpu0" for a brief or an analysis entry with rank and host.
std::string where_label(const nlohmann::json& entry);

// One line per GPU for the console.
std::vector<std::string> fp16_verdict_lines(const nlohmann::json& analysis);

}  // namespace nb

namespace nb {
// Per GPU (host, rank and index: records of GPU 0 on two hosts are two series), precision and
// layout, from the conv family's network records: the smallest batch
// whose training throughput reaches `plateau_share` (95%) of the best measured and whose
// measured memory stays at most `memory_fraction` of the device.
nlohmann::json batch_recommendation(const nlohmann::json& records, double memory_fraction,
                                    double plateau_share = 0.95);
std::vector<std::string> batch_recommendation_lines(const nlohmann::json& analysis);
}  // namespace nb
