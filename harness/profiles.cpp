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
