// The live facts of the node: /proc, /sys (cgroup, IOMMU, ACS of the bridges above each GPU),
// NVML, peer access, and each GPU's PCIe link read while a side thread keeps it busy.
#include "check/doctor.hpp"
#include "check/doctor_util.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include <cuda_runtime_api.h>

namespace nb {

namespace fs = std::filesystem;
using namespace doctor_detail;

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

}  // namespace nb
