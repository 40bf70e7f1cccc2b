// Rules on the links: each GPU's PCIe link, peer access and topology, the IOMMU and ACS.
#include "check/doctor.hpp"
#include "check/doctor_util.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace nb {

using namespace doctor_detail;

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


namespace {

// The GPUs of a node and the NVML topology level between two of them (by position), either way round.
struct PairLevels {
  const std::vector<GpuView>& gpus;
  const std::vector<std::vector<std::optional<int>>>& topology;
  std::optional<int> level(size_t i, size_t j) const {
    const auto& T = topology;
    if (i < T.size() && j < T[i].size() && T[i][j]) return T[i][j];
    if (j < T.size() && i < T[j].size() && T[j][i]) return T[j][i];
    return std::nullopt;
  }
  // "0->1 (SYS), 2->3" for pairs of GPU indices.
  std::string describe(const std::vector<std::pair<int, int>>& v) const {
    std::vector<std::string> s;
    for (const auto& [a, b] : v) {
      size_t ia = 0, ib = 0;
      for (size_t k = 0; k < gpus.size(); ++k) {
        if (gpus[k].index == a) ia = k;
        if (gpus[k].index == b) ib = k;
      }
      const auto lv = level(ia, ib);
      s.push_back(std::to_string(a) + "->" + std::to_string(b) + (lv ? " (" + topology_name(*lv) + ")" : ""));
    }
    return join(s, ", ");
  }
};

Check p2p_access(const std::vector<std::vector<std::optional<bool>>>& P, const PairLevels& pl) {
  const size_t n = pl.gpus.size();
  if (P.size() < n) return make_check("p2p.access", std::nullopt, Severity::info, "peer access not recorded");
  std::vector<std::pair<int, int>> near_blocked, far_blocked;
  int known = 0;
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j) {
      if (i == j || j >= P[i].size() || !P[i][j]) continue;
      ++known;
      if (*P[i][j]) continue;
      const auto lv = pl.level(i, j);
      (lv && *lv >= 40 ? far_blocked : near_blocked).push_back({pl.gpus[i].index, pl.gpus[j].index});
    }
  std::string ev = "cudaDeviceCanAccessPeer over " + std::to_string(known) + " ordered pairs";
  const std::string fix =
      "Without peer access, copies between these GPUs go through host memory (and NCCL uses shared memory): "
      "keep multi-GPU jobs on GPUs that reach each other (nvidia-smi topo -m, nvidia-smi topo -p2p r). Pairs under "
      "one PCIe switch or host bridge should reach each other: if not, ACS or the IOMMU redirects their traffic "
      "(p2p.iommu), or the GPUs are virtualised without P2P. Pairs across CPU sockets usually cannot.";
  if (known == 0) return make_check("p2p.access", std::nullopt, Severity::info, "peer access not available", ev);
  if (!near_blocked.empty())
    return make_check("p2p.access", std::nullopt, Severity::warn,
                      std::to_string(near_blocked.size() + far_blocked.size()) + " GPU pair(s) cannot access each other",
                      ev + ": blocked " + pl.describe(near_blocked) +
                          (far_blocked.empty() ? std::string() : ", " + pl.describe(far_blocked)),
                      fix);
  if (!far_blocked.empty())
    return make_check("p2p.access", std::nullopt, Severity::info,
                      std::to_string(far_blocked.size()) + " pair(s) across host bridges or sockets cannot access each other",
                      ev + ": blocked " + pl.describe(far_blocked), fix);
  return make_check("p2p.access", std::nullopt, Severity::ok, "every GPU pair can access its peer", ev);
}

Check p2p_topology(const PairLevels& pl) {
  const size_t n = pl.gpus.size();
  std::vector<std::pair<int, int>> sys, node;
  int known = 0;
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + 1; j < n; ++j) {
      const auto lv = pl.level(i, j);
      if (!lv) continue;
      ++known;
      if (*lv >= 50) sys.push_back({pl.gpus[i].index, pl.gpus[j].index});
      else if (*lv >= 40) node.push_back({pl.gpus[i].index, pl.gpus[j].index});
    }
  const std::string tev = "NVML topology over " + std::to_string(known) + " pair(s)" +
                          (sys.empty() ? std::string() : "; SYS (across sockets): " + level_names(sys)) +
                          (node.empty() ? std::string() : "; NODE: " + level_names(node));
  if (known == 0) return make_check("p2p.topology", std::nullopt, Severity::info, "GPU topology not available (no NVML)", tev);
  if (!sys.empty())
    return make_check("p2p.topology", std::nullopt, Severity::warn, std::to_string(sys.size()) + " GPU pair(s) cross CPU sockets",
                      tev,
                      "Traffic between these GPUs crosses the inter-socket link (UPI/Infinity Fabric): peer copies "
                      "and all-reduce run far below PCIe speed or go through host memory. For communication-bound jobs "
                      "(large gradients for little compute per step), place them on GPUs of one socket (nvidia-smi "
                      "topo -m); a compute-bound job (ResNet-50 at a large batch) may still gain from every GPU: "
                      "nodebench advise weighs the measured all-reduce against the step. Bind each process to its "
                      "GPU's NUMA node (numactl --cpunodebind), and expect cross-socket all-reduce to be slower.");
  if (!node.empty())
    return make_check("p2p.topology", std::nullopt, Severity::info,
                      std::to_string(node.size()) + " GPU pair(s) meet only at the host bridges of one NUMA node", tev);
  return make_check("p2p.topology", std::nullopt, Severity::ok, "every GPU pair is under one PCIe switch or board", tev);
}

}  // namespace

std::vector<Check> rule_p2p(const DoctorInput& in) {
  const auto gpus = gpus_of(in.environment);
  if (gpus.size() < 2)
    return {make_check("p2p.access", std::nullopt, Severity::ok, "fewer than two GPUs: no peer pairs"),
            make_check("p2p.topology", std::nullopt, Severity::ok, "fewer than two GPUs: no peer pairs")};
  const PairLevels pl{gpus, in.live.topology};
  return {p2p_access(in.live.p2p, pl), p2p_topology(pl)};
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

}  // namespace nb
