#include "doctor.hpp"
#include "text.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <cuda_runtime_api.h>

#include "error.hpp"
#include "profiles.hpp"

#include "build_info.hpp"

namespace nb {

extern const char* const kBuiltinCompatJson;      // generated from harness/profiles/compat.json
extern const char* const kBuiltinFrameworksJson;  // generated from harness/profiles/frameworks.json

using nlohmann::json;
namespace fs = std::filesystem;

// ---- Small helpers ---------------------------------------------------------------------------

namespace {

// j[k], or null where j has no such key (const operator[] must not be used on missing keys).
const json& at(const json& j, const char* k) {
  static const json null_json;
  return j.is_object() && j.contains(k) ? j[k] : null_json;
}

std::optional<std::string> jstr(const json& j, const char* k) {
  if (j.is_object() && j.contains(k) && j[k].is_string()) return j[k].get<std::string>();
  return std::nullopt;
}
std::optional<double> jnum(const json& j, const char* k) {
  if (j.is_object() && j.contains(k) && j[k].is_number()) return j[k].get<double>();
  return std::nullopt;
}
std::optional<bool> jbool(const json& j, const char* k) {
  if (j.is_object() && j.contains(k) && j[k].is_boolean()) return j[k].get<bool>();
  return std::nullopt;
}
template <class T>
json opt_json(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}
template <class T>
std::optional<T> json_opt(const json& j, const char* k) {
  if (j.is_object() && j.contains(k) && !j[k].is_null()) return j[k].get<T>();
  return std::nullopt;
}

// Replaces {key} by its value.
std::string subst(std::string text, const std::map<std::string, std::string>& vars) {
  for (const auto& [k, v] : vars) {
    const std::string pat = "{" + k + "}";
    for (size_t pos = text.find(pat); pos != std::string::npos; pos = text.find(pat, pos + v.size()))
      text.replace(pos, pat.size(), v);
  }
  return text;
}

std::string version_string(const std::vector<int>& v) {
  std::ostringstream os;
  for (size_t i = 0; i < v.size(); ++i) os << (i ? "." : "") << v[i];
  return os.str();
}

std::string gib(unsigned long long bytes) { return fmt(double(bytes) / double(1ull << 30), 1) + " GiB"; }

Check make_check(const std::string& id, std::optional<int> gpu, Severity sev, std::string summary,
                 std::string evidence = "", std::string fix = "") {
  Check c;
  c.id = id;
  c.gpu = gpu;
  c.severity = sev;
  c.summary = std::move(summary);
  c.evidence = std::move(evidence);
  c.fix = std::move(fix);
  return c;
}

// One GPU of the captured environment.
struct GpuView {
  int index = 0;
  std::string name;
  std::optional<int> cc;
  const json* j = nullptr;
  std::string label() const {
    return "GPU " + std::to_string(index) + " (" + name + (cc ? ", cc " + cc_string(*cc) : std::string()) + ")";
  }
};

std::vector<GpuView> gpus_of(const json& env) {
  std::vector<GpuView> out;
  if (!env.is_object() || !env.contains("gpus") || !env["gpus"].is_array()) return out;
  for (const auto& g : env["gpus"]) {
    GpuView v;
    v.index = g.value("index", int(out.size()));
    v.name = jstr(g, "name").value_or("unknown GPU");
    if (auto cc = jstr(g, "compute_capability")) v.cc = parse_cc(*cc);
    v.j = &g;
    out.push_back(v);
  }
  return out;
}

const json& software_of(const json& env) {
  static const json empty = json::object();
  return env.is_object() && env.contains("software") && env["software"].is_object() ? env["software"] : empty;
}

// The CUDA runtime this binary uses: the loaded one, else the one it was compiled with.
std::vector<int> runtime_version(const json& env) {
  const json& sw = software_of(env);
  if (auto v = jstr(sw, "cuda_runtime_version")) return parse_version(*v);
  if (auto v = jstr(sw, "cuda_runtime_compiled")) return parse_version(*v);
  return {};
}

// The oldest driver a CUDA major release needs, from compat.json.
std::optional<std::vector<int>> driver_minimum(const RuleData& data, int cuda_major) {
  const json& m = at(at(data.compat, "cuda_driver_minimum"), "by_major");
  const std::string key = std::to_string(cuda_major);
  if (m.is_object() && m.contains(key) && m[key].is_string()) return parse_version(m[key].get<std::string>());
  return std::nullopt;
}

std::string level_names(const std::vector<std::pair<int, int>>& pairs) {
  std::vector<std::string> s;
  for (const auto& [a, b] : pairs) {
    std::ostringstream os;
    os << "(" << a << "," << b << ")";
    s.push_back(os.str());
  }
  return join(s, " ");
}

std::string read_first_line(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  if (f) std::getline(f, line);
  return line;
}

json link_json(const PcieLink& l) {
  return {{"gen_current", opt_json(l.gen_current)},
          {"gen_max", opt_json(l.gen_max)},
          {"width_current", opt_json(l.width_current)},
          {"width_max", opt_json(l.width_max)}};
}
PcieLink link_from_json(const json& j) {
  PcieLink l;
  l.gen_current = json_opt<unsigned>(j, "gen_current");
  l.gen_max = json_opt<unsigned>(j, "gen_max");
  l.width_current = json_opt<unsigned>(j, "width_current");
  l.width_max = json_opt<unsigned>(j, "width_max");
  return l;
}

}  // namespace

std::string to_string(Severity s) {
  switch (s) {
    case Severity::ok: return "ok";
    case Severity::info: return "info";
    case Severity::warn: return "warn";
    case Severity::fail: return "fail";
  }
  return "?";
}

static Severity severity_from(const std::string& s) {
  if (s == "fail") return Severity::fail;
  if (s == "warn") return Severity::warn;
  if (s == "info") return Severity::info;
  return Severity::ok;
}

std::string Check::gpu_label() const {
  if (!gpu) return "all";
  return std::to_string(*gpu) + (peer ? "," + std::to_string(*peer) : std::string());
}

json Check::to_json() const {
  json j = {{"id", id},
            {"gpu", gpu ? json(*gpu) : json(nullptr)},
            {"severity", to_string(severity)},
            {"summary", summary},
            {"evidence", evidence},
            {"fix", fix.empty() ? json(nullptr) : json(fix)}};
  if (peer) j["peer"] = *peer;
  if (skipped) j["skipped"] = true;
  if (value) j["value"] = *value;
  if (threshold) j["threshold"] = *threshold;
  if (!unit.empty()) j["unit"] = unit;
  return j;
}

Check Check::from_json(const json& j) {
  Check c;
  c.id = j.value("id", "");
  c.gpu = json_opt<int>(j, "gpu");
  c.peer = json_opt<int>(j, "peer");
  c.severity = severity_from(j.value("severity", "ok"));
  c.summary = j.value("summary", "");
  c.evidence = j.value("evidence", "");
  c.fix = jstr(j, "fix").value_or("");
  c.skipped = j.value("skipped", false);
  c.value = json_opt<double>(j, "value");
  c.threshold = json_opt<double>(j, "threshold");
  c.unit = j.value("unit", "");
  return c;
}

CheckCounts count_checks(const std::vector<Check>& checks) {
  CheckCounts n;
  for (const auto& c : checks) {
    if (c.skipped) ++n.skipped;
    switch (c.severity) {
      case Severity::ok: ++n.ok; break;
      case Severity::info: ++n.info; break;
      case Severity::warn: ++n.warn; break;
      case Severity::fail: ++n.fail; break;
    }
    if (int(c.severity) > int(n.worst)) n.worst = c.severity;
  }
  return n;
}

const Check* find_check(const std::vector<Check>& checks, const std::string& id, std::optional<int> gpu) {
  for (const auto& c : checks)
    if (c.id == id && (!gpu || c.gpu == gpu)) return &c;
  return nullptr;
}

// ---- Versions and architectures --------------------------------------------------------------

std::vector<int> parse_version(const std::string& text) {
  std::vector<int> out;
  size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    long v = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      v = v * 10 + (text[i] - '0');
      if (v > 1000000000L) v = 1000000000L;
      ++i;
    }
    out.push_back(int(v));
    if (i < text.size() && text[i] == '.') ++i;
    else break;
  }
  return out;
}

int compare_versions(const std::vector<int>& a, const std::vector<int>& b) {
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const int x = i < a.size() ? a[i] : 0, y = i < b.size() ? b[i] : 0;
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

std::optional<int> parse_cc(const std::string& text) {
  const auto v = parse_version(text);
  if (v.size() != 2 || v[1] > 9) return std::nullopt;
  return v[0] * 10 + v[1];
}

std::string cc_string(int cc) { return std::to_string(cc / 10) + "." + std::to_string(cc % 10); }

std::vector<ArchEntry> parse_arch_list(const std::string& text, bool* unknown) {
  std::map<std::pair<int, bool>, ArchEntry> merged;  // by (cc, specific)
  bool unk = false;
  std::string token;
  auto add = [&](int cc, bool sass, bool ptx, bool specific) {
    ArchEntry& e = merged[{cc, specific}];
    e.cc = cc;
    e.specific = specific;
    e.sass = e.sass || sass;
    e.ptx = e.ptx || (ptx && !specific);
  };
  auto digits = [](const std::string& s, size_t& i) {
    int v = -1;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      v = (v < 0 ? 0 : v) * 10 + (s[i] - '0');
      ++i;
    }
    return v;
  };
  auto handle = [&](std::string t) {
    std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
    if (t.empty()) return;
    size_t i = 0;
    if (t.rfind("sm_", 0) == 0 || t.rfind("compute_", 0) == 0) {
      const bool ptx = t[0] == 'c';
      i = ptx ? 8 : 3;
      const int cc = digits(t, i);
      const bool specific = i < t.size() && t[i] == 'a';
      if (i < t.size() && (t[i] == 'a' || t[i] == 'f')) ++i;
      if (cc < 0 || i != t.size()) {
        unk = true;
        return;
      }
      add(cc, !ptx, ptx, specific);
      return;
    }
    if (t.find('.') != std::string::npos) {  // PyTorch: "6.0", "9.0+ptx", "9.0a"
      const int major = digits(t, i);
      if (major < 0 || i >= t.size() || t[i] != '.') {
        unk = true;
        return;
      }
      ++i;
      const int minor = digits(t, i);
      bool specific = false;
      if (i < t.size() && (t[i] == 'a' || t[i] == 'f')) specific = t[i++] == 'a';
      const bool ptx = t.compare(i, std::string::npos, "+ptx") == 0;
      if (minor < 0 || minor > 9 || (!ptx && i != t.size())) {
        unk = true;
        return;
      }
      add(major * 10 + minor, true, ptx, specific);
      return;
    }
    const int cc = digits(t, i);  // CMake: "75", "75-real", "90a-real", "120-virtual"
    if (cc < 0) {
      unk = true;
      return;
    }
    bool specific = false;
    if (i < t.size() && (t[i] == 'a' || t[i] == 'f')) specific = t[i++] == 'a';
    const std::string rest = t.substr(i);
    if (rest.empty()) add(cc, true, true, specific);
    else if (rest == "-real") add(cc, true, false, specific);
    else if (rest == "-virtual") add(cc, false, true, specific);
    else unk = true;
  };
  for (char ch : text) {
    if (ch == ';' || ch == ',' || std::isspace(static_cast<unsigned char>(ch))) {
      handle(token);
      token.clear();
    } else {
      token += ch;
    }
  }
  handle(token);
  std::vector<ArchEntry> out;
  for (const auto& [k, e] : merged) out.push_back(e);
  std::sort(out.begin(), out.end(), [](const ArchEntry& a, const ArchEntry& b) { return a.cc < b.cc; });
  if (unknown) *unknown = unk;
  return out;
}

