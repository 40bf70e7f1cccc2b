#include "node/nvml.hpp"
#include "node/nvml_api.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace nb {
namespace {


struct NamedBit {
  unsigned long long bit;
  const char* name;
};
constexpr NamedBit kReasons[] = {
    {0x1ull, "gpu_idle"},
    {0x2ull, "applications_clocks_setting"},
    {0x4ull, "sw_power_cap"},
    {0x8ull, "hw_slowdown"},
    {0x10ull, "sync_boost"},
    {0x20ull, "sw_thermal_slowdown"},
    {0x40ull, "hw_thermal_slowdown"},
    {0x80ull, "hw_power_brake_slowdown"},
    {0x100ull, "display_clock_setting"},
};
constexpr unsigned long long kThrottlingBits = 0x8ull | 0x20ull | 0x40ull | 0x80ull;
constexpr unsigned long long kPowerCapBit = 0x4ull;

std::string normalise_bus_id(std::string s) {
  // CUDA gives "0000:3B:00.0"; NVML "00000000:3B:00.0". Compare the last 12 characters, upper.
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
  if (s.size() > 12) s = s.substr(s.size() - 12);
  return s;
}

}  // namespace

std::vector<std::string> throttle_reason_names(unsigned long long mask) {
  std::vector<std::string> out;
  unsigned long long known = 0;
  for (const auto& r : kReasons) {
    known |= r.bit;
    if (mask & r.bit) out.emplace_back(r.name);
  }
  if (mask & ~known) out.emplace_back("other");
  return out;
}

bool is_throttling(unsigned long long mask) { return (mask & kThrottlingBits) != 0; }
bool is_power_capped(unsigned long long mask) { return (mask & kPowerCapBit) != 0; }



template <class F>
static void bind(void* lib, F& fn, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (void* p = dlsym(lib, n)) {
      fn = reinterpret_cast<F>(p);
      return;
    }
  }
}

