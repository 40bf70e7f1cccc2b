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
  std::string source;                 // "profile:NAME" or "derived:..."
  std::optional<double> clock_mhz;    // the SM clock the figure assumes (profile's peak_clock_mhz)
};

// The peak key a throughput is judged against, from the data type, the compute (accumulation)
// type and the compute capability (major*10+minor). Data and compute: "fp64", "fp32", "tf32",
// "fp16", "bf16", "int8", "fp8"; compute "fp32"/"fp16"/"fp64"/"int32"/"tf32". Below 7.0 (no
// tensor cores) FP16 with FP32 compute runs on the FP32 units: `fp32_tflops`; `fp16_tflops`
// only for FP16 accumulation. INT8 below 7.2 runs as DP4A: `int8_dp4a_tops`. Empty when unknown.
std::string peak_key_for(const std::string& data, const std::string& compute, int cc);

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

  // The profile with a match string equal to `device_name`; else the one whose match string is
  // found in it at a word boundary, the longest winning, so "NVIDIA A100-SXM4-80GB" is not taken
  // for "NVIDIA A10". A form-factor word after a prefix (" NVL", " PCIe", " SXM") ends the
  // match: "NVIDIA H200" (SXM) is never taken for "NVIDIA H200 NVL".
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
// mma_tf32 mma_int8 mma_fp8.
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
// width, double data rate; the DP4A rate from the architecture's per-clock rate). Keys as in the
// profile file. A profile whose `sm_count` disagrees with the device's is not used (a cut-down or
// different part): `note` then says so and the peaks are derived. Each peak carries the SM clock
// it assumes (`peak_clock_mhz`, else `boost_mhz`, of the profile; the maximum clock when derived).
std::map<std::string, Peak> expected_peaks(const ProfileDb& db, const PeakInputs& in,
                                           const DeviceProfile** matched = nullptr, std::string* note = nullptr);

}  // namespace nb