ArchMatch match_arch(const std::vector<ArchEntry>& archs, int cc) {
  ArchMatch best;
  for (const auto& e : archs) {
    if (!e.sass) continue;
    const bool runs = e.specific ? e.cc == cc : (e.cc / 10 == cc / 10 && e.cc <= cc);
    if (runs && (best.fit != ArchFit::native || e.cc > best.via)) best = {ArchFit::native, e.cc};
  }
  if (best.fit == ArchFit::native) return best;
  for (const auto& e : archs)
    if (e.ptx && !e.specific && e.cc <= cc && (best.fit != ArchFit::jit || e.cc > best.via)) best = {ArchFit::jit, e.cc};
  return best;
}

std::string describe_archs(const std::vector<ArchEntry>& archs) {
  std::vector<std::string> sass, ptx;
  for (const auto& e : archs) {
    if (e.sass) sass.push_back("sm_" + std::to_string(e.cc) + (e.specific ? "a" : ""));
    if (e.ptx) ptx.push_back("compute_" + std::to_string(e.cc));
  }
  std::string s = sass.empty() ? "no SASS" : "SASS " + join(sass, ",");
  s += ptx.empty() ? "; no PTX" : "; PTX " + join(ptx, ",");
  return s;
}

// ---- Live facts ------------------------------------------------------------------------------

const GpuLive* LiveFacts::gpu(int index) const {
  for (const auto& g : gpus)
    if (g.index == index) return &g;
  return nullptr;
}

json LiveFacts::to_json() const {
  json gj = json::array();
  for (const auto& g : gpus) {
    json procs = nullptr;
    if (g.processes) {
      procs = json::array();
      for (size_t i = 0; i < g.processes->size(); ++i) {
        const ProcessUse& p = (*g.processes)[i];
        procs.push_back({{"pid", p.pid},
                         {"used_bytes", opt_json(p.used_bytes)},
                         {"name", i < g.process_names.size() && !g.process_names[i].empty() ? json(g.process_names[i]) : json(nullptr)}});
      }
    }
    json remap = nullptr;
    if (g.remapped)
      remap = {{"correctable", g.remapped->correctable},
               {"uncorrectable", g.remapped->uncorrectable},
               {"pending", g.remapped->pending},
               {"failure", g.remapped->failure}};
    gj.push_back({{"index", g.index},
                  {"pcie_loaded", g.pcie_loaded ? link_json(*g.pcie_loaded) : json(nullptr)},
                  {"pcie_method", g.pcie_method},
                  {"throttle_mask_loaded", opt_json(g.throttle_mask_loaded)},
                  {"ecc",
                   {{"volatile_corrected", opt_json(g.ecc.volatile_corrected)},
                    {"volatile_uncorrected", opt_json(g.ecc.volatile_uncorrected)},
                    {"aggregate_corrected", opt_json(g.ecc.aggregate_corrected)},
                    {"aggregate_uncorrected", opt_json(g.ecc.aggregate_uncorrected)}}},
                  {"retired_pages",
                   {{"single_bit", opt_json(g.retired.single_bit)},
                    {"double_bit", opt_json(g.retired.double_bit)},
                    {"pending", opt_json(g.retired.pending)}}},
                  {"remapped_rows", remap},
                  {"processes", procs},
                  {"acs_redirect", opt_json(g.acs_redirect)},
                  {"acs_evidence", g.acs_evidence}});
  }
  auto matrix = [](const auto& m) {
    json a = json::array();
    for (const auto& row : m) {
      json r = json::array();
      for (const auto& v : row) r.push_back(v ? json(*v) : json(nullptr));
      a.push_back(r);
    }
    return a;
  };
  return {{"recorded", recorded},
          {"self_pid", self_pid},
          {"nvml_device_count", opt_json(nvml_device_count)},
          {"device_nodes", opt_json(device_nodes)},
          {"cgroup_devices", opt_json(cgroup_devices)},
          {"kernel_driver", opt_json(kernel_driver)},
          {"kernel_cmdline", opt_json(kernel_cmdline)},
          {"iommu_groups", opt_json(iommu_groups)},
          {"cuda_device_order", opt_json(cuda_device_order)},
          {"nvidia_visible_devices", opt_json(nvidia_visible_devices)},
          {"p2p", matrix(p2p)},
          {"topology", matrix(topology)},
          {"gpus", gj}};
}

LiveFacts LiveFacts::from_json(const json& j) {
  LiveFacts f;
  if (!j.is_object()) return f;
  f.recorded = j.value("recorded", true);
  f.self_pid = j.value("self_pid", 0);
  f.nvml_device_count = json_opt<int>(j, "nvml_device_count");
  f.device_nodes = json_opt<int>(j, "device_nodes");
  f.cgroup_devices = json_opt<std::string>(j, "cgroup_devices");
  f.kernel_driver = json_opt<std::string>(j, "kernel_driver");
  f.kernel_cmdline = json_opt<std::string>(j, "kernel_cmdline");
  f.iommu_groups = json_opt<int>(j, "iommu_groups");
  f.cuda_device_order = json_opt<std::string>(j, "cuda_device_order");
  f.nvidia_visible_devices = json_opt<std::string>(j, "nvidia_visible_devices");
  if (j.contains("p2p") && j["p2p"].is_array())
    for (const auto& row : j["p2p"]) {
      std::vector<std::optional<bool>> r;
      for (const auto& v : row) r.push_back(v.is_boolean() ? std::optional<bool>(v.get<bool>()) : std::nullopt);
      f.p2p.push_back(r);
    }
  if (j.contains("topology") && j["topology"].is_array())
    for (const auto& row : j["topology"]) {
      std::vector<std::optional<int>> r;
      for (const auto& v : row) r.push_back(v.is_number() ? std::optional<int>(v.get<int>()) : std::nullopt);
      f.topology.push_back(r);
    }
  if (j.contains("gpus") && j["gpus"].is_array())
    for (const auto& g : j["gpus"]) {
      GpuLive l;
      l.index = g.value("index", int(f.gpus.size()));
      if (g.contains("pcie_loaded") && g["pcie_loaded"].is_object()) l.pcie_loaded = link_from_json(g["pcie_loaded"]);
      l.pcie_method = g.value("pcie_method", "");
      l.throttle_mask_loaded = json_opt<unsigned long long>(g, "throttle_mask_loaded");
      if (g.contains("ecc") && g["ecc"].is_object()) {
        const json& e = g["ecc"];
        l.ecc.volatile_corrected = json_opt<unsigned long long>(e, "volatile_corrected");
        l.ecc.volatile_uncorrected = json_opt<unsigned long long>(e, "volatile_uncorrected");
        l.ecc.aggregate_corrected = json_opt<unsigned long long>(e, "aggregate_corrected");
        l.ecc.aggregate_uncorrected = json_opt<unsigned long long>(e, "aggregate_uncorrected");
      }
      if (g.contains("retired_pages") && g["retired_pages"].is_object()) {
        const json& r = g["retired_pages"];
        l.retired.single_bit = json_opt<unsigned>(r, "single_bit");
        l.retired.double_bit = json_opt<unsigned>(r, "double_bit");
        l.retired.pending = json_opt<bool>(r, "pending");
      }
      if (g.contains("remapped_rows") && g["remapped_rows"].is_object()) {
        const json& r = g["remapped_rows"];
        l.remapped = RemappedRows{r.value("correctable", 0u), r.value("uncorrectable", 0u), r.value("pending", false),
                                  r.value("failure", false)};
      }
      if (g.contains("processes") && g["processes"].is_array()) {
        l.processes.emplace();
        for (const auto& p : g["processes"]) {
          ProcessUse u;
          u.pid = p.value("pid", 0u);
          u.used_bytes = json_opt<unsigned long long>(p, "used_bytes");
          l.processes->push_back(u);
          l.process_names.push_back(jstr(p, "name").value_or(""));
        }
      }
      l.acs_redirect = json_opt<bool>(g, "acs_redirect");
      l.acs_evidence = g.value("acs_evidence", "");
      f.gpus.push_back(std::move(l));
    }
  return f;
}

DoctorInput DoctorInput::from_json(const json& j) {
  DoctorInput in;
  in.environment = j.contains("environment") ? j["environment"] : json::object();
  in.cuda_architectures = j.value("cuda_architectures", "");
  if (j.contains("live")) in.live = LiveFacts::from_json(j["live"]);
  return in;
}

json DoctorInput::to_json() const {
  return {{"environment", environment}, {"cuda_architectures", cuda_architectures}, {"live", live.to_json()}};
}

const RuleData& RuleData::builtin() {
  static const RuleData d = [] {
    RuleData r;
    r.compat = json::parse(kBuiltinCompatJson);
    r.frameworks = json::parse(kBuiltinFrameworksJson);
    return r;
  }();
  return d;
}

std::string topology_name(int level) {
  switch (level) {
    case 0: return "same board";
    case 10: return "PIX (one PCIe switch)";
    case 20: return "PXB (several PCIe switches)";
    case 30: return "PHB (through a host bridge)";
    case 40: return "NODE (host bridges of one NUMA node)";
    case 50: return "SYS (across CPU sockets)";
    default: return "level " + std::to_string(level);
  }
}

std::optional<unsigned> acs_control_from_config(const std::vector<unsigned char>& c) {
  auto le32 = [&](size_t o) {
    return unsigned(c[o]) | unsigned(c[o + 1]) << 8 | unsigned(c[o + 2]) << 16 | unsigned(c[o + 3]) << 24;
  };
  size_t off = 0x100;
  for (int guard = 0; guard < 128 && off + 8 <= c.size(); ++guard) {
    const unsigned hdr = le32(off);
    if (hdr == 0 || hdr == 0xffffffffu) return std::nullopt;
    if ((hdr & 0xffffu) == 0x000du) return unsigned(c[off + 6]) | unsigned(c[off + 7]) << 8;  // ACS Control
    const size_t next = (hdr >> 20) & 0xffcu;
    if (next < 0x100 || next <= off) return std::nullopt;
    off = next;
  }
  return std::nullopt;
}

