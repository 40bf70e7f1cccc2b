#include "node/profiles.hpp"
#include "base/json_file.hpp"

#include <cctype>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/error.hpp"

namespace nb {

extern const char* const kBuiltinProfilesJson;  // generated from harness/profiles/devices.json

ProfileDb ProfileDb::from_json(const nlohmann::json& j) {
  ProfileDb db;
  if (!j.is_object() || !j.contains("profiles") || !j["profiles"].is_array())
    throw Error("device profile file: expected an object with a 'profiles' array");
  for (const auto& p : j["profiles"]) {
    if (!p.is_object() || !p.contains("name") || !p["name"].is_string() || !p.contains("match") ||
        !p["match"].is_array())
      throw Error("device profile file: every profile needs 'name' and a 'match' array");
    DeviceProfile d;
    d.name = p["name"].get<std::string>();
    for (const auto& m : p["match"]) {
      if (!m.is_string()) throw Error("device profile '" + d.name + "': 'match' holds a non-string");
      d.match.push_back(m.get<std::string>());
    }
    auto string_field = [&](const char* key) -> std::string {
      if (!p.contains(key)) return "";
      if (!p[key].is_string())
        throw Error("device profile '" + d.name + "': '" + key + "' must be a string, not " + p[key].type_name() +
                    " (" + p[key].dump() + ")");
      return p[key].get<std::string>();
    };
    d.cc = string_field("cc");
    d.source = string_field("source");
    if (!d.cc.empty()) {
      const size_t dot = d.cc.find('.');
      if (dot == std::string::npos || dot == 0 || dot + 1 == d.cc.size() ||
          d.cc.find_first_not_of("0123456789.") != std::string::npos || d.cc.find('.', dot + 1) != std::string::npos)
        throw Error("device profile '" + d.name + "': 'cc' must look like \"6.1\", not \"" + d.cc + "\"");
    }
    for (auto it = p.begin(); it != p.end(); ++it) {
      const std::string& k = it.key();
      const bool numeric_key = k.ends_with("_tflops") || k.ends_with("_tops") || k.ends_with("_gbps") ||
                               k.ends_with("_mhz") || k == "sm_count" || k == "pcie_gen" || k == "pcie_width";
      if (numeric_key && !it.value().is_number())
        throw Error("device profile '" + d.name + "': '" + k + "' must be a number, not " + it.value().type_name() +
                    " (" + it.value().dump() + ")");
      if (it.value().is_number()) {
        const double v = it.value().get<double>();
        if (!(v > 0)) throw Error("device profile '" + d.name + "': '" + it.key() + "' must be > 0");
        d.numbers[it.key()] = v;
      }
    }
    db.profiles_.push_back(std::move(d));
  }
  return db;
}

ProfileDb ProfileDb::builtin() { return from_json(nlohmann::json::parse(kBuiltinProfilesJson)); }

ProfileDb ProfileDb::from_file(const std::string& path) {
  std::string text;
  try {
    text = read_input_file(path);  // a device, FIFO or huge file: refused, never waited on
  } catch (const Error& e) {
    throw Error(std::string("device profile file: ") + e.what());
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error("device profile file '" + path + "' is not valid JSON: " + e.what());
  }
  try {
    return from_json(j);
  } catch (const Error& e) {
    throw Error("device profile file '" + path + "': " + e.what());
  }
}

const DeviceProfile* ProfileDb::find(const std::string& device_name) const {
  // The device's exact name first: "NVIDIA H200" names the SXM part only, never "NVIDIA H200 NVL".
  for (const auto& p : profiles_)
    for (const auto& m : p.match)
      if (m == device_name) return &p;
  const DeviceProfile* best = nullptr;
  size_t best_len = 0;
  for (const auto& p : profiles_) {
    for (const auto& m : p.match) {
      const size_t pos = device_name.find(m);
      if (pos == std::string::npos) continue;
      const size_t end = pos + m.size();
      bool boundary = end == device_name.size() || !std::isalnum(static_cast<unsigned char>(device_name[end]));
      // A form-factor word after the name is another product (other clocks, power, peaks).
      for (const char* other : {" NVL", " PCIe", " PCIE", " SXM"})
        if (device_name.compare(end, std::strlen(other), other) == 0) boundary = false;
      if (boundary && m.size() > best_len) {
        best = &p;
        best_len = m.size();
      }
    }
  }
  return best;
}

std::string peak_key_for(const std::string& data, const std::string& compute, int cc) {
  const bool tensor = cc >= 70;
  if (data == "fp64") return cc == 80 || cc == 90 || cc >= 100 ? "fp64_tensor_tflops" : "fp64_tflops";
  if (data == "fp32") return compute == "tf32" ? "tf32_tflops" : "fp32_tflops";
  if (data == "tf32") return "tf32_tflops";
  if (data == "fp16") {
    if (tensor) return "fp16_tensor_tflops";
    return compute == "fp16" ? "fp16_tflops" : "fp32_tflops";
  }
  if (data == "bf16") return cc >= 80 ? "bf16_tensor_tflops" : "";
  if (data == "int8") return cc >= 72 ? "int8_tops" : "int8_dp4a_tops";
  if (data == "fp8") return "fp8_tflops";
  return "";
}

std::optional<int> fp32_lanes_per_sm(int major, int minor) {
  switch (major) {
    case 6: return minor == 0 ? 64 : 128;   // GP100: 64; GP10x: 128
    case 7: return 64;                      // Volta, Turing
    case 8: return minor == 0 ? 64 : 128;   // GA100: 64; GA10x, AD10x: 128
    case 9: return 128;                     // Hopper
    case 10:
    case 12: return 128;                    // Blackwell
    default: return std::nullopt;
  }
}

std::optional<double> unit_ops_per_clock_per_sm(const std::string& unit, int major, int minor) {
  const int cc = major * 10 + minor;
  // Per compute capability, from the vendors' whitepaper rates (ops/clock/SM = TFLOPS / (SMs x
  // boost clock)): P100 6.0, P40 6.1, V100 7.0, T4 7.5, A100 8.0, A10 8.6, L4 8.9, H100 9.0.
  struct Row {
    const char* unit;
    std::initializer_list<std::pair<int, double>> rates;
  };
  static const Row rows[] = {
      // FP16: 6.1 at 1/64 of FP32; 6.0 and 6.2 at twice FP32 (CUDA C++ Programming Guide's throughput table).
      {"fp16_hfma2", {{60, 256}, {61, 4}, {62, 512}, {70, 256}, {72, 256}, {75, 256}, {80, 512}, {86, 256}, {87, 256}, {89, 256}, {90, 512}}},
      {"bf16_fma2", {{80, 256}, {90, 512}}},
      {"fp64_dfma", {{60, 64}, {61, 8}, {62, 8}, {70, 64}, {72, 8}, {75, 4}, {80, 64}, {86, 4}, {87, 4}, {89, 4}, {90, 128}}},
      {"int8_dp4a", {{61, 1024}, {62, 1024}, {70, 512}, {72, 512}, {75, 512}, {80, 512}, {86, 512}, {87, 512}, {89, 512}, {90, 512}}},
      // Pascal has no one-instruction 32-bit multiply-add (the compiler emits three XMAD), so
      // no single rate is claimed for 6.x.
      {"int32_imad", {{70, 128}, {72, 128}, {75, 128}, {80, 128}, {86, 128}, {87, 128}, {89, 128}, {90, 128}}},
      {"mma_fp16", {{70, 1024}, {72, 1024}, {75, 1024}, {80, 2048}, {86, 1024}, {87, 1024}, {89, 1024}, {90, 4096}}},
      {"mma_bf16", {{80, 2048}, {86, 1024}, {87, 1024}, {89, 1024}, {90, 4096}}},
      {"mma_tf32", {{80, 1024}, {86, 512}, {87, 512}, {89, 512}, {90, 2048}}},
      {"mma_int8", {{72, 2048}, {75, 2048}, {80, 4096}, {86, 2048}, {87, 2048}, {89, 2048}, {90, 8192}}},
      {"mma_fp8", {{89, 2048}, {90, 8192}}},  // L4/L40S 8.9, H100 9.0: FP8 at the INT8 rate
  };
  if (unit == "fp32_ffma") {
    if (auto lanes = fp32_lanes_per_sm(major, minor)) return 2.0 * *lanes;
    return std::nullopt;
  }
  for (const auto& r : rows) {
    if (unit != r.unit) continue;
    for (const auto& [c, v] : r.rates)
      if (c == cc) return v;
  }
  return std::nullopt;
}

std::optional<double> pcie_gbps(unsigned gen, unsigned width) {
  // Per lane, one direction, after encoding: 8b/10b for Gen1-2, 128b/130b for Gen3-5.
  static const double per_lane[] = {0, 0.25, 0.5, 0.984615, 1.969231, 3.938462, 7.876923};
  if (gen < 1 || gen > 6 || width == 0) return std::nullopt;
  return per_lane[gen] * width;
}

std::map<std::string, Peak> expected_peaks(const ProfileDb& db, const PeakInputs& in,
                                           const DeviceProfile** matched, std::string* note) {
  std::map<std::string, Peak> out;
  const DeviceProfile* p = db.find(in.name);
  if (p && in.sm_count > 0) {
    auto it = p->numbers.find("sm_count");
    if (it != p->numbers.end() && int(it->second) != in.sm_count) {
      if (note) {
        std::ostringstream s;
        s << "profile '" << p->name << "' not used: it has " << int(it->second) << " SMs, the device "
          << in.sm_count << "; peaks derived instead";
        *note = s.str();
      }
      p = nullptr;
    }
  }
  if (matched) *matched = p;
  if (p) {
    std::optional<double> clock;
    if (auto it = p->numbers.find("peak_clock_mhz"); it != p->numbers.end()) clock = it->second;
    else if (auto b = p->numbers.find("boost_mhz"); b != p->numbers.end()) clock = b->second;
    for (const auto& [k, v] : p->numbers) {
      if (k.ends_with("_tflops") || k.ends_with("_tops") || k.ends_with("_gbps"))
        out[k] = Peak{v, "profile:" + p->name, k.ends_with("_gbps") ? std::nullopt : clock};
    }
    // The DP4A rate where the profile gives none: SMs x the architecture's rate x the peak clock.
    auto sms = p->numbers.find("sm_count");
    if (!out.count("int8_dp4a_tops") && clock && sms != p->numbers.end()) {
      if (auto r = unit_ops_per_clock_per_sm("int8_dp4a", in.cc_major, in.cc_minor)) {
        std::ostringstream s;
        s << "derived:" << int(sms->second) << " SMs x " << *r << " DP4A ops/clock x " << *clock << " MHz";
        out["int8_dp4a_tops"] = Peak{sms->second * *r * *clock * 1e6 / 1e12, s.str(), clock};
      }
    }
    return out;
  }
  if (in.max_sm_clock_mhz && in.sm_count > 0) {
    if (auto lanes = fp32_lanes_per_sm(in.cc_major, in.cc_minor)) {
      const double tf = double(in.sm_count) * *lanes * 2.0 * *in.max_sm_clock_mhz * 1e6 / 1e12;
      std::ostringstream s;
      s << "derived:" << in.sm_count << " SMs x " << *lanes << " FP32 lanes x 2 x " << *in.max_sm_clock_mhz << " MHz";
      out["fp32_tflops"] = Peak{tf, s.str(), in.max_sm_clock_mhz};
    }
    if (auto r = unit_ops_per_clock_per_sm("int8_dp4a", in.cc_major, in.cc_minor)) {
      std::ostringstream s;
      s << "derived:" << in.sm_count << " SMs x " << *r << " DP4A ops/clock x " << *in.max_sm_clock_mhz << " MHz";
      out["int8_dp4a_tops"] = Peak{in.sm_count * *r * *in.max_sm_clock_mhz * 1e6 / 1e12, s.str(), in.max_sm_clock_mhz};
    }
  }
  if (in.mem_clock_mhz && in.mem_bus_width_bits && *in.mem_bus_width_bits > 0) {
    const double gbps = *in.mem_clock_mhz * 1e6 * 2.0 * (*in.mem_bus_width_bits / 8.0) / 1e9;
    std::ostringstream s;
    s << "derived:" << *in.mem_clock_mhz << " MHz x 2 (DDR) x " << *in.mem_bus_width_bits
      << " bit";
    out["mem_gbps"] = Peak{gbps, s.str()};
  }
  return out;
}

}  // namespace nb
