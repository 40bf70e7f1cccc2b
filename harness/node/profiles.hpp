// Device profiles: expected peak rates per GPU model, from a data file (harness/profiles/
// devices.json, embedded in the binary at build time, overridable with --profiles FILE).
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace nb {

struct Peak {
  double value = 0;
  std::string source;  // "profile:NAME" or "derived:..."
};

struct DeviceProfile {
  std::string name;
  std::vector<std::string> match;
  std::string cc;
  std::map<std::string, double> numbers;  // every numeric field: fp32_tflops, mem_gbps, ...
  std::string source;
};

class ProfileDb {
 public:
  static ProfileDb builtin();
  static ProfileDb from_json(const nlohmann::json& j);  // throws nb::Error on a malformed file
  static ProfileDb from_file(const std::string& path);

  // The profile whose match string is found in `device_name` at a word boundary; the longest
  // matching string wins, so "NVIDIA A100-SXM4-80GB" is not taken for "NVIDIA A10".
  const DeviceProfile* find(const std::string& device_name) const;
  const std::vector<DeviceProfile>& profiles() const { return profiles_; }

 private:
  std::vector<DeviceProfile> profiles_;
};

// FP32 lanes (FMA units) per SM for a compute capability; nullopt where not known.
std::optional<int> fp32_lanes_per_sm(int cc_major, int cc_minor);

// Operations per clock per SM of an arithmetic unit (FMA and multiply-add count 2, DP4A 8, a
// tensor-core multiply-add 2), from the architecture's published rates; nullopt where unknown.
// Units: fp32_ffma fp16_hfma2 bf16_fma2 fp64_dfma int8_dp4a int32_imad mma_fp16 mma_bf16
// mma_tf32 mma_int8.
std::optional<double> unit_ops_per_clock_per_sm(const std::string& unit, int cc_major, int cc_minor);

// PCIe bandwidth of one direction in GB/s for a generation and width (after line encoding).
std::optional<double> pcie_gbps(unsigned gen, unsigned width);

struct PeakInputs {
  std::string name;
  int cc_major = 0, cc_minor = 0, sm_count = 0;
  std::optional<double> max_sm_clock_mhz;  // NVML max, or the CUDA attribute
  std::optional<double> mem_clock_mhz;     // CUDA attribute (peak memory clock)
  std::optional<int> mem_bus_width_bits;
};

// The expected peaks of a GPU: the profile's figures where a profile matches, else what can
// soundly be derived (FP32 from SMs x lanes x 2 x clock; memory bandwidth from clock and bus
// width, double data rate). Keys as in the profile file.
std::map<std::string, Peak> expected_peaks(const ProfileDb& db, const PeakInputs& in,
                                           const DeviceProfile** matched = nullptr);

}  // namespace nb
