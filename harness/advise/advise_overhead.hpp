// What advise's efficiency is, and the step overhead a measured data-parallel step (train_dp)
// adds to it (docs/ADVISE.md, "Efficiency: a bound"). Pure: tests/test_advise.cpp.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "advise/advise_inputs.hpp"

namespace nb::advise {

// The costs the model leaves out, named beside every efficiency figure.
const std::vector<std::string>& left_out_costs();

// The document's "efficiency_definition": the efficiency is an upper bound set by communication
// (the exposed gradient all-reduce) and input (the host copy), with the costs it leaves out.
nlohmann::json efficiency_definition();

// A train_dp record's step overhead beyond the model: the step's time lost against N x its own
// one-GPU step, step x (1 - scaling_efficiency_ratio), less its measured exposed all-reduce (which
// the model predicts itself). What is left is what the model leaves out -- framework and
// optimizer work, stragglers, communication kernels slowing compute -- measured. Clamped at 0
// (noise can make it negative); nullopt when the record lacks one of the three figures.
std::optional<double> measured_overhead_s(const MeasuredDp& d);

// Adds the measured overhead to every row of more than one GPU whose precision, layout, per-GPU
// batch and accumulation a train_dp record has (the record of the same GPU count, else the
// nearest count measured): "measured_overhead" {id, gpus, overhead_ms, how}, "step_with_overhead_ms",
// "images_per_s_with_overhead", "efficiency_with_overhead". Returns how many rows got one.
int apply_measured_overhead(nlohmann::json& rows, const std::vector<MeasuredDp>& dp);

}  // namespace nb::advise
