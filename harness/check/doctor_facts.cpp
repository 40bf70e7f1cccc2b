// The live facts and the doctor input in JSON (fixtures, --json, captured files), and the pure
// readings of PCIe facts (topology level names, ACS control).
#include "check/doctor.hpp"
#include "check/doctor_util.hpp"

#include <string>
#include <vector>

namespace nb {

using namespace doctor_detail;

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

}  // namespace nb
