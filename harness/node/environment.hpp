// What machine a run happened on: host, software versions and every visible GPU.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "node/nvml.hpp"
#include "node/profiles.hpp"

namespace nb {

struct GpuInfo {
  int index = 0;  // CUDA device index in this process
  std::string name, pci_bus_id;
  int cc_major = 0, cc_minor = 0, sm_count = 0;
  size_t memory_bytes = 0, l2_bytes = 0;
  std::optional<int> nvml_index;  // NVML handle index, when NVML knows this GPU
  std::string profile;            // matched device profile name, empty when none
  std::map<std::string, Peak> peaks;
  PcieLink pcie;

  int cc() const { return cc_major * 10 + cc_minor; }
  std::string cc_string() const { return std::to_string(cc_major) + "." + std::to_string(cc_minor); }
  const Peak* peak(const std::string& key) const {
    auto it = peaks.find(key);
    return it == peaks.end() ? nullptr : &it->second;
  }
};

struct Environment {
  nlohmann::json json;          // the `environment` object of the result schema
  std::vector<GpuInfo> gpus;    // every GPU this process can see
  std::string cuda_error;       // why no GPU is usable (empty when some are)
};

// Reads everything; never throws for a missing GPU, driver or library: those are recorded.
Environment capture_environment(const Nvml& nvml, const ProfileDb& profiles);

// Version strings of the libraries found at run time, or nullopt.
std::optional<std::string> cublas_version_string();
std::optional<std::string> cudnn_version_string();
std::optional<std::string> nccl_version_string();
// "13.0" from 13000.
std::string cuda_version_string(int v);

// A paragraph for a user whose run found no GPU: what the driver, the device nodes and
// CUDA_VISIBLE_DEVICES look like, and what to check.
std::string no_gpu_diagnosis(const std::string& cuda_error);

// The first line of a file (/proc, /sys), or "" when it cannot be read.
std::string read_first_line(const std::string& path);

}  // namespace nb