Nvml::Nvml(const std::string& library) : api_(std::make_unique<Api>()) {
  const std::string path = library.empty() ? "libnvidia-ml.so.1" : library;
  lib_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib_) {
    const char* e = dlerror();
    error_ = path + " not loadable: " + (e ? e : "unknown");
    return;
  }
  Api& a = *api_;
  bind(lib_, a.init, {"nvmlInit_v2", "nvmlInit"});
  bind(lib_, a.shutdown, {"nvmlShutdown"});
  bind(lib_, a.system_driver_version, {"nvmlSystemGetDriverVersion"});
  bind(lib_, a.system_cuda_driver_version, {"nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"});
  bind(lib_, a.count, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"});
  bind(lib_, a.handle_by_index, {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"});
  bind(lib_, a.uuid, {"nvmlDeviceGetUUID"});
  bind(lib_, a.name, {"nvmlDeviceGetName"});
  bind(lib_, a.cuda_cc, {"nvmlDeviceGetCudaComputeCapability"});
  bind(lib_, a.pci_info, {"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2"});
  bind(lib_, a.curr_gen, {"nvmlDeviceGetCurrPcieLinkGeneration"});
  bind(lib_, a.max_gen, {"nvmlDeviceGetMaxPcieLinkGeneration"});
  bind(lib_, a.curr_width, {"nvmlDeviceGetCurrPcieLinkWidth"});
  bind(lib_, a.max_width, {"nvmlDeviceGetMaxPcieLinkWidth"});
  bind(lib_, a.clock, {"nvmlDeviceGetClockInfo"});
  bind(lib_, a.max_clock, {"nvmlDeviceGetMaxClockInfo"});
  bind(lib_, a.temperature, {"nvmlDeviceGetTemperature"});
  bind(lib_, a.power_usage, {"nvmlDeviceGetPowerUsage"});
  bind(lib_, a.power_limit, {"nvmlDeviceGetPowerManagementLimit"});
  bind(lib_, a.throttle, {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"});
  bind(lib_, a.ecc, {"nvmlDeviceGetEccMode"});
  bind(lib_, a.persistence, {"nvmlDeviceGetPersistenceMode"});
  bind(lib_, a.mig, {"nvmlDeviceGetMigMode"});
  bind(lib_, a.topology, {"nvmlDeviceGetTopologyCommonAncestor"});
  bind(lib_, a.p2p_status, {"nvmlDeviceGetP2PStatus"});
  bind(lib_, a.ecc_total, {"nvmlDeviceGetTotalEccErrors"});
  bind(lib_, a.retired_pages, {"nvmlDeviceGetRetiredPages"});
  bind(lib_, a.retired_pending, {"nvmlDeviceGetRetiredPagesPendingStatus"});
  bind(lib_, a.remapped_rows, {"nvmlDeviceGetRemappedRows"});
  bind(lib_, a.compute_procs, {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"});
  bind(lib_, a.utilization, {"nvmlDeviceGetUtilizationRates"});
  bind(lib_, a.memory, {"nvmlDeviceGetMemoryInfo"});
  bind(lib_, a.pcie_throughput, {"nvmlDeviceGetPcieThroughput"});
  bind(lib_, a.field_values, {"nvmlDeviceGetFieldValues"});
  bind(lib_, a.pcie_replay, {"nvmlDeviceGetPcieReplayCounter"});
  bind(lib_, a.temperature_threshold, {"nvmlDeviceGetTemperatureThreshold"});
  bind(lib_, a.event_set_create, {"nvmlEventSetCreate"});
  bind(lib_, a.register_events, {"nvmlDeviceRegisterEvents"});
  bind(lib_, a.event_set_wait, {"nvmlEventSetWait_v2", "nvmlEventSetWait"});
  bind(lib_, a.event_set_free, {"nvmlEventSetFree"});
  if (!a.init || !a.count || !a.handle_by_index) {
    error_ = path + " lacks nvmlInit/nvmlDeviceGetCount/nvmlDeviceGetHandleByIndex";
    return;
  }
  if (int rc = a.init(); rc != kSuccess) {
    error_ = "nvmlInit failed with NVML status " + std::to_string(rc);
    return;
  }
  unsigned n = 0;
  if (a.count(&n) == kSuccess) {
    for (unsigned i = 0; i < n; ++i) {
      nvmlDevice_t h = nullptr;
      handles_.push_back(a.handle_by_index(i, &h) == kSuccess ? h : nullptr);
    }
  }
  available_ = true;
}

Nvml::~Nvml() {
  if (available_ && api_->shutdown) api_->shutdown();
  // The library stays loaded: unloading NVML at exit has crashed some drivers.
}

std::optional<std::string> Nvml::driver_version() const {
  char buf[96] = {};
  if (!available_ || !api_->system_driver_version) return std::nullopt;
  if (api_->system_driver_version(buf, sizeof buf) != kSuccess) return std::nullopt;
  return std::string(buf);
}

std::optional<int> Nvml::cuda_driver_version() const {
  int v = 0;
  if (!available_ || !api_->system_cuda_driver_version) return std::nullopt;
  if (api_->system_cuda_driver_version(&v) != kSuccess) return std::nullopt;
  return v;
}

std::optional<unsigned> Nvml::device_count() const {
  if (!available_) return std::nullopt;
  return unsigned(handles_.size());
}

std::optional<std::string> Nvml::pci_bus_id(int h) const {
  if (!available_ || !api_->pci_info || h < 0 || size_t(h) >= handles_.size()) return std::nullopt;
  // nvmlPciInfo_t starts with char busIdLegacy[16], then domain, bus, device, pciDeviceId,
  // pciSubSystemId, then char busId[32]. 128 bytes is more than the struct.
  unsigned char info[128] = {};
  if (api_->pci_info(handles_[size_t(h)], info) != kSuccess) return std::nullopt;
  const char* bus = reinterpret_cast<const char*>(info + 16 + 5 * sizeof(unsigned));
  return std::string(bus, strnlen(bus, 32));
}

std::optional<int> Nvml::find_by_pci(const std::string& cuda_bus_id) const {
  const std::string want = normalise_bus_id(cuda_bus_id);
  for (size_t i = 0; i < handles_.size(); ++i) {
    auto id = pci_bus_id(int(i));
    if (id && normalise_bus_id(*id) == want) return int(i);
  }
  return std::nullopt;
}


std::optional<std::string> Nvml::uuid(int h) const {
  NB_NVML_HANDLE(h);
  char buf[96] = {};
  if (!api_->uuid || api_->uuid(dev, buf, sizeof buf) != kSuccess) return std::nullopt;
  return std::string(buf);
}

std::optional<int> Nvml::compute_capability(int h) const {
  NB_NVML_HANDLE(h);
  int major = 0, minor = 0;
  if (!api_->cuda_cc || api_->cuda_cc(dev, &major, &minor) != kSuccess || major <= 0) return std::nullopt;
  return major * 10 + minor;
}

std::optional<std::string> Nvml::name(int h) const {
  NB_NVML_HANDLE(h);
  char buf[96] = {};
  if (!api_->name || api_->name(dev, buf, sizeof buf) != kSuccess) return std::nullopt;
  return std::string(buf);
}

PcieLink Nvml::pcie(int h) const {
  NB_NVML_HANDLE(h);
  PcieLink l;
  unsigned v = 0;
  if (api_->curr_gen && api_->curr_gen(dev, &v) == kSuccess) l.gen_current = v;
  if (api_->max_gen && api_->max_gen(dev, &v) == kSuccess) l.gen_max = v;
  if (api_->curr_width && api_->curr_width(dev, &v) == kSuccess) l.width_current = v;
  if (api_->max_width && api_->max_width(dev, &v) == kSuccess) l.width_max = v;
  return l;
}

std::optional<double> Nvml::sm_clock_mhz(int h) const {
  NB_NVML_HANDLE(h);
  unsigned v = 0;
  if (!api_->clock || api_->clock(dev, kClockSm, &v) != kSuccess) return std::nullopt;
  return double(v);
}

std::optional<double> Nvml::max_sm_clock_mhz(int h) const {
  NB_NVML_HANDLE(h);
  unsigned v = 0;
  if (!api_->max_clock || api_->max_clock(dev, kClockSm, &v) != kSuccess) return std::nullopt;
  return double(v);
}

std::optional<double> Nvml::max_mem_clock_mhz(int h) const {
  NB_NVML_HANDLE(h);
  unsigned v = 0;
  if (!api_->max_clock || api_->max_clock(dev, kClockMem, &v) != kSuccess) return std::nullopt;
  return double(v);
}

ClockSnapshot Nvml::snapshot(int h) const {
  NB_NVML_HANDLE(h);
  ClockSnapshot s;
  unsigned v = 0;
  if (api_->clock && api_->clock(dev, kClockSm, &v) == kSuccess) s.sm_mhz = v;
  if (api_->clock && api_->clock(dev, kClockMem, &v) == kSuccess) s.mem_mhz = v;
  if (api_->temperature && api_->temperature(dev, kTemperatureGpu, &v) == kSuccess) s.temperature_c = v;
  if (api_->power_usage && api_->power_usage(dev, &v) == kSuccess) s.power_w = v / 1000.0;
  unsigned long long m = 0;
  if (api_->throttle && api_->throttle(dev, &m) == kSuccess) s.throttle_mask = m;
  (void)kClockGraphics;
  return s;
}

std::optional<bool> Nvml::ecc_enabled(int h) const {
  NB_NVML_HANDLE(h);
  int cur = 0, pend = 0;
  if (!api_->ecc || api_->ecc(dev, &cur, &pend) != kSuccess) return std::nullopt;
  return cur != 0;
}

std::optional<bool> Nvml::persistence_mode(int h) const {
  NB_NVML_HANDLE(h);
  int m = 0;
  if (!api_->persistence || api_->persistence(dev, &m) != kSuccess) return std::nullopt;
  return m != 0;
}

std::optional<bool> Nvml::mig_mode(int h) const {
  NB_NVML_HANDLE(h);
  unsigned cur = 0, pend = 0;
  if (!api_->mig || api_->mig(dev, &cur, &pend) != kSuccess) return std::nullopt;
  return cur != 0;
}

std::optional<double> Nvml::power_limit_w(int h) const {
  NB_NVML_HANDLE(h);
  unsigned mw = 0;
  if (!api_->power_limit || api_->power_limit(dev, &mw) != kSuccess) return std::nullopt;
  return mw / 1000.0;
}

std::optional<unsigned long long> Nvml::pcie_replay_counter(int h) const {
  NB_NVML_HANDLE(h);
  unsigned v = 0;
  if (!api_->pcie_replay || api_->pcie_replay(dev, &v) != kSuccess) return std::nullopt;
  return v;
}

std::optional<double> Nvml::slowdown_temperature_c(int h) const {
  NB_NVML_HANDLE(h);
  unsigned v = 0;
  // NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1
  if (!api_->temperature_threshold || api_->temperature_threshold(dev, 1, &v) != kSuccess || v == 0) return std::nullopt;
  return double(v);
}

std::optional<double> Nvml::shutdown_temperature_c(int h) const {
  NB_NVML_HANDLE(h);
  unsigned v = 0;
  // NVML_TEMPERATURE_THRESHOLD_SHUTDOWN = 0
  if (!api_->temperature_threshold || api_->temperature_threshold(dev, 0, &v) != kSuccess || v == 0) return std::nullopt;
  return double(v);
}

}  // namespace nb
