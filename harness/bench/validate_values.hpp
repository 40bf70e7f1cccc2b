// What the families' validation checks are made of and read from a result document: the record of one GPU, the
// percent of peak a record carries, the PCIe rate of a GPU's maximum link, and the link class
// (nvlink, pcie, sys) a peer or collective threshold is chosen by.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/benchmark.hpp"

namespace nb {

// A check of each GPU (its `runs_case`, `judges` and `value` still to set), reported as "family not
// built" from `required_level` (0: never).
ValidationCheck gpu_check(std::string id, std::string what, std::string fix, int required_level = 0);

// The environment's entry of the GPU with this CUDA index, or null.
const nlohmann::json* environment_gpu(const nlohmann::json& env, int index);
// The record with the largest params.bytes among those `pred` accepts (records without bytes
// count as 0; the first of equals), or null.
const nlohmann::json* largest_record(const nlohmann::json& records, const std::function<bool(const nlohmann::json&)>& pred);
// The record's percent_of_peak.percent, with `how` saying what of which peak; nullopt (and `how`
// saying so) when no peak is known for the GPU.
std::optional<double> percent_of_peak_value(const nlohmann::json& r, std::string& how);
// The percent of the peak at the SM clock the case ran at (percent_of_peak.percent_at_clock), with
// `how` giving both figures; where the clock is not recorded, percent_of_peak_value (`how` says
// it is judged against the peak's own clock).
std::optional<double> percent_at_clock_value(const nlohmann::json& r, std::string& how);
// The SM clock the case ran at (clocks.sm_mhz_during) in percent of the GPU's base clock (its
// device profile's `base_mhz`, by the environment's profile name), with `how` giving the clock,
// the base and what the GPU reported after the case (throttle reasons, temperature, power);
// nullopt (and `how` saying why) when either is unknown.
std::optional<double> clock_vs_base_value(const nlohmann::json& r, const nlohmann::json& env, int gpu, std::string& how);
// The per-direction PCIe rate of a GPU's maximum link (so that a link trained down shows), from
// the environment, else from the record's details.link.
std::optional<double> max_link_gbps(const nlohmann::json& env, int index, const nlohmann::json* record = nullptr);
// The slowest of the GPUs' maximum PCIe links (max_link_gbps); with `every`, nullopt unless every
// GPU's is known, else from those known (nullopt when none is).
std::optional<double> slowest_link_gbps(const nlohmann::json& env, const std::vector<int>& gpus, bool every);
// A rate judged by a link-class threshold: in percent of `link` (GB/s; nullopt: not judged) when
// the threshold's unit is percent_of_link, else in GB/s. `how`: `prefix`, the rate, what the link
// is (`link_note`) and its class.
std::optional<double> rate_against_link(double gbps, const std::string& unit, std::optional<double> link,
                                        const std::string& prefix, const std::string& link_note,
                                        const std::string& link_class, std::string& how);
// The link class a peer or collective threshold is chosen by: "nvlink", "sys" (across CPU
// sockets) or "pcie". From the record's params.link, else from the first registered link
// classifier that can say (bench/contributions.hpp: the family that measured the topology reads
// its analysis of the document); "pcie" when nothing says.
std::string link_class(const nlohmann::json& doc, const nlohmann::json& rec, const std::vector<int>& members);

}  // namespace nb
