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

// Whether the record ran on exactly this one GPU.
bool record_on_gpu(const nlohmann::json& r, int gpu);
// The environment's entry of the GPU with this CUDA index, or null.
const nlohmann::json* environment_gpu(const nlohmann::json& env, int index);
// The record with the largest params.bytes among those `pred` accepts (records without bytes
// count as 0; the first of equals), or null.
const nlohmann::json* largest_record(const nlohmann::json& records, const std::function<bool(const nlohmann::json&)>& pred);
// The record's percent_of_peak.percent, with `how` saying what of which peak; nullopt (and `how`
// saying so) when no peak is known for the GPU.
std::optional<double> percent_of_peak_value(const nlohmann::json& r, std::string& how);
// The per-direction PCIe rate of a GPU's maximum link (so that a link trained down shows), from
// the environment, else from the record's details.link.
std::optional<double> max_link_gbps(const nlohmann::json& env, int index, const nlohmann::json* record = nullptr);
// The link class a peer or collective threshold is chosen by: "nvlink", "sys" (across CPU
// sockets) or "pcie". From the record's params.link, else from the p2p family's
// analysis.p2p.link_type matrix (NVLink, PIX, PXB, PHB, NODE, SYS) over the GPUs involved: NVLink
// when every pair is, SYS when any pair is; "pcie" when nothing says.
std::string link_class(const nlohmann::json& doc, const nlohmann::json& rec, const std::vector<int>& members);

}  // namespace nb
