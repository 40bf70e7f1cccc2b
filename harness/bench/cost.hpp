// What a case costs in wall time, for the run's forecast, its estimate of time left and --budget
// (run/estimate.hpp). A family's cost function (Case::cost) states the structure of its case --
// how many operations of what size its setup, search, verification and sampling run -- with the
// time of one operation taken from the GPU's expected peaks; the seconds this gives ("model
// seconds") are turned into predicted seconds by a fit per kind (fixed seconds plus a scale) made
// from a committed run (harness/profiles/costs.json, scripts/dev/costs/fit_costs.py), and the run
// calibrates each kind again by the pace of its cases done so far.
#pragma once
#include <cstdint>
#include <map>
#include <vector>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "bench/measure.hpp"
#include "node/environment.hpp"

namespace nb {

struct CaseCost;

struct Case;
struct Availability;

// The one rule of which step is skipped before any work (a step: a case on the GPUs of one run of
// it): a multi-GPU case given fewer GPUs than its min_gpus, or a case whose `available` says no on
// one of the GPUs it is judged on (`on`: the step's GPUs; a host-only step is judged on the run's
// first GPU; empty: none known, only the count is judged). run_plan records such a step skipped
// with this reason and kind; the cost model costs it nothing (run/plan.hpp, case_cost).
Availability case_runs(const Case& c, const std::vector<const GpuInfo*>& on, int gpu_count);

// Seconds of `work` at the GPU's peak `key` (work in the peak's unit: TFLOP for a tflops key, GB
// for gbps), or at `fallback` when the GPU has no such peak; 0 when neither is known.
double op_seconds(const GpuInfo& g, const std::string& key, double work, const std::string& fallback = "");

// The GPU's host link in GB/s per direction from its PCIe generation and width (the maximum the
// link can train at), or PCIe 3 x16's when unknown. Also the rate assumed between GPUs where the
// cost of a multi-GPU case needs one: NVLink is faster, so the estimate errs long.
double link_gbps(const GpuInfo& g);

// The wall time of one measure() of an operation of `op_s` seconds under `cfg`: the warm-up, then
// samples of at least cfg.min_sample_s each (launches batched) until cfg.min_samples (the usual
// end, at the target CV), and never past cfg.max_time_s once one sample is taken. Each sample also
// pays the harness's fixed cost (the blocking kernel, events, a clock reading).
double sampling_s(const MeasureConfig& cfg, double op_s);
// The same for an operation whose samples are expected to vary by more than the target CV: it
// samples until cfg.max_samples or cfg.max_time_s, whichever comes first.
double sampling_to_cap_s(const MeasureConfig& cfg, double op_s);
// The same for measurements of one operation per sample (latencies, copies timed one by one).
double one_op_sampling_s(const MeasureConfig& cfg, double op_s, size_t min_samples = 50);

// The fit of a kind: predicted = fixed_s + scale x model setup seconds + sample_scale x model
// sampling seconds (CaseCost's two parts; sample_scale is scale where costs.json gives none).
struct CostFit {
  double fixed_s = 0;
  double scale = 1;
  double sample_scale = 1;
};
// The fit of `kind` from the built-in harness/profiles/costs.json, else that of its family (the
// part of the name before '/': "train" for "train/fp32"); nullopt when neither is there.
std::optional<CostFit> cost_fit(const std::string& kind);
// Parses a costs.json document (tests; the built-in one is read once). Throws nb::Error on a bad one.
std::map<std::string, CostFit> parse_cost_fits(const nlohmann::json& doc);
// Where an earlier run of the sweep `sweep` (CaseCost::sweep, e.g. "train/fp16/nhwc") stopped:
// costs.json's "sweeps", else its family's (the part before the first '/'); nullopt: unknown.
std::optional<int64_t> sweep_last_batch(const std::string& sweep);
// Where each earlier run of the sweep stopped (costs.json's "last_batches", one per run fitted,
// e.g. FP16 NHWC on an H200 at 1024 in some runs and 2048 in others, near the 3% line); empty
// when not given (then last_batch alone).
std::vector<int64_t> sweep_last_batches(const std::string& sweep);
// Parses the "sweeps" of a costs.json document (tests).
std::map<std::string, int64_t> parse_sweep_stops(const nlohmann::json& doc);
std::map<std::string, std::vector<int64_t>> parse_sweep_histories(const nlohmann::json& doc);
// Replaces the built-in costs document by `doc` for the rest of the process (a developer tool
// replaying a run with another fit; not thread-safe). Throws nb::Error on a bad one.
void use_costs(const nlohmann::json& doc);
// `k` (model seconds) made predicted seconds by its kind's fit: the fixed seconds added to the
// setup, the setup scaled by the fit's scale and the sampling by its sample_scale.
CaseCost apply_fit(CaseCost k);
// The same with a given fit.
CaseCost apply_fit(CaseCost k, const CostFit& f);

}  // namespace nb