bool acs_redirects_peers(unsigned ctrl) { return (ctrl & (0x4u | 0x8u)) != 0; }  // ReqRedir, CmpltRedir

// ---- Rules -------------------------------------------------------------------------------------

std::vector<Check> rule_nvml(const DoctorInput& in) {
  const json& nv = at(in.environment, "nvml");
  const auto avail = jbool(nv, "available");
  if (!avail) return {make_check("nvml.available", std::nullopt, Severity::info, "NVML state not recorded")};
  if (*avail) {
    const auto drv = jstr(software_of(in.environment), "driver_version");
    return {make_check("nvml.available", std::nullopt, Severity::ok,
                       "NVML available" + (drv ? " (driver " + *drv + ")" : std::string()))};
  }
  return {make_check(
      "nvml.available", std::nullopt, Severity::warn,
      "NVML is not available: clocks, ECC, PCIe links, throttling and topology cannot be read",
      jstr(nv, "error").value_or("no reason recorded"),
      "Make the driver's libnvidia-ml.so.1 reachable: install the driver's user-space libraries (the same version "
      "as the kernel module), or in a container run with the NVIDIA container toolkit (--gpus all, "
      "NVIDIA_DRIVER_CAPABILITIES including 'utility').")};
}

std::vector<Check> rule_driver_runtime(const DoctorInput& in, const RuleData& data) {
  const std::string id = "driver.cuda_runtime";
  const json& sw = software_of(in.environment);
  const std::vector<int> rt = runtime_version(in.environment);
  const auto drv_s = jstr(sw, "driver_version");
  const auto cdv_s = jstr(sw, "cuda_driver_version");
  const std::vector<int> drv = drv_s ? parse_version(*drv_s) : std::vector<int>{};
  const std::vector<int> cdv = cdv_s ? parse_version(*cdv_s) : std::vector<int>{};
  const std::string cuda_error = jstr(in.environment, "cuda_error").value_or("");
  if (rt.empty()) return {make_check(id, std::nullopt, Severity::info, "CUDA runtime version not recorded")};
  const std::string rts = version_string(rt);
  const auto min = driver_minimum(data, rt[0]);
  std::string ev = "CUDA runtime " + rts + " (this binary); driver " + drv_s.value_or("unknown") +
                   ", whose own CUDA version is " + cdv_s.value_or("unknown");
  if (min) ev += "; CUDA " + std::to_string(rt[0]) + ".x needs a driver >= " + version_string(*min) +
                 " (minor-version compatibility)";
  const std::string too_old_fix =
      "Install a driver >= " + (min ? version_string(*min) : std::string("the one for CUDA ") + rts) + " (CUDA " +
      std::to_string(rt[0]) +
      ".x). Pascal and Volta GPUs must stay on the R580 branch, the last that supports them; for an older driver "
      "use a nodebench built with CUDA 12.x (needs >= 525.60.13; scripts/build-cuda12.sh).";
  const std::string compat_fix =
      "The driver's native CUDA is " + cdv_s.value_or("?") + " and the runtime is " + rts +
      ": this works under minor-version compatibility, but PTX built by CUDA " + rts +
      " cannot be JIT-compiled by this driver and APIs newer than the driver fail with "
      "cudaErrorCallRequiresNewerDriver. Update the driver to one whose CUDA version is >= " + rts +
      " (or make sure the binary has SASS for every GPU).";

  if (!drv.empty()) {
    if (min && compare_versions(drv, *min) < 0)
      return {make_check(id, std::nullopt, Severity::fail,
                         "driver " + *drv_s + " is too old for CUDA " + rts, ev, too_old_fix)};
    if (!cdv.empty() && compare_versions(cdv, rt) < 0)
      return {make_check(id, std::nullopt, Severity::warn,
                         "CUDA " + rts + " runs on driver " + *drv_s + " (CUDA " + *cdv_s +
                             ") only by minor-version compatibility",
                         ev, compat_fix)};
    return {make_check(id, std::nullopt, Severity::ok, "driver " + *drv_s + " supports CUDA " + rts, ev)};
  }
  if (!cdv.empty()) {
    if (cdv[0] < rt[0])
      return {make_check(id, std::nullopt, Severity::fail,
                         "the driver supports CUDA " + *cdv_s + ", older than the runtime " + rts, ev, too_old_fix)};
    if (compare_versions(cdv, rt) < 0)
      return {make_check(id, std::nullopt, Severity::warn,
                         "CUDA " + rts + " runs on a CUDA " + *cdv_s + " driver only by minor-version compatibility",
                         ev, compat_fix)};
    return {make_check(id, std::nullopt, Severity::ok, "the driver (CUDA " + *cdv_s + ") supports CUDA " + rts, ev)};
  }
  // Neither version is known: say why, from the CUDA error and the kernel module.
  const bool module_absent = in.live.recorded && !in.live.kernel_driver;
  if (module_absent)
    return {make_check(id, std::nullopt, Severity::fail, "no NVIDIA driver is loaded",
                       ev + "; /proc/driver/nvidia/version absent; CUDA: " +
                           (cuda_error.empty() ? std::string("no error recorded") : cuda_error),
                       "Install the NVIDIA driver (>= " + (min ? version_string(*min) : std::string("the CUDA ") + rts + " minimum") +
                           " for CUDA " + rts +
                           ") and load it (nvidia-smi must work); in a container, start it with the GPUs passed in "
                           "(docker --gpus all, or the NVIDIA device plugin).")};
  if (cuda_error.find("InsufficientDriver") != std::string::npos)
    return {make_check(id, std::nullopt, Severity::fail, "the CUDA driver is missing or too old for CUDA " + rts,
                       ev + "; CUDA: " + cuda_error, too_old_fix)};
  return {make_check(id, std::nullopt, Severity::info, "driver version not available", ev)};
}

std::vector<Check> rule_driver_gpu_support(const DoctorInput& in, const RuleData& data) {
  std::vector<Check> out;
  const auto drv_s = jstr(software_of(in.environment), "driver_version");
  const std::vector<int> drv = drv_s ? parse_version(*drv_s) : std::vector<int>{};
  const json& archs = at(at(data.compat, "driver_last_branch"), "architectures");
  for (const auto& g : gpus_of(in.environment)) {
    const std::string id = "driver.gpu_support";
    if (drv.empty() || !g.cc) {
      out.push_back(make_check(id, g.index, Severity::info, "driver branch or compute capability not available"));
      continue;
    }
    const json* arch = nullptr;
    if (archs.is_array())
      for (const auto& a : archs) {
        const auto lo = parse_cc(a.value("cc_min", "")), hi = parse_cc(a.value("cc_max", ""));
        if (lo && hi && *g.cc >= *lo && *g.cc <= *hi) arch = &a;
      }
    const int branch = drv[0];
    if (!arch) {
      out.push_back(make_check(id, g.index, Severity::ok,
                               "driver branch R" + std::to_string(branch) + " supports " + g.label(),
                               "no end-of-support driver branch is announced for compute capability " + cc_string(*g.cc)));
      continue;
    }
    const std::string an = arch->value("name", "this architecture");
    const int last = arch->value("last_branch", 0);
    const std::string ev = g.label() + " is " + an + "; driver " + *drv_s + " is branch R" + std::to_string(branch) +
                           "; R" + std::to_string(last) + " is the last branch that supports " + an;
    if (branch > last)
      out.push_back(make_check(id, g.index, Severity::fail,
                               "driver branch R" + std::to_string(branch) + " does not support " + an, ev,
                               "Install an R" + std::to_string(last) + " driver (the last for " + an +
                                   "; R580 is a long-term branch supported to 2028) and hold it there."));
    else if (branch == last)
      out.push_back(make_check(id, g.index, Severity::info,
                               "R" + std::to_string(last) + " is the last driver branch for " + an, ev,
                               "Pin the driver to the R" + std::to_string(last) +
                                   " branch (e.g. the distribution's 580 meta-package, apt-mark hold) so that an "
                                   "upgrade does not drop this GPU; CUDA 13 needs R580 too, so that combination stays "
                                   "possible, but CUDA 13 libraries lack this GPU's architecture (see libs.*)."));
    else
      out.push_back(make_check(id, g.index, Severity::ok, "driver R" + std::to_string(branch) + " supports " + an, ev));
  }
  return out;
}

std::vector<Check> rule_arch_binary(const DoctorInput& in, const RuleData& data) {
  (void)data;
  std::vector<Check> out;
  bool unknown = false;
  const auto archs = parse_arch_list(in.cuda_architectures, &unknown);
  const std::vector<int> rt = runtime_version(in.environment);
  const auto cdv_s = jstr(software_of(in.environment), "cuda_driver_version");
  const std::vector<int> cdv = cdv_s ? parse_version(*cdv_s) : std::vector<int>{};
  const bool minor_compat = !cdv.empty() && !rt.empty() && compare_versions(cdv, rt) < 0;
  for (const auto& g : gpus_of(in.environment)) {
    const std::string id = "arch.binary";
    const std::string ev = "this binary: " + (in.cuda_architectures.empty() ? std::string("(not recorded)") : in.cuda_architectures) +
                           " = " + describe_archs(archs) + "; " + g.label();
    if (!g.cc || archs.empty()) {
      out.push_back(make_check(id, g.index, Severity::info, "compiled architectures not known", ev));
      continue;
    }
    const ArchMatch m = match_arch(archs, *g.cc);
    const std::string ccs = cc_string(*g.cc);
    if (m.fit == ArchFit::native) {
      out.push_back(make_check(id, g.index, Severity::ok, "sm_" + std::to_string(m.via) + " SASS runs on cc " + ccs, ev));
    } else if (m.fit == ArchFit::jit) {
      if (minor_compat)
        out.push_back(make_check(
            id, g.index, Severity::fail,
            "only compute_" + std::to_string(m.via) + " PTX fits cc " + ccs + ", and this driver cannot JIT it", 
            ev + "; the driver's CUDA " + *cdv_s + " is older than the runtime " + version_string(rt) +
                " (minor-version compatibility does not cover PTX JIT)",
            "Rebuild nodebench with SASS for this GPU: -DCMAKE_CUDA_ARCHITECTURES=" + std::to_string(*g.cc) +
                "-real (or update the driver)."));
      else
        out.push_back(make_check(id, g.index, Severity::info,
                                 "cc " + ccs + " runs compute_" + std::to_string(m.via) + " PTX by JIT compilation", ev,
                                 "The first launch compiles the kernels (seconds; cached in ~/.nv/ComputeCache). "
                                 "For SASS, rebuild with -DCMAKE_CUDA_ARCHITECTURES including " +
                                     std::to_string(*g.cc) + "-real."));
    } else {
      std::string fix;
      if (*g.cc < 75 && !rt.empty() && rt[0] >= 13)
        fix = "CUDA " + std::to_string(rt[0]) + " cannot compile for compute capability below 7.5. Build nodebench with "
              "CUDA 12.x (12.9 is the last with Pascal and Volta): scripts/build-cuda12.sh, or cmake "
              "-DCMAKE_CUDA_COMPILER=/usr/local/cuda-12.9/bin/nvcc -DCMAKE_CUDA_ARCHITECTURES=" + std::to_string(*g.cc) + "-real.";
      else
        fix = "Rebuild with -DCMAKE_CUDA_ARCHITECTURES including " + std::to_string(*g.cc) + "-real (or an older PTX "
              "architecture, e.g. '" + std::to_string(*g.cc) + "').";
      out.push_back(make_check(id, g.index, Severity::fail,
                               "this binary has no code for cc " + ccs + ": every kernel launch fails "
                               "(cudaErrorNoKernelImageForDevice)",
                               ev, fix));
    }
  }
  return out;
}

