// Can this host feed its GPUs? From the input family's records (the decode rate against the
// worker count, per output layout and type) and a training step's rate: the cores needed to
// feed 1, 2, 4, 8 GPUs against the CPUs the host has, and whether GPU decode closes the gap.
// Pure over JSON, unit-tested; run after a run as the analysis `input_pipeline` and by
// `nodebench advise` for its input line (input_analysis.cpp registers both).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace nb::input {

// A measured decode curve: images/s of one host against the number of pinned workers.
struct CurvePoint {
  int cores = 0;
  double images_per_s = 0;
};
struct Curve {
  std::string series;  // "<layout>/<dtype>", e.g. "nchw/fp32"
  std::string host;    // the record's host (under MPI), else ""
  int host_cpus = 0;   // the CPUs the process could run on there
  std::vector<CurvePoint> points;  // by cores, one per count (the fastest record)
};

// Images/s on one GPU's share of the work: nvJPEG decode plus our crop/resize/normalise kernel.
struct GpuDecode {
  std::string id, series;
  double images_per_s = 0;     // one GPU, one host thread feeding it
  double gpu_time_per_image_ms = 0; // the GPU's time per image (an upper bound: see docs/SCHEMA.md)
};

// Scaling efficiency at n workers: rate(n) / (n x the per-core rate); the per-core rate is the
// one-worker point's (or the smallest count's rate per worker when no one-worker point).
// `linear_to`: the largest measured count up to which every point keeps >= `linear_share`.
struct Scaling {
  double per_core_images_per_s = 0;
  int linear_to = 0;
  int stops_at = 0;  // the first count below `linear_share` (0: none measured)
  std::vector<double> efficiency;  // per point
};
Scaling scaling_of(const Curve& c, double linear_share = 0.9);

// Workers needed for `images_per_s`: on the measured curve, linear between its points; beyond
// its largest point, that point's rate per worker for every further worker (`extrapolated`).
double workers_for(const Curve& c, double images_per_s, bool& extrapolated);

// One GPU count's verdict for a step of `per_gpu_images_per_s` per GPU: decode workers (whole
// cores) plus one core per GPU for the process that drives it, against the host's CPUs.
nlohmann::json feed_row(const Curve& c, const GpuDecode* gpu, double per_gpu_images_per_s, int gpus);

// The GPU counts judged: 1, 2, 4, 8.
const std::vector<int>& judged_gpu_counts();

// What the input family's records hold: curves (placement "spread" records) and GPU decode.
struct DecodeData {
  std::vector<Curve> curves;
  std::vector<GpuDecode> gpu;
  nlohmann::json numa = nlohmann::json::array();  // GPU's node against the other, per series
};
DecodeData decode_data(const nlohmann::json& records);

// The curve for a training step: the layout and type it is fed (fp16 steps FP16 input, others
// FP32), else any curve of the same layout, else the first; null when none. `note` says which.
const Curve* curve_for(const DecodeData& d, const std::string& precision, const std::string& layout, std::string& note);

// analysis.input_pipeline over one run's records: the curves with their scaling, the NUMA
// comparison, the GPU decode, and per training series (train records: precision, layout, the
// fastest batch) the rows for 1, 2, 4, 8 GPUs; `status` judged at the node's GPU count
// (`node_gpus`, rounded down to 1, 2, 4 or 8; 1 without a GPU).
nlohmann::json input_pipeline_analysis(const nlohmann::json& records, int node_gpus);
std::vector<std::string> input_pipeline_lines(const nlohmann::json& analysis);

// For advise: the verdict for a step at `images_per_s` over `gpus` GPUs from the records of
// several files (`records`: the input family's), {"status", "text", ...}; null when no curve.
nlohmann::json judge_step(const nlohmann::json& records, const std::string& precision, const std::string& layout,
                          double images_per_s, int gpus);

}  // namespace nb::input
