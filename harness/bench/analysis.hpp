// Generic helpers of the analyses families declare (bench/benchmark.hpp: Analysis): which GPU a
// record ran on, the GPUs of a result, their labels, the best value of a metric.
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "node/environment.hpp"

namespace nb {

// A GPU of the run. Under MPI a brief also names its `host` and `rank`: GPU 0 of two hosts (or
// of two ranks with their own CUDA_VISIBLE_DEVICES) are different GPUs, and a record belongs to
// a brief only when its `rank`/`host` match too. Without them (one process) the GPU index alone
// identifies it.
struct GpuBrief {
  int index = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  std::string host;  // empty: any (one process)
  int rank = -1;     // -1: any (one process)
};

// Whether a single-GPU record ran on this GPU (index, and rank and host where the brief has them).
bool record_on(const nlohmann::json& record, const GpuBrief& g);

// The GPUs a result's records ran on: one per rank from `environment.ranks` (compute capability
// from the rank's node environment, by PCI bus id, else index) under MPI; else `local`, the GPUs
// of this process.
std::vector<GpuBrief> gpu_briefs(const nlohmann::json& environment, const std::vector<GpuBrief>& local);

// "gpu0", or "rank 1 (hostB) gpu0" for a brief or an analysis entry with rank and host.
std::string where_label(const nlohmann::json& entry);

// The largest finite value among the ok records on `g` that `pred` accepts, of the first of
// `metrics` a record has (e.g. {"tflops", "tops"}); NaN when none.
double best_metric(const nlohmann::json& records, const GpuBrief& g, const std::vector<std::string>& metrics,
                   const std::function<bool(const nlohmann::json& record)>& pred);

// Whether a record was skipped because it did not fit (reason_kind oom or smaller_oom; files
// written before reason_kind existed said so only in the reason's text).
bool skipped_for_memory(const nlohmann::json& record);

// The measured points of batch sweeps by series (a family's key: GPU, precision, layout, ...):
// each ok record's throughput and memory, and the smallest batch skipped for memory; a series
// with only skipped batches has no point but is listed. Points come sorted by batch (sorted()).
struct BatchPoint {
  int64_t batch = 0;
  double images_per_s = 0, memory_fraction = 0, memory_bytes = 0;
};
template <class Key>
struct BatchSeries {
  std::map<Key, std::vector<BatchPoint>> points;
  std::map<Key, int64_t> smallest_oom;
  void add(const Key& key, const BatchPoint& p) { points[key].push_back(p); }
  void add_out_of_memory(const Key& key, int64_t batch) {
    auto& o = smallest_oom[key];
    if (o == 0 || batch < o) o = batch;
    points[key];
  }
  std::optional<int64_t> oom(const Key& key) const {
    const auto it = smallest_oom.find(key);
    return it == smallest_oom.end() ? std::nullopt : std::optional<int64_t>(it->second);
  }
  static std::vector<BatchPoint> sorted(std::vector<BatchPoint> pts) {
    std::sort(pts.begin(), pts.end(), [](const BatchPoint& a, const BatchPoint& b) { return a.batch < b.batch; });
    return pts;
  }
};

}  // namespace nb