std::vector<Check> rule_libraries(const DoctorInput& in, const RuleData& data) {
  std::vector<Check> out;
  const json& sw = software_of(in.environment);
  const json& libs = at(data.compat, "libraries");
  const std::vector<int> rt = runtime_version(in.environment);
  struct Lib {
    const char* id;
    const char* key;
    const char* pretty;
    const char* needed_by;
  };
  const Lib list[] = {{"libs.cublas", "cublas_version", "cuBLAS", "every GEMM case"},
                      {"libs.cudnn", "cudnn_version", "cuDNN", "the conv family and frameworks"},
                      {"libs.nccl", "nccl_version", "NCCL", "the nccl family and multi-GPU frameworks"}};
  const auto gpus = gpus_of(in.environment);
  for (const Lib& lib : list) {
    const auto ver_s = jstr(sw, lib.key);
    // The rule entry that applies to the found version (or, for NCCL, to the CUDA runtime).
    const json* entry = nullptr;
    if (ver_s) {
      const std::vector<int> ver = parse_version(*ver_s);
      if (std::string(lib.id) == "libs.nccl") {
        if (!rt.empty() && at(libs, "nccl_by_cuda_major").is_array())
          for (const auto& e : at(libs, "nccl_by_cuda_major"))
            if (e.value("cuda_major", 0) == rt[0]) entry = &e;
      } else {
        const json& list_j = at(libs, lib.id + 5);  // "libs.cublas" -> "cublas"
        if (list_j.is_array())
          for (const auto& e : list_j)
            if (!entry && compare_versions(ver, parse_version(e.value("min_version", "0"))) >= 0) entry = &e;
      }
    }
    for (const auto& g : gpus) {
      if (!ver_s) {
        out.push_back(make_check(lib.id, g.index, Severity::info,
                                 std::string(lib.pretty) + " not found (only " + lib.needed_by + " needs it)",
                                 std::string(lib.pretty) + " could not be loaded by this process"));
        continue;
      }
      if (!entry || !g.cc) {
        out.push_back(make_check(lib.id, g.index, Severity::info,
                                 std::string(lib.pretty) + " " + *ver_s + ": no architecture rule for this version"));
        continue;
      }
      const auto min_cc = parse_cc(entry->value("min_cc", "0.0")).value_or(0);
      const std::map<std::string, std::string> vars = {{"version", *ver_s}, {"cc", cc_string(*g.cc)}};
      const std::string why = subst(entry->value("why", ""), vars);
      const std::string ev = why + "; " + g.label();
      if (*g.cc >= min_cc) {
        out.push_back(make_check(lib.id, g.index, Severity::ok,
                                 std::string(lib.pretty) + " " + *ver_s + " supports cc " + cc_string(*g.cc), ev));
      } else {
        out.push_back(make_check(lib.id, g.index, severity_from(entry->value("severity", "fail")),
                                 std::string(lib.pretty) + " " + *ver_s + " has no code for cc " + cc_string(*g.cc) +
                                     " (needs " + cc_string(min_cc) + " or newer)",
                                 ev, subst(entry->value("fix", ""), vars)));
      }
    }
  }
  return out;
}

std::vector<Check> rule_visibility(const DoctorInput& in) {
  const std::string id = "gpu.visibility";
  const auto gpus = gpus_of(in.environment);
  const int cuda_n = int(gpus.size());
  const auto cvd = jstr(in.environment, "cuda_visible_devices");
  const auto& L = in.live;
  std::string ev = "CUDA sees " + std::to_string(cuda_n) + "; NVML (the driver) lists " +
                   (L.nvml_device_count ? std::to_string(*L.nvml_device_count) : std::string("unknown")) +
                   "; CUDA_VISIBLE_DEVICES " + (cvd ? "'" + *cvd + "'" : std::string("not set"));
  if (L.nvidia_visible_devices) ev += "; NVIDIA_VISIBLE_DEVICES '" + *L.nvidia_visible_devices + "'";
  if (L.device_nodes) ev += "; " + std::to_string(*L.device_nodes) + " /dev/nvidiaN device node(s)";
  if (L.cgroup_devices) ev += "; " + *L.cgroup_devices;
  bool mig = false;
  for (const auto& g : gpus) mig = mig || jbool(*g.j, "mig_mode").value_or(false);
  const std::string cuda_error = jstr(in.environment, "cuda_error").value_or("");

  if (cuda_n == 0) {
    std::string fix;
    if (cvd && (cvd->empty() || *cvd == "-1" || *cvd == "none"))
      fix = "CUDA_VISIBLE_DEVICES='" + *cvd + "' hides every GPU: unset it or list the GPUs to use.";
    else if (L.nvml_device_count && *L.nvml_device_count > 0)
      fix = "The driver lists " + std::to_string(*L.nvml_device_count) +
            " GPU(s) but CUDA can use none: check CUDA_VISIBLE_DEVICES, that the driver is new enough for the runtime "
            "(driver.cuda_runtime), and dmesg for Xid errors.";
    else
      fix = "No GPU is visible: check that the driver is loaded (nvidia-smi), that a container was started with the "
            "GPUs passed in, and CUDA_VISIBLE_DEVICES.";
    return {make_check(id, std::nullopt, Severity::fail, "CUDA sees no GPU",
                       ev + (cuda_error.empty() ? std::string() : "; CUDA: " + cuda_error), fix)};
  }
  if (!L.nvml_device_count) {
    if (cvd)
      return {make_check(id, std::nullopt, Severity::info,
                         "CUDA sees " + std::to_string(cuda_n) + " GPU(s), limited by CUDA_VISIBLE_DEVICES; the physical "
                         "count is not available",
                         ev)};
    return {make_check(id, std::nullopt, Severity::info,
                       "CUDA sees " + std::to_string(cuda_n) + " GPU(s); the physical count is not available (no NVML)", ev)};
  }
  const int phys = *L.nvml_device_count;
  if (phys > cuda_n) {
    const int hidden = phys - cuda_n;
    const std::string what = "CUDA sees " + std::to_string(cuda_n) + " of the " + std::to_string(phys) + " GPUs the driver lists";
    if (cvd)
      return {make_check(id, std::nullopt, Severity::warn,
                         what + ": CUDA_VISIBLE_DEVICES='" + *cvd + "' hides " + std::to_string(hidden), ev,
                         "If this process (or a framework started the same way) should use every GPU, unset "
                         "CUDA_VISIBLE_DEVICES or list them all (e.g. 0,1,2,3). Job schedulers (Slurm, Kubernetes) set "
                         "it from the job's GPU request: check the request rather than overriding it.")};
    if (mig)
      return {make_check(id, std::nullopt, Severity::warn, what + " (MIG is on)", ev,
                         "With MIG on, CUDA sees MIG instances, not GPUs: see gpu.mig.")};
    return {make_check(id, std::nullopt, Severity::fail,
                       what + ", and CUDA_VISIBLE_DEVICES is not set: " + std::to_string(hidden) + " GPU(s) unusable", ev,
                       "A GPU the driver lists cannot be opened by CUDA: look for Xid errors and 'fallen off the bus' in "
                       "dmesg, compare nvidia-smi -L with this list, check the devices cgroup of the container; reset "
                       "the GPU (nvidia-smi -r -i N) or reboot, and RMA a GPU that keeps dropping out.")};
  }
  if (phys < cuda_n)
    return {make_check(id, std::nullopt, Severity::info,
                       "CUDA sees " + std::to_string(cuda_n) + " devices, NVML " + std::to_string(phys) +
                           " (MIG instances or NVML filtered by the container)",
                       ev)};
  return {make_check(id, std::nullopt, Severity::ok,
                     "CUDA and the driver both see " + std::to_string(cuda_n) + " GPU" + (cuda_n == 1 ? "" : "s"), ev)};
}

std::vector<Check> rule_device_order(const DoctorInput& in) {
  const auto gpus = gpus_of(in.environment);
  if (gpus.size() < 2) return {};
  const std::string order = in.live.cuda_device_order.value_or("");
  std::set<std::string> names;
  for (const auto& g : gpus) names.insert(g.name);
  const std::string ev = "CUDA_DEVICE_ORDER " + (order.empty() ? std::string("not set (FASTEST_FIRST)") : "'" + order + "'") +
                         "; " + std::to_string(names.size()) + " GPU model(s)";
  if (order == "PCI_BUS_ID")
    return {make_check("gpu.device_order", std::nullopt, Severity::ok, "CUDA numbers GPUs by PCI bus id, as nvidia-smi does", ev)};
  if (!in.live.recorded)
    return {make_check("gpu.device_order", std::nullopt, Severity::info, "CUDA_DEVICE_ORDER not recorded", ev)};
  return {make_check("gpu.device_order", std::nullopt, names.size() > 1 ? Severity::warn : Severity::info,
                     names.size() > 1 ? "CUDA numbers these mixed GPUs fastest first, nvidia-smi by bus id: indices differ"
                                      : "CUDA_DEVICE_ORDER is not PCI_BUS_ID: CUDA and nvidia-smi indices may differ",
                     ev, "export CUDA_DEVICE_ORDER=PCI_BUS_ID so that CUDA indices match nvidia-smi and NVML.")};
}

std::vector<Check> rule_processes(const DoctorInput& in) {
  std::vector<Check> out;
  for (const auto& g : gpus_of(in.environment)) {
    const GpuLive* l = in.live.gpu(g.index);
    if (!l || !l->processes) {
      out.push_back(make_check("gpu.processes", g.index, Severity::info, "processes on the GPU: not available",
                               "NVML nvmlDeviceGetComputeRunningProcesses not available"));
      continue;
    }
    std::vector<std::string> others;
    for (size_t i = 0; i < l->processes->size(); ++i) {
      const ProcessUse& p = (*l->processes)[i];
      if (in.live.self_pid != 0 && int(p.pid) == in.live.self_pid) continue;
      std::string s = "pid " + std::to_string(p.pid);
      const std::string name = i < l->process_names.size() ? l->process_names[i] : "";
      if (!name.empty() || p.used_bytes)
        s += " (" + name + (name.empty() || !p.used_bytes ? "" : ", ") + (p.used_bytes ? gib(*p.used_bytes) : std::string()) + ")";
      others.push_back(s);
    }
    if (others.empty())
      out.push_back(make_check("gpu.processes", g.index, Severity::ok, "no other process uses " + g.label()));
    else
      out.push_back(make_check("gpu.processes", g.index, Severity::warn,
                               std::to_string(others.size()) + " other process(es) use " + g.label(), join(others, "; "),
                               "Stop them or choose idle GPUs (--gpus): results taken on a shared GPU are low and noisy, "
                               "and memory-hungry cases may not fit."));
  }
  return out;
}

