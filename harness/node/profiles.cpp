#include "profiles.hpp"

#include <cctype>
#include <fstream>
#include <sstream>

#include "error.hpp"

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
    d.cc = p.value("cc", "");
    d.source = p.value("source", "");
    for (auto it = p.begin(); it != p.end(); ++it) {
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
  std::ifstream f(path);
  if (!f) throw Error("cannot open device profile file '" + path + "'");
  try {
    return from_json(nlohmann::json::parse(f));
  } catch (const nlohmann::json::exception& e) {
    throw Error("device profile file '" + path + "' is not valid JSON: " + e.what());
  }
}

const DeviceProfile* ProfileDb::find(const std::string& device_name) const {
  const DeviceProfile* best = nullptr;
  size_t best_len = 0;
  for (const auto& p : profiles_) {
    for (const auto& m : p.match) {
      const size_t pos = device_name.find(m);
      if (pos == std::string::npos) continue;
      const size_t end = pos + m.size();
      const bool boundary = end == device_name.size() ||
                            !std::isalnum(static_cast<unsigned char>(device_name[end]));
      if (boundary && m.size() > best_len) {
        best = &p;
        best_len = m.size();
      }
    }
  }
  return best;
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
      {"fp16_hfma2", {{60, 256}, {61, 4}, {62, 4}, {70, 256}, {72, 256}, {75, 256}, {80, 512}, {86, 256}, {87, 256}, {89, 256}, {90, 512}}},
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
                                           const DeviceProfile** matched) {
  std::map<std::string, Peak> out;
  const DeviceProfile* p = db.find(in.name);
  if (matched) *matched = p;
  if (p) {
    for (const auto& [k, v] : p->numbers) {
      if (k.ends_with("_tflops") || k.ends_with("_tops") || k.ends_with("_gbps"))
        out[k] = Peak{v, "profile:" + p->name};
    }
    return out;
  }
  if (auto lanes = fp32_lanes_per_sm(in.cc_major, in.cc_minor);
      lanes && in.max_sm_clock_mhz && in.sm_count > 0) {
    const double tf = double(in.sm_count) * *lanes * 2.0 * *in.max_sm_clock_mhz * 1e6 / 1e12;
    std::ostringstream s;
    s << "derived:" << in.sm_count << " SMs x " << *lanes << " FP32 lanes x 2 x "
      << *in.max_sm_clock_mhz << " MHz";
    out["fp32_tflops"] = Peak{tf, s.str()};
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