std::vector<Check> rule_mig(const DoctorInput& in) {
  std::vector<Check> out;
  for (const auto& g : gpus_of(in.environment)) {
    const auto mig = jbool(*g.j, "mig_mode");
    if (!mig)
      out.push_back(make_check("gpu.mig", g.index, Severity::info, "MIG mode not reported (unsupported or no NVML)"));
    else if (*mig)
      out.push_back(make_check("gpu.mig", g.index, Severity::warn, "MIG mode is on: CUDA sees instances, not the whole GPU",
                               g.label() + " has MIG enabled",
                               "To measure the whole GPU: nvidia-smi -i " + std::to_string(g.index) +
                                   " -mig 0, then reset the GPU; leave MIG on where the node is meant to be shared."));
    else
      out.push_back(make_check("gpu.mig", g.index, Severity::ok, "MIG mode off"));
  }
  return out;
}

std::vector<Check> rule_pcie(const DoctorInput& in) {
  std::vector<Check> out;
  for (const auto& g : gpus_of(in.environment)) {
    const std::string id = "pcie.link";
    const GpuLive* l = in.live.gpu(g.index);
    PcieLink link;
    bool loaded = false;
    std::string how;
    if (l && l->pcie_loaded) {
      link = *l->pcie_loaded;
      loaded = true;
      how = l->pcie_method.empty() ? "read under load" : l->pcie_method;
    } else {
      if (g.j->contains("pcie") && (*g.j)["pcie"].is_object()) link = link_from_json((*g.j)["pcie"]);
      how = l && !l->pcie_method.empty() ? l->pcie_method : "read at idle (from the environment capture)";
    }
    if (!link.gen_current || !link.gen_max || !link.width_current || !link.width_max) {
      out.push_back(make_check(id, g.index, Severity::info, "PCIe link not available", how));
      continue;
    }
    auto gbps = [](unsigned gen, unsigned w) {
      const auto v = pcie_gbps(gen, w);
      return v ? fmt(*v, 1) + " GB/s" : std::string("?");
    };
    const std::string cur = "Gen" + std::to_string(*link.gen_current) + " x" + std::to_string(*link.width_current);
    const std::string max = "Gen" + std::to_string(*link.gen_max) + " x" + std::to_string(*link.width_max);
    const std::string ev = g.label() + ": " + cur + " (" + gbps(*link.gen_current, *link.width_current) +
                           " per direction) of " + max + " (" + gbps(*link.gen_max, *link.width_max) + "); " + how;
    const bool narrow = *link.width_current < *link.width_max;
    const bool slow = *link.gen_current < *link.gen_max;
    if (narrow) {
      out.push_back(make_check(
          id, g.index, loaded ? Severity::fail : Severity::warn,
          "PCIe link trained at x" + std::to_string(*link.width_current) + " of x" + std::to_string(*link.width_max) +
              (loaded ? " under load" : " (idle reading)"),
          ev,
          "The link lost lanes: host-device bandwidth is cut to x" + std::to_string(*link.width_current) +
              ". Reseat the GPU; check that the slot is wired x" + std::to_string(*link.width_max) +
              " (not an x8 slot or a bifurcated riser) and the BIOS bifurcation setting; check risers and cables; "
              "compare 'lspci -vv' LnkCap with LnkSta for the GPU and the bridge above it."));
    } else if (slow) {
      out.push_back(make_check(
          id, g.index, loaded ? Severity::warn : Severity::info,
          "PCIe link at Gen" + std::to_string(*link.gen_current) + " of Gen" + std::to_string(*link.gen_max) +
              (loaded ? " under load" : " at idle (links slow down when idle)"),
          ev,
          loaded ? "The link fell back to a lower generation while busy: check the BIOS PCIe speed setting (Auto or "
                   "Gen" + std::to_string(*link.gen_max) + "), risers and retimers, and 'lspci -vv' LnkSta; a "
                   "signal-integrity problem makes links fall back."
                 : "Run 'nodebench doctor' without --no-load to read the link while the GPU is busy."));
    } else {
      out.push_back(make_check(id, g.index, Severity::ok, "PCIe " + cur + " (the maximum)", ev));
    }
  }
  return out;
}

std::vector<Check> rule_ecc(const DoctorInput& in) {
  std::vector<Check> out;
  for (const auto& g : gpus_of(in.environment)) {
    const std::string n = std::to_string(g.index);
    // ecc.mode
    const auto mode = jbool(*g.j, "ecc_enabled");
    if (!mode)
      out.push_back(make_check("ecc.mode", g.index, Severity::info, "ECC mode not reported (unsupported or no NVML)"));
    else if (*mode)
      out.push_back(make_check("ecc.mode", g.index, Severity::ok, "ECC on"));
    else
      out.push_back(make_check("ecc.mode", g.index, Severity::warn, "ECC is off", g.label() + " runs without ECC",
                               "Turn ECC on for compute work: nvidia-smi -i " + n +
                                   " -e 1, then reboot or reset the GPU (it costs a few % of memory bandwidth and capacity on "
                                   "GDDR GPUs; HBM GPUs have it always on)."));
    // ecc.errors
    const GpuLive* l = in.live.gpu(g.index);
    const EccCounters e = l ? l->ecc : EccCounters{};
    if (!e.volatile_uncorrected && !e.aggregate_uncorrected && !e.volatile_corrected && !e.aggregate_corrected) {
      out.push_back(make_check("ecc.errors", g.index, Severity::info, "ECC error counters not available",
                               mode && !*mode ? "ECC is off" : "NVML nvmlDeviceGetTotalEccErrors not available"));
    } else {
      auto v = [](const std::optional<unsigned long long>& x) { return x ? std::to_string(*x) : std::string("n/a"); };
      const std::string ev = "uncorrectable: " + v(e.volatile_uncorrected) + " since the driver loaded, " +
                             v(e.aggregate_uncorrected) + " over the GPU's life; corrected: " + v(e.volatile_corrected) +
                             " / " + v(e.aggregate_corrected);
      if (e.volatile_uncorrected.value_or(0) > 0)
        out.push_back(make_check(
            "ecc.errors", g.index, Severity::fail,
            std::to_string(*e.volatile_uncorrected) + " uncorrectable ECC error(s) since the driver loaded", ev,
            "The GPU's memory returned data ECC could not correct: drain the node, read 'nvidia-smi -q -d "
            "ECC,PAGE_RETIREMENT,ROW_REMAPPER -i " + n + "' and dmesg (Xid 48, 63, 64, 94, 95), reset the GPU to "
            "retire or remap the bad memory; if errors come back, RMA the GPU."));
      else if (e.aggregate_uncorrected.value_or(0) > 0)
        out.push_back(make_check("ecc.errors", g.index, Severity::warn,
                                 std::to_string(*e.aggregate_uncorrected) + " uncorrectable ECC error(s) in the GPU's life", ev,
                                 "None since the driver loaded; watch the counters (page retirement or row remapping should "
                                 "have isolated the memory: see ecc.retired) and RMA the GPU if they grow."));
      else if (e.volatile_corrected.value_or(0) > 0 || e.aggregate_corrected.value_or(0) > 0)
        out.push_back(make_check("ecc.errors", g.index, Severity::info, "corrected ECC errors only", ev,
                                 "Corrected errors are handled by ECC; a steadily rising count predicts a failing GPU."));
      else
        out.push_back(make_check("ecc.errors", g.index, Severity::ok, "no ECC errors", ev));
    }
    // ecc.retired: page retirement (before Ampere) and row remapping (Ampere and newer)
    const RetiredPages rp = l ? l->retired : RetiredPages{};
    const std::optional<RemappedRows> rr = l ? l->remapped : std::nullopt;
    if (!rr && !rp.single_bit && !rp.double_bit && !rp.pending) {
      out.push_back(make_check("ecc.retired", g.index, Severity::info, "retired pages / remapped rows not available"));
      continue;
    }
    std::vector<std::string> ev;
    if (rp.single_bit || rp.double_bit)
      ev.push_back("retired pages: " + std::to_string(rp.single_bit.value_or(0)) + " for multiple single-bit errors, " +
                   std::to_string(rp.double_bit.value_or(0)) + " for double-bit errors");
    if (rp.pending) ev.push_back(std::string("page retirement pending: ") + (*rp.pending ? "yes" : "no"));
    if (rr)
      ev.push_back("remapped rows: " + std::to_string(rr->correctable) + " correctable, " + std::to_string(rr->uncorrectable) +
                   " uncorrectable, pending " + (rr->pending ? "yes" : "no") + ", failure " + (rr->failure ? "yes" : "no"));
    const std::string evs = join(ev, "; ");
    const unsigned retired = rp.single_bit.value_or(0) + rp.double_bit.value_or(0);
    if (rr && rr->failure)
      out.push_back(make_check("ecc.retired", g.index, Severity::fail, "row remapping failed: the GPU has no spare rows left", evs,
                               "RMA the GPU: a bank ran out of spare rows, so new memory faults can no longer be isolated."));
    else if ((rr && rr->pending) || rp.pending.value_or(false))
      out.push_back(make_check("ecc.retired", g.index, Severity::fail,
                               "a GPU reset is needed to finish retiring or remapping faulty memory", evs,
                               "Drain the GPU and reset it (nvidia-smi -r -i " + n + ") or reboot; until then the faulty memory "
                               "is still in use."));
    else if (retired >= 60)
      out.push_back(make_check("ecc.retired", g.index, Severity::warn, std::to_string(retired) + " pages retired", evs,
                               "NVIDIA's guideline is to RMA a GPU with 60 or more retired pages."));
    else if (retired > 0 || (rr && rr->uncorrectable > 0))
      out.push_back(make_check("ecc.retired", g.index, Severity::info, "some memory has been retired or remapped", evs,
                               "Isolated by the GPU; watch the counts grow (nvidia-smi -q -d PAGE_RETIREMENT,ROW_REMAPPER)."));
    else
      out.push_back(make_check("ecc.retired", g.index, Severity::ok, "nothing retired or pending", evs));
  }
  return out;
}

std::vector<Check> rule_persistence(const DoctorInput& in) {
  std::vector<Check> out;
  for (const auto& g : gpus_of(in.environment)) {
    const auto pm = jbool(*g.j, "persistence_mode");
    if (!pm)
      out.push_back(make_check("gpu.persistence", g.index, Severity::info, "persistence mode not reported"));
    else if (*pm)
      out.push_back(make_check("gpu.persistence", g.index, Severity::ok, "persistence mode on"));
    else
      out.push_back(make_check("gpu.persistence", g.index, Severity::warn, "persistence mode is off",
                               g.label() + ": the driver tears the GPU down when the last client exits",
                               "Every CUDA start then pays driver initialisation (seconds on multi-GPU nodes) and settings "
                               "such as application clocks are lost: sudo systemctl enable --now nvidia-persistenced "
                               "(or nvidia-smi -pm 1)."));
  }
  return out;
}

std::vector<Check> rule_throttle(const DoctorInput& in) {
  std::vector<Check> out;
  const std::string cooling =
      "Check the cooling: inlet air temperature, fans and fan profile, blocked or dusty heat sinks, airflow blanks in "
      "empty slots; for passively cooled GPUs (P40, H100/H200 SXM) the chassis fans must push enough air through them.";
  for (const auto& g : gpus_of(in.environment)) {
    const std::string n = std::to_string(g.index);
    std::vector<std::string> idle, busy;
    bool known = false;
    if (g.j->contains("throttle_reasons") && (*g.j)["throttle_reasons"].is_array()) {
      known = true;
      for (const auto& r : (*g.j)["throttle_reasons"])
        if (r.is_string()) idle.push_back(r.get<std::string>());
    }
    const GpuLive* l = in.live.gpu(g.index);
    if (l && l->throttle_mask_loaded) {
      known = true;
      busy = throttle_reason_names(*l->throttle_mask_loaded);
    }
    if (!known) {
      out.push_back(make_check("gpu.throttle", g.index, Severity::info, "clock throttle reasons not available"));
      continue;
    }
    std::set<std::string> all(idle.begin(), idle.end());
    all.insert(busy.begin(), busy.end());
    std::string ev = "NVML clocks-event reasons at capture: [" + join(idle, ", ") + "]";
    if (l && l->throttle_mask_loaded) ev += "; during host-to-device copies: [" + join(busy, ", ") + "]";
    const auto temp = jnum(*g.j, "temperature_c");
    if (temp) ev += "; " + fmt(*temp, 0) + " C";
    const bool idle_power_cap = std::find(idle.begin(), idle.end(), "sw_power_cap") != idle.end();
    if (all.count("hw_thermal_slowdown"))
      out.push_back(make_check("gpu.throttle", g.index, Severity::fail,
                               "hardware thermal slowdown: the GPU is too hot and halves its clocks", ev, cooling));
    else if (all.count("hw_power_brake_slowdown"))
      out.push_back(make_check("gpu.throttle", g.index, Severity::fail,
                               "hardware power brake: the board asserted an external slowdown", ev,
                               "The power brake comes from the system: check the power supplies (redundancy lost, a PSU "
                               "failed or is unplugged), the GPU's power cables, and the BMC's event log."));
    else if (all.count("hw_slowdown"))
      out.push_back(make_check("gpu.throttle", g.index, Severity::fail, "hardware slowdown is active", ev,
                               "HW slowdown is asserted for overheating or a power problem: nvidia-smi -q -d PERFORMANCE,"
                               "TEMPERATURE,POWER -i " + n + " says which; " + cooling + " Check the power cables and PSUs."));
    else if (all.count("sw_thermal_slowdown"))
      out.push_back(make_check("gpu.throttle", g.index, Severity::warn,
                               "software thermal slowdown: the driver lowers clocks to cool the GPU", ev, cooling));
    else if (idle_power_cap)
      out.push_back(make_check("gpu.throttle", g.index, Severity::warn, "power-capped while idle", ev,
                               "The power limit looks too low: nvidia-smi -q -d POWER -i " + n +
                                   " shows the current, default and maximum limits; restore it with nvidia-smi -i " + n +
                                   " -pl <default>."));
    else if (all.count("applications_clocks_setting") || all.count("display_clock_setting") || all.count("sync_boost"))
      out.push_back(make_check("gpu.throttle", g.index, Severity::info, "clocks limited by a setting", ev,
                               "Application clocks or a clock setting hold the GPU below its boost clock: nvidia-smi -rac -i " +
                                   n + " resets application clocks; nvidia-smi -rgc -i " + n + " resets locked clocks."));
    else
      out.push_back(make_check("gpu.throttle", g.index, Severity::ok, "no throttling", ev));
  }
  return out;
}

std::vector<Check> rule_thermal(const DoctorInput& in) {
  std::vector<Check> out;
  for (const auto& g : gpus_of(in.environment)) {
    const auto temp = jnum(*g.j, "temperature_c");
    const auto limit = jnum(*g.j, "power_limit_w");
    std::string ev = g.label() + ": " + (temp ? fmt(*temp, 0) + " C" : std::string("temperature unknown")) +
                     (limit ? ", power limit " + fmt(*limit, 0) + " W" : std::string());
    if (!temp)
      out.push_back(make_check("gpu.thermal", g.index, Severity::info, "temperature not available", ev));
    else if (*temp >= 85)
      out.push_back(make_check("gpu.thermal", g.index, Severity::warn, "GPU at " + fmt(*temp, 0) + " C", ev,
                               "Over 85 C the GPU is near its slowdown temperature; find out why (load from another process, "
                               "airflow, fan failure) before benchmarking."));
    else
      out.push_back(make_check("gpu.thermal", g.index, Severity::ok, "GPU at " + fmt(*temp, 0) + " C", ev));
  }
  return out;
}

std::vector<Check> rule_p2p(const DoctorInput& in) {
  const auto gpus = gpus_of(in.environment);
  const size_t n = gpus.size();
  if (n < 2)
    return {make_check("p2p.access", std::nullopt, Severity::ok, "fewer than two GPUs: no peer pairs"),
            make_check("p2p.topology", std::nullopt, Severity::ok, "fewer than two GPUs: no peer pairs")};
  std::vector<Check> out;
  const auto& P = in.live.p2p;
  const auto& T = in.live.topology;
  auto level = [&](size_t i, size_t j) -> std::optional<int> {
    if (i < T.size() && j < T[i].size() && T[i][j]) return T[i][j];
    if (j < T.size() && i < T[j].size() && T[j][i]) return T[j][i];
    return std::nullopt;
  };
  // p2p.access
  if (P.size() < n) {
    out.push_back(make_check("p2p.access", std::nullopt, Severity::info, "peer access not recorded"));
  } else {
    std::vector<std::pair<int, int>> near_blocked, far_blocked;
    int known = 0;
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < n; ++j) {
        if (i == j || j >= P[i].size() || !P[i][j]) continue;
        ++known;
        if (*P[i][j]) continue;
        const auto lv = level(i, j);
        (lv && *lv >= 40 ? far_blocked : near_blocked).push_back({gpus[i].index, gpus[j].index});
      }
    std::string ev = "cudaDeviceCanAccessPeer over " + std::to_string(known) + " ordered pairs";
    auto describe = [&](const std::vector<std::pair<int, int>>& v) {
      std::vector<std::string> s;
      for (const auto& [a, b] : v) {
        size_t ia = 0, ib = 0;
        for (size_t k = 0; k < n; ++k) {
          if (gpus[k].index == a) ia = k;
          if (gpus[k].index == b) ib = k;
        }
        const auto lv = level(ia, ib);
        s.push_back(std::to_string(a) + "->" + std::to_string(b) + (lv ? " (" + topology_name(*lv) + ")" : ""));
      }
      return join(s, ", ");
    };
    const std::string fix =
        "Without peer access, copies between these GPUs go through host memory (and NCCL uses shared memory): "
        "keep multi-GPU jobs on GPUs that reach each other (nvidia-smi topo -m, nvidia-smi topo -p2p r). Pairs under "
        "one PCIe switch or host bridge should reach each other: if not, ACS or the IOMMU redirects their traffic "
        "(p2p.iommu), or the GPUs are virtualised without P2P. Pairs across CPU sockets usually cannot.";
    if (known == 0)
      out.push_back(make_check("p2p.access", std::nullopt, Severity::info, "peer access not available", ev));
    else if (!near_blocked.empty())
      out.push_back(make_check("p2p.access", std::nullopt, Severity::warn,
                               std::to_string(near_blocked.size() + far_blocked.size()) + " GPU pair(s) cannot access each other",
                               ev + ": blocked " + describe(near_blocked) +
                                   (far_blocked.empty() ? std::string() : ", " + describe(far_blocked)),
                               fix));
    else if (!far_blocked.empty())
      out.push_back(make_check("p2p.access", std::nullopt, Severity::info,
                               std::to_string(far_blocked.size()) + " pair(s) across host bridges or sockets cannot access each other",
                               ev + ": blocked " + describe(far_blocked), fix));
    else
      out.push_back(make_check("p2p.access", std::nullopt, Severity::ok, "every GPU pair can access its peer", ev));
  }
  // p2p.topology
  std::vector<std::pair<int, int>> sys, node;
  int known = 0;
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + 1; j < n; ++j) {
      const auto lv = level(i, j);
      if (!lv) continue;
      ++known;
      if (*lv >= 50) sys.push_back({gpus[i].index, gpus[j].index});
      else if (*lv >= 40) node.push_back({gpus[i].index, gpus[j].index});
    }
  const std::string tev = "NVML topology over " + std::to_string(known) + " pair(s)" +
                          (sys.empty() ? std::string() : "; SYS (across sockets): " + level_names(sys)) +
                          (node.empty() ? std::string() : "; NODE: " + level_names(node));
  if (known == 0)
    out.push_back(make_check("p2p.topology", std::nullopt, Severity::info, "GPU topology not available (no NVML)", tev));
  else if (!sys.empty())
    out.push_back(make_check("p2p.topology", std::nullopt, Severity::warn,
                             std::to_string(sys.size()) + " GPU pair(s) cross CPU sockets", tev,
                             "Traffic between these GPUs crosses the inter-socket link (UPI/Infinity Fabric): peer copies "
                             "and all-reduce run far below PCIe speed or go through host memory. Place multi-GPU jobs on GPUs "
                             "of one socket (nvidia-smi topo -m), bind each process to its GPU's NUMA node "
                             "(numactl --cpunodebind), and expect cross-socket all-reduce to be slower."));
  else if (!node.empty())
    out.push_back(make_check("p2p.topology", std::nullopt, Severity::info,
                             std::to_string(node.size()) + " GPU pair(s) meet only at the host bridges of one NUMA node", tev));
  else
    out.push_back(make_check("p2p.topology", std::nullopt, Severity::ok, "every GPU pair is under one PCIe switch or board", tev));
  return out;
}

std::vector<Check> rule_iommu(const DoctorInput& in) {
  const auto gpus = gpus_of(in.environment);
  const auto& L = in.live;
  if (!L.recorded) return {make_check("p2p.iommu", std::nullopt, Severity::info, "IOMMU and ACS state not recorded")};
  const std::string cmd = L.kernel_cmdline.value_or("");
  auto has = [&](const char* s) { return cmd.find(s) != std::string::npos; };
  const bool pt = has("iommu=pt") || has("iommu.passthrough=1");
  const bool forced_on = has("intel_iommu=on") || has("amd_iommu=on") || has("iommu=force");
  const int groups = L.iommu_groups.value_or(0);
  std::vector<std::string> ev;
  ev.push_back("/sys/kernel/iommu_groups: " + (L.iommu_groups ? std::to_string(groups) + " group(s)" : std::string("not readable")));
  std::vector<std::string> flags;
  for (const char* f : {"iommu=pt", "iommu.passthrough=1", "intel_iommu=on", "intel_iommu=off", "amd_iommu=on",
                        "amd_iommu=off", "iommu=force", "iommu=off"})
    if (has(f)) flags.push_back(f);
  ev.push_back("kernel command line: " + (flags.empty() ? std::string("no IOMMU options") : join(flags, " ")));
  std::vector<int> redirect;
  for (const auto& g : gpus) {
    const GpuLive* l = L.gpu(g.index);
    if (!l) continue;
    if (!l->acs_evidence.empty()) ev.push_back("GPU " + std::to_string(g.index) + ": " + l->acs_evidence);
    if (l->acs_redirect.value_or(false)) redirect.push_back(g.index);
  }
  const std::string evs = join(ev, "; ");
  const bool multi = gpus.size() >= 2;
  if (!redirect.empty()) {
    std::vector<std::string> r;
    for (int i : redirect) r.push_back(std::to_string(i));
    return {make_check("p2p.iommu", std::nullopt, multi ? Severity::warn : Severity::info,
                       "ACS redirects peer requests above GPU(s) " + join(r, ","), evs,
                       "PCIe switches with ACS Request/Completion Redirect send every peer transfer up to the root complex "
                       "(slow, or blocked by the IOMMU). On bare metal disable ACS in the BIOS, or clear it on the switch "
                       "ports at boot (setpci ... ECAP_ACS+6.w=0000, as NCCL's troubleshooting guide describes); keep it "
                       "where VMs need isolation.")};
  }
  if (groups > 0 && !pt) {
    return {make_check("p2p.iommu", std::nullopt, multi ? Severity::warn : Severity::info,
                       std::string("the IOMMU translates DMA") + (forced_on ? " (enabled on the kernel command line)" : ""), evs,
                       "With the IOMMU in translated mode, GPU peer-to-peer DMA can be blocked or slowed, and NCCL may hang "
                       "or fall back to host memory. Unless this host passes devices to VMs, boot with iommu=pt "
                       "(with intel_iommu=on or amd_iommu=on) or turn the IOMMU off in the BIOS.")};
  }
  if (groups > 0 && pt)
    return {make_check("p2p.iommu", std::nullopt, Severity::ok, "IOMMU in passthrough mode; no ACS redirect seen", evs)};
  return {make_check("p2p.iommu", std::nullopt, Severity::ok, "IOMMU off; no ACS redirect seen", evs)};
}

namespace {

struct BuildFit {
  bool runs = false;
  std::string why;
};

// Whether a framework build with CUDA `cuda` and `archs` runs on this node's driver and GPUs.
BuildFit judge_build(const DoctorInput& in, const RuleData& data, const std::string& cuda, const std::string& archs_s) {
  const std::vector<int> bcuda = parse_version(cuda);
  const json& sw = software_of(in.environment);
  const auto drv_s = jstr(sw, "driver_version");
  const auto cdv_s = jstr(sw, "cuda_driver_version");
  const std::vector<int> drv = drv_s ? parse_version(*drv_s) : std::vector<int>{};
  const std::vector<int> cdv = cdv_s ? parse_version(*cdv_s) : std::vector<int>{};
  if (bcuda.empty()) return {false, "CUDA version unknown"};
  const auto min = driver_minimum(data, bcuda[0]);
  if (!drv.empty() && min && compare_versions(drv, *min) < 0)
    return {false, "driver " + *drv_s + " < " + version_string(*min) + " needed by CUDA " + cuda};
  if (drv.empty() && !cdv.empty() && cdv[0] < bcuda[0])
    return {false, "the driver's CUDA " + *cdv_s + " is older than CUDA " + cuda};
  const auto archs = parse_arch_list(archs_s);
  std::vector<std::string> notes;
  for (const auto& g : gpus_of(in.environment)) {
    if (!g.cc) continue;
    const ArchMatch m = match_arch(archs, *g.cc);
    if (m.fit == ArchFit::none)
      return {false, "no code for cc " + cc_string(*g.cc) + " (GPU " + std::to_string(g.index) + ")"};
    if (m.fit == ArchFit::jit) {
      if (!cdv.empty() && compare_versions(cdv, bcuda) < 0)
        return {false, "cc " + cc_string(*g.cc) + " only by JIT of compute_" + std::to_string(m.via) +
                           " PTX, which needs a driver for CUDA " + cuda + " (this one: " + *cdv_s + ")"};
      notes.push_back("cc " + cc_string(*g.cc) + " by JIT of compute_" + std::to_string(m.via) + " PTX (slow first start)");
    }
  }
  if (gpus_of(in.environment).empty()) notes.push_back("no GPU visible: judged by the driver only");
  return {true, join(notes, "; ")};
}

}  // namespace

std::vector<Check> rule_frameworks(const DoctorInput& in, const RuleData& data) {
  std::vector<Check> out;
  const json& sw = software_of(in.environment);
  if (!jstr(sw, "driver_version") && !jstr(sw, "cuda_driver_version")) {
    for (const char* id : {"frameworks.pytorch", "frameworks.tensorflow"})
      out.push_back(make_check(id, std::nullopt, Severity::info, "not judged: the driver version is unknown",
                               "a framework build runs when the driver supports its CUDA version and its code covers "
                               "every GPU; neither NVML nor the CUDA driver API gave a driver version"));
    return out;
  }
  // PyTorch
  {
    const json& pt = at(data.frameworks, "pytorch");
    std::vector<std::string> yes, lines;
    std::string newest;
    if (at(pt, "wheels").is_array())
      for (const auto& w : at(pt, "wheels")) {
        const std::string tag = w.value("tag", "?");
        const BuildFit f = judge_build(in, data, w.value("cuda", ""), w.value("archs", ""));
        lines.push_back(tag + " (CUDA " + w.value("cuda", "?") + ", torch " + w.value("torch", "?") + "): " +
                        (f.runs ? "runs" : "no") + (f.why.empty() ? "" : " - " + f.why));
        if (f.runs) {
          yes.push_back(tag);
          newest = tag;
        }
      }
    const std::string ev = join(lines, "; ") + ". Source: " + (pt.is_object() ? pt.value("source", "") : std::string());
    if (yes.empty())
      out.push_back(make_check("frameworks.pytorch", std::nullopt, Severity::warn, "no published PyTorch wheel runs on this node", ev,
                               "Update the driver (driver.cuda_runtime) or build PyTorch from source with "
                               "TORCH_CUDA_ARCH_LIST naming this GPU's compute capability."));
    else
      out.push_back(make_check("frameworks.pytorch", std::nullopt, Severity::info,
                               "PyTorch wheels that run here: " + join(yes, ", "), ev,
                               subst(pt.is_object() ? pt.value("install", "") : std::string(), {{"tag", newest}})));
  }
  // TensorFlow
  {
    const json& tf = at(data.frameworks, "tensorflow");
    std::vector<std::string> yes, lines;
    std::string newest;
    const auto cudnn = jstr(software_of(in.environment), "cudnn_version");
    if (at(tf, "builds").is_array())
      for (const auto& b : at(tf, "builds")) {
        const std::string v = b.value("version", "?");
        const BuildFit f = judge_build(in, data, b.value("cuda", ""), b.value("archs", ""));
        lines.push_back(v + " (CUDA " + b.value("cuda", "?") + ", cuDNN " + b.value("cudnn", "?") + "): " +
                        (f.runs ? "runs" : "no") + (f.why.empty() ? "" : " - " + f.why));
        if (f.runs) {
          yes.push_back(v);
          newest = v;
        }
      }
    std::string ev = join(lines, "; ");
    if (cudnn)
      ev += ". The system cuDNN is " + *cudnn + "; the pip wheels (tensorflow[and-cuda]) bring the tested cuDNN themselves";
    ev += ". Source: " + (tf.is_object() ? tf.value("source", "") : std::string());
    if (yes.empty())
      out.push_back(make_check("frameworks.tensorflow", std::nullopt, Severity::warn,
                               "no tested TensorFlow build runs on this node", ev,
                               "Update the driver (driver.cuda_runtime), or build TensorFlow from source for this GPU."));
    else
      out.push_back(make_check("frameworks.tensorflow", std::nullopt, Severity::info,
                               "TensorFlow releases whose tested CUDA runs here: " + join(yes, ", "), ev,
                               subst(tf.is_object() ? tf.value("install", "") : std::string(), {{"version", newest}})));
  }
  return out;
}

std::vector<Check> run_doctor_rules(const DoctorInput& in, const RuleData& data) {
  std::vector<Check> out;
  auto add = [&](std::vector<Check> v) {
    for (auto& c : v) out.push_back(std::move(c));
  };
  add(rule_nvml(in));
  add(rule_driver_runtime(in, data));
  add(rule_driver_gpu_support(in, data));
  add(rule_arch_binary(in, data));
  add(rule_libraries(in, data));
  add(rule_visibility(in));
  add(rule_device_order(in));
  add(rule_processes(in));
  add(rule_mig(in));
  add(rule_pcie(in));
  add(rule_ecc(in));
  add(rule_persistence(in));
  add(rule_throttle(in));
  add(rule_thermal(in));
  add(rule_p2p(in));
  add(rule_iommu(in));
  add(rule_frameworks(in, data));
  return out;
}

// ---- Output --------------------------------------------------------------------------------------

void print_checks(const std::vector<Check>& checks, std::ostream& os) {
  for (const auto& c : checks) {
    std::string sev = c.skipped ? "skip" : to_string(c.severity);
    if (c.severity == Severity::warn || c.severity == Severity::fail)
      std::transform(sev.begin(), sev.end(), sev.begin(), [](unsigned char ch) { return std::toupper(ch); });
    os << "  " << std::left << std::setw(6) << sev << std::setw(26) << c.id << std::setw(6) << c.gpu_label() << c.summary
       << "\n";
    if (c.severity != Severity::ok && !c.evidence.empty()) os << std::string(8, ' ') << "evidence: " << c.evidence << "\n";
    if (c.severity != Severity::ok && !c.fix.empty()) os << std::string(8, ' ') << "fix: " << c.fix << "\n";
  }
  const CheckCounts n = count_checks(checks);
  os << "\n" << n.fail << " fail, " << n.warn << " warn, " << n.info << " info, " << n.ok << " ok";
  if (n.skipped) os << " (" << n.skipped << " skipped)";
  os << ": " << (n.fail ? "FAIL" : n.warn ? "PASS with warnings" : "PASS") << "\n";
}

json doctor_report_json(const DoctorInput& in, const std::vector<Check>& checks) {
  json cj = json::array();
  for (const auto& c : checks) cj.push_back(c.to_json());
  const CheckCounts n = count_checks(checks);
  return {{"schema", "nodebench.doctor"},
          {"schema_version", 1},
          {"verdict", n.fail ? "fail" : n.warn ? "warn" : "pass"},
          {"counts", {{"ok", n.ok}, {"info", n.info}, {"warn", n.warn}, {"fail", n.fail}}},
          {"checks", cj},
          {"cuda_architectures", in.cuda_architectures},
          {"environment", in.environment},
          {"live", in.live.to_json()}};
}

// ---- Live facts ----------------------------------------------------------------------------------

namespace {

std::optional<std::string> cgroup_devices_summary() {
  std::ifstream f("/proc/self/cgroup");
  std::string line, path;
  while (std::getline(f, line)) {
    const auto a = line.find(':');
    const auto b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string ctrl = line.substr(a + 1, b - a - 1);
    if (ctrl == "devices") path = line.substr(b + 1);
  }
  for (const std::string& p : {"/sys/fs/cgroup/devices" + path + "/devices.list", std::string("/sys/fs/cgroup/devices/devices.list")}) {
    std::ifstream d(p);
    if (!d) continue;
    std::vector<std::string> minors;
    std::string l;
    bool all = false;
    while (std::getline(d, l)) {
      if (l.rfind("a ", 0) == 0) all = true;
      std::smatch m;
      static const std::regex re(R"(^c 195:(\d+|\*) )");
      if (std::regex_search(l, m, re) && m[1] != "255") minors.push_back(m[1]);
    }
    if (all) return std::string("devices cgroup (v1): every device allowed");
    return "devices cgroup (v1) allows NVIDIA minor(s) " + (minors.empty() ? std::string("none") : join(minors, ","));
  }
  return std::nullopt;  // cgroup v2 keeps device rules in eBPF: not readable
}

void read_acs(const std::string& cuda_bus_id, GpuLive& g) {
  std::string bus = cuda_bus_id;
  std::transform(bus.begin(), bus.end(), bus.begin(), [](unsigned char c) { return std::tolower(c); });
  std::error_code ec;
  const fs::path real = fs::canonical("/sys/bus/pci/devices/" + bus, ec);
  if (ec) {
    g.acs_evidence = "ACS: no sysfs entry for " + bus;
    return;
  }
  static const std::regex pci_re(R"(^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$)");
  std::vector<std::string> bridges;
  for (const auto& part : real.parent_path())
    if (std::regex_match(part.string(), pci_re)) bridges.push_back(part.string());
  if (bridges.empty()) {
    g.acs_evidence = "ACS: no PCIe bridge above " + bus + " in sysfs";
    g.acs_redirect = false;
    return;
  }
  int unreadable = 0;
  std::vector<std::string> redirect, clean;
  for (const auto& b : bridges) {
    std::ifstream f("/sys/bus/pci/devices/" + b + "/config", std::ios::binary);
    std::vector<unsigned char> cfg((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (cfg.size() < 0x200) {
      ++unreadable;
      continue;
    }
    const auto ctrl = acs_control_from_config(cfg);
    std::ostringstream s;
    if (ctrl) s << b << " ctrl 0x" << std::hex << *ctrl;
    if (ctrl && acs_redirects_peers(*ctrl)) redirect.push_back(s.str());
    else clean.push_back(ctrl ? s.str() : b + " no ACS");
  }
  std::string ev = "ACS on " + std::to_string(bridges.size()) + " bridge(s) above " + bus + ": ";
  if (!redirect.empty()) ev += "redirect on " + join(redirect, ", ");
  else if (!clean.empty()) ev += "no redirect (" + join(clean, ", ") + ")";
  if (unreadable) ev += (redirect.empty() && clean.empty() ? "" : "; ") + std::to_string(unreadable) +
                        " not readable (the extended configuration space needs root)";
  g.acs_evidence = ev;
  if (!redirect.empty()) g.acs_redirect = true;
  else if (!unreadable) g.acs_redirect = false;
}

// Reads the PCIe link (and throttle reasons) while host-to-device copies keep the GPU busy.
void read_link_under_load(const Nvml& nvml, int cuda_index, int h, GpuLive& g) {
  constexpr size_t kBytes = size_t(64) << 20;
  std::atomic<bool> stop{false};
  std::atomic<int> state{0};  // 1 copying, -1 failed
  std::string error;
  std::thread worker([&] {
    void* dev = nullptr;
    void* host = nullptr;
    cudaError_t e = cudaSetDevice(cuda_index);
    if (e == cudaSuccess) e = cudaMalloc(&dev, kBytes);
    if (e == cudaSuccess) e = cudaMallocHost(&host, kBytes);
    if (e != cudaSuccess) {
      error = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
      (void)cudaGetLastError();
      state = -1;
    } else {
      state = 1;
      const auto t0 = std::chrono::steady_clock::now();
      while (!stop.load() && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5)) {
        if (cudaMemcpy(dev, host, kBytes, cudaMemcpyHostToDevice) != cudaSuccess) {
          (void)cudaGetLastError();
          break;
        }
      }
    }
    if (host) (void)cudaFreeHost(host);
    if (dev) (void)cudaFree(dev);
  });
  const auto t0 = std::chrono::steady_clock::now();
  while (state.load() == 0 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20))
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (state.load() == 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    PcieLink best;
    unsigned long long mask = 0;
    bool any_mask = false;
    for (int i = 0; i < 6; ++i) {
      const PcieLink l = nvml.pcie(h);
      auto up = [](std::optional<unsigned>& a, const std::optional<unsigned>& b) {
        if (b && (!a || *b > *a)) a = b;
      };
      up(best.gen_current, l.gen_current);
      up(best.width_current, l.width_current);
      up(best.gen_max, l.gen_max);
      up(best.width_max, l.width_max);
      const ClockSnapshot s = nvml.snapshot(h);
      if (s.throttle_mask) {
        mask |= *s.throttle_mask & ~0x1ull;  // not "idle": it is not, while copying
        any_mask = true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    g.pcie_loaded = best;
    if (any_mask) g.throttle_mask_loaded = mask;
    g.pcie_method = "read under load: pinned host-to-device copies of 64 MiB on a side thread, 6 readings, highest kept";
  }
  stop = true;
  worker.join();
  if (state.load() != 1) g.pcie_method = "could not load the GPU (" + error + "): link read at idle";
}

}  // namespace

LiveFacts gather_live_facts(const Nvml& nvml, const Environment& env, bool load_links) {
  LiveFacts f;
  f.recorded = true;
  f.self_pid = int(getpid());
  try {
    if (auto n = nvml.device_count()) f.nvml_device_count = int(*n);
    std::error_code ec;
    int nodes = 0;
    static const std::regex node_re(R"(^nvidia[0-9]+$)");
    for (const auto& e : fs::directory_iterator("/dev", ec))
      if (std::regex_match(e.path().filename().string(), node_re)) ++nodes;
    f.device_nodes = nodes;
    f.cgroup_devices = cgroup_devices_summary();
    const std::string drv = read_first_line("/proc/driver/nvidia/version");
    if (!drv.empty()) f.kernel_driver = drv;
    const std::string cmdline = read_first_line("/proc/cmdline");
    if (!cmdline.empty()) f.kernel_cmdline = cmdline;
    int groups = 0;
    if (fs::exists("/sys/kernel/iommu_groups", ec))
      for (const auto& e : fs::directory_iterator("/sys/kernel/iommu_groups", ec)) {
        (void)e;
        ++groups;
      }
    f.iommu_groups = groups;
    if (const char* v = std::getenv("CUDA_DEVICE_ORDER")) f.cuda_device_order = v;
    if (const char* v = std::getenv("NVIDIA_VISIBLE_DEVICES")) f.nvidia_visible_devices = v;

    const size_t n = env.gpus.size();
    // Processes first, before this process makes contexts of its own.
    for (const GpuInfo& gi : env.gpus) {
      GpuLive g;
      g.index = gi.index;
      if (gi.nvml_index) {
        const int h = *gi.nvml_index;
        g.processes = nvml.compute_processes(h);
        if (g.processes)
          for (const auto& p : *g.processes) g.process_names.push_back(read_first_line("/proc/" + std::to_string(p.pid) + "/comm"));
        g.ecc = nvml.ecc_counters(h);
        g.retired = nvml.retired_pages(h);
        g.remapped = nvml.remapped_rows(h);
      }
      if (!gi.pci_bus_id.empty()) read_acs(gi.pci_bus_id, g);
      f.gpus.push_back(std::move(g));
    }
    f.p2p.assign(n, std::vector<std::optional<bool>>(n));
    f.topology.assign(n, std::vector<std::optional<int>>(n));
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < n; ++j) {
        if (i == j) continue;
        int can = 0;
        if (cudaDeviceCanAccessPeer(&can, int(i), int(j)) == cudaSuccess) f.p2p[i][j] = can != 0;
        else (void)cudaGetLastError();
        const auto& a = env.gpus[i].nvml_index;
        const auto& b = env.gpus[j].nvml_index;
        if (a && b) f.topology[i][j] = nvml.topology_level(*a, *b);
      }
    for (size_t i = 0; i < n; ++i) {
      const GpuInfo& gi = env.gpus[i];
      GpuLive& g = f.gpus[i];
      if (!gi.nvml_index) {
        g.pcie_method = "no NVML handle for this GPU";
      } else if (!load_links) {
        g.pcie_method = "read at idle (--no-load)";
      } else {
        read_link_under_load(nvml, gi.index, *gi.nvml_index, g);
      }
    }
  } catch (const std::exception& e) {
    // Whatever was read so far stays; the rules report the rest as not available.
    (void)e;
  }
  return f;
}

int cmd_doctor(const Command& cmd) {
  Nvml nvml;
  const Environment env = capture_environment(nvml, ProfileDb::builtin());
  DoctorInput in;
  in.environment = env.json;
  in.cuda_architectures = NODEBENCH_CUDA_ARCHITECTURES;
  in.live = gather_live_facts(nvml, env, !cmd.validate.no_load);
  const std::vector<Check> checks = run_doctor_rules(in);
  if (cmd.options.json) {
    std::cout << doctor_report_json(in, checks).dump(2) << "\n";
  } else {
    std::cout << "nodebench doctor: " << env.gpus.size() << " GPU(s) visible, driver "
              << jstr(software_of(env.json), "driver_version").value_or("unknown") << ", CUDA runtime "
              << version_string(runtime_version(env.json)) << "\n\n";
    print_checks(checks, std::cout);
  }
  if (env.gpus.empty()) {
    std::cerr << no_gpu_diagnosis(env.cuda_error) << "\n";
    return kExitNoGpu;
  }
  return count_checks(checks).fail ? kExitCaseFailed : kExitOk;
}

}  // namespace nb
