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
    {nvmlClocksEventReasonGpuIdle, "gpu_idle"},
    {nvmlClocksEventReasonApplicationsClocksSetting, "applications_clocks_setting"},
    {nvmlClocksEventReasonSwPowerCap, "sw_power_cap"},
    {nvmlClocksThrottleReasonHwSlowdown, "hw_slowdown"},
    {nvmlClocksEventReasonSyncBoost, "sync_boost"},
    {nvmlClocksEventReasonSwThermalSlowdown, "sw_thermal_slowdown"},
    {nvmlClocksThrottleReasonHwThermalSlowdown, "hw_thermal_slowdown"},
    {nvmlClocksThrottleReasonHwPowerBrakeSlowdown, "hw_power_brake_slowdown"},
    {nvmlClocksEventReasonDisplayClockSetting, "display_clock_setting"},
};
constexpr unsigned long long kThrottlingBits = nvmlClocksThrottleReasonHwSlowdown | nvmlClocksEventReasonSwThermalSlowdown |
                                               nvmlClocksThrottleReasonHwThermalSlowdown |
                                               nvmlClocksThrottleReasonHwPowerBrakeSlowdown;
constexpr unsigned long long kPowerCapBit = nvmlClocksEventReasonSwPowerCap;

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
  bind(lib_, a.nvmlInit_v2, {"nvmlInit_v2", "nvmlInit"});
  bind(lib_, a.nvmlShutdown, {"nvmlShutdown"});
  bind(lib_, a.nvmlSystemGetDriverVersion, {"nvmlSystemGetDriverVersion"});
  bind(lib_, a.nvmlSystemGetCudaDriverVersion_v2, {"nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"});
  bind(lib_, a.nvmlDeviceGetCount_v2, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"});
  bind(lib_, a.nvmlDeviceGetHandleByIndex_v2, {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"});
  bind(lib_, a.nvmlDeviceGetUUID, {"nvmlDeviceGetUUID"});
  bind(lib_, a.nvmlDeviceGetName, {"nvmlDeviceGetName"});
  bind(lib_, a.nvmlDeviceGetCudaComputeCapability, {"nvmlDeviceGetCudaComputeCapability"});
  bind(lib_, a.nvmlDeviceGetPciInfo_v3, {"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2"});
  bind(lib_, a.nvmlDeviceGetCurrPcieLinkGeneration, {"nvmlDeviceGetCurrPcieLinkGeneration"});
  bind(lib_, a.nvmlDeviceGetMaxPcieLinkGeneration, {"nvmlDeviceGetMaxPcieLinkGeneration"});
  bind(lib_, a.nvmlDeviceGetCurrPcieLinkWidth, {"nvmlDeviceGetCurrPcieLinkWidth"});
  bind(lib_, a.nvmlDeviceGetMaxPcieLinkWidth, {"nvmlDeviceGetMaxPcieLinkWidth"});
  bind(lib_, a.nvmlDeviceGetClockInfo, {"nvmlDeviceGetClockInfo"});
  bind(lib_, a.nvmlDeviceGetMaxClockInfo, {"nvmlDeviceGetMaxClockInfo"});
  bind(lib_, a.nvmlDeviceGetTemperature, {"nvmlDeviceGetTemperature"});
  bind(lib_, a.nvmlDeviceGetPowerUsage, {"nvmlDeviceGetPowerUsage"});
  bind(lib_, a.nvmlDeviceGetPowerManagementLimit, {"nvmlDeviceGetPowerManagementLimit"});
  bind(lib_, a.nvmlDeviceGetCurrentClocksEventReasons, {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"});
  bind(lib_, a.nvmlDeviceGetEccMode, {"nvmlDeviceGetEccMode"});
  bind(lib_, a.nvmlDeviceGetPersistenceMode, {"nvmlDeviceGetPersistenceMode"});
  bind(lib_, a.nvmlDeviceGetMigMode, {"nvmlDeviceGetMigMode"});
  bind(lib_, a.nvmlDeviceGetTopologyCommonAncestor, {"nvmlDeviceGetTopologyCommonAncestor"});
  bind(lib_, a.nvmlDeviceGetP2PStatus, {"nvmlDeviceGetP2PStatus"});
  bind(lib_, a.nvmlDeviceGetTotalEccErrors, {"nvmlDeviceGetTotalEccErrors"});
  bind(lib_, a.nvmlDeviceGetRetiredPages, {"nvmlDeviceGetRetiredPages"});
  bind(lib_, a.nvmlDeviceGetRetiredPagesPendingStatus, {"nvmlDeviceGetRetiredPagesPendingStatus"});
  bind(lib_, a.nvmlDeviceGetRemappedRows, {"nvmlDeviceGetRemappedRows"});
  bind(lib_, a.nvmlDeviceGetComputeRunningProcesses_v3, {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"});
  bind(lib_, a.nvmlDeviceGetUtilizationRates, {"nvmlDeviceGetUtilizationRates"});
  bind(lib_, a.nvmlDeviceGetMemoryInfo, {"nvmlDeviceGetMemoryInfo"});
  bind(lib_, a.nvmlDeviceGetPcieThroughput, {"nvmlDeviceGetPcieThroughput"});
  bind(lib_, a.nvmlDeviceGetFieldValues, {"nvmlDeviceGetFieldValues"});
  bind(lib_, a.nvmlDeviceGetPcieReplayCounter, {"nvmlDeviceGetPcieReplayCounter"});
  bind(lib_, a.nvmlDeviceGetTemperatureThreshold, {"nvmlDeviceGetTemperatureThreshold"});
  bind(lib_, a.nvmlEventSetCreate, {"nvmlEventSetCreate"});
  bind(lib_, a.nvmlDeviceRegisterEvents, {"nvmlDeviceRegisterEvents"});
  bind(lib_, a.nvmlEventSetWait_v2, {"nvmlEventSetWait_v2", "nvmlEventSetWait"});
  bind(lib_, a.nvmlEventSetFree, {"nvmlEventSetFree"});
  bind(lib_, a.nvmlDeviceGetTotalEnergyConsumption, {"nvmlDeviceGetTotalEnergyConsumption"});
  if (!a.nvmlInit_v2 || !a.nvmlDeviceGetCount_v2 || !a.nvmlDeviceGetHandleByIndex_v2) {
    error_ = path + " lacks nvmlInit/nvmlDeviceGetCount/nvmlDeviceGetHandleByIndex";
    return;
  }
  if (const nvmlReturn_t rc = a.nvmlInit_v2(); rc != NVML_SUCCESS) {
    error_ = "nvmlInit failed with NVML status " + std::to_string(rc);
    return;
  }
  unsigned n = 0;
  if (a.nvmlDeviceGetCount_v2(&n) == NVML_SUCCESS) {
    for (unsigned i = 0; i < n; ++i) {
      nvmlDevice_t h = nullptr;
      handles_.push_back(a.nvmlDeviceGetHandleByIndex_v2(i, &h) == NVML_SUCCESS ? static_cast<void*>(h) : nullptr);
    }
  }
  available_ = true;
}

Nvml::~Nvml() {
  if (available_ && api_->nvmlShutdown) api_->nvmlShutdown();
  // The library stays loaded: unloading NVML at exit has crashed some drivers.
}

std::optional<std::string> Nvml::driver_version() const {
  char buf[96] = {};
  if (!available_ || !api_->nvmlSystemGetDriverVersion) return std::nullopt;
  if (api_->nvmlSystemGetDriverVersion(buf, sizeof buf) != NVML_SUCCESS) return std::nullopt;
  return std::string(buf);
}

std::optional<int> Nvml::cuda_driver_version() const {
  int v = 0;
  if (!available_ || !api_->nvmlSystemGetCudaDriverVersion_v2) return std::nullopt;
  if (api_->nvmlSystemGetCudaDriverVersion_v2(&v) != NVML_SUCCESS) return std::nullopt;
  return v;
}

std::optional<unsigned> Nvml::device_count() const {
  if (!available_) return std::nullopt;
  return unsigned(handles_.size());
}

std::optional<std::string> Nvml::pci_bus_id(int h) const {
  if (!available_ || !api_->nvmlDeviceGetPciInfo_v3 || h < 0 || size_t(h) >= handles_.size()) return std::nullopt;
  nvmlPciInfo_t info{};
  if (api_->nvmlDeviceGetPciInfo_v3(static_cast<nvmlDevice_t>(handles_[size_t(h)]), &info) != NVML_SUCCESS)
    return std::nullopt;
  return std::string(info.busId, strnlen(info.busId, sizeof info.busId));
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
  if (!api_->nvmlDeviceGetUUID || api_->nvmlDeviceGetUUID(dev, buf, sizeof buf) != NVML_SUCCESS) return std::nullopt;
  return std::string(buf);
}

std::optional<int> Nvml::compute_capability(int h) const {
  NB_NVML_HANDLE(h);
  int major = 0, minor = 0;
  if (!api_->nvmlDeviceGetCudaComputeCapability || api_->nvmlDeviceGetCudaComputeCapability(dev, &major, &minor) != NVML_SUCCESS || major <= 0) return std::nullopt;
  return major * 10 + minor;
}

std::optional<std::string> Nvml::name(int h) const {
  NB_NVML_HANDLE(h);
  char buf[96] = {};
  if (!api_->nvmlDeviceGetName || api_->nvmlDeviceGetName(dev, buf, sizeof buf) != NVML_SUCCESS) return std::nullopt;
  return std::string(buf);
}

PcieLink Nvml::pcie(int h) const {
  NB_NVML_HANDLE(h);
  PcieLink l;
  unsigned v = 0;
  if (api_->nvmlDeviceGetCurrPcieLinkGeneration && api_->nvmlDeviceGetCurrPcieLinkGeneration(dev, &v) == NVML_SUCCESS) l.gen_current = v;
  if (api_->nvmlDeviceGetMaxPcieLinkGeneration && api_->nvmlDeviceGetMaxPcieLinkGeneration(dev, &v) == NVML_SUCCESS) l.gen_max = v;
  if (api_->nvmlDeviceGetCurrPcieLinkWidth && api_->nvmlDeviceGetCurrPcieLinkWidth(dev, &v) == NVML_SUCCESS) l.width_current = v;
  if (api_->nvmlDeviceGetMaxPcieLinkWidth && api_->nvmlDeviceGetMaxPcieLinkWidth(dev, &v) == NVML_SUCCESS) l.width_max = v;
  return l;
}

std::optional<double> Nvml::sm_clock_mhz(int h) const {
  NB_NVML_HANDLE(h);
  unsigned v = 0;
  if (!api_->nvmlDeviceGetClockInfo || api_->nvmlDeviceGetClockInfo(dev, NVML_CLOCK_SM, &v) != NVML_SUCCESS) return std::nullopt;
  return double(v);
}

std::optional<double> Nvml::max_sm_clock_mhz(int h) const {
  NB_NVML_HANDLE(h);
  unsigned v = 0;
  if (!api_->nvmlDeviceGetMaxClockInfo || api_->nvmlDeviceGetMaxClockInfo(dev, NVML_CLOCK_SM, &v) != NVML_SUCCESS) return std::nullopt;
  return double(v);
}

std::optional<double> Nvml::max_mem_clock_mhz(int h) const {
  NB_NVML_HANDLE(h);
  unsigned v = 0;
  if (!api_->nvmlDeviceGetMaxClockInfo || api_->nvmlDeviceGetMaxClockInfo(dev, NVML_CLOCK_MEM, &v) != NVML_SUCCESS) return std::nullopt;
  return double(v);
}

ClockSnapshot Nvml::snapshot(int h) const {
  NB_NVML_HANDLE(h);
  ClockSnapshot s;
  unsigned v = 0;
  if (api_->nvmlDeviceGetClockInfo && api_->nvmlDeviceGetClockInfo(dev, NVML_CLOCK_SM, &v) == NVML_SUCCESS) s.sm_mhz = v;
  if (api_->nvmlDeviceGetClockInfo && api_->nvmlDeviceGetClockInfo(dev, NVML_CLOCK_MEM, &v) == NVML_SUCCESS) s.mem_mhz = v;
  if (api_->nvmlDeviceGetTemperature && api_->nvmlDeviceGetTemperature(dev, NVML_TEMPERATURE_GPU, &v) == NVML_SUCCESS) s.temperature_c = v;
  if (api_->nvmlDeviceGetPowerUsage && api_->nvmlDeviceGetPowerUsage(dev, &v) == NVML_SUCCESS) s.power_w = v / 1000.0;
  unsigned long long m = 0;
  if (api_->nvmlDeviceGetCurrentClocksEventReasons && api_->nvmlDeviceGetCurrentClocksEventReasons(dev, &m) == NVML_SUCCESS) s.throttle_mask = m;
  return s;
}

std::optional<unsigned long long> Nvml::total_energy_mj(int h) const {
  NB_NVML_HANDLE(h);
  unsigned long long mj = 0;
  if (!api_->nvmlDeviceGetTotalEnergyConsumption || api_->nvmlDeviceGetTotalEnergyConsumption(dev, &mj) != NVML_SUCCESS)
    return std::nullopt;
  return mj;
}

std::optional<bool> Nvml::ecc_enabled(int h) const {
  NB_NVML_HANDLE(h);
  nvmlEnableState_t cur = NVML_FEATURE_DISABLED, pend = NVML_FEATURE_DISABLED;
  if (!api_->nvmlDeviceGetEccMode || api_->nvmlDeviceGetEccMode(dev, &cur, &pend) != NVML_SUCCESS) return std::nullopt;
  return cur != 0;
}

std::optional<bool> Nvml::persistence_mode(int h) const {
  NB_NVML_HANDLE(h);
  nvmlEnableState_t m = NVML_FEATURE_DISABLED;
  if (!api_->nvmlDeviceGetPersistenceMode || api_->nvmlDeviceGetPersistenceMode(dev, &m) != NVML_SUCCESS) return std::nullopt;
  return m != 0;
}

std::optional<bool> Nvml::mig_mode(int h) const {
  NB_NVML_HANDLE(h);
  unsigned cur = 0, pend = 0;
  if (!api_->nvmlDeviceGetMigMode || api_->nvmlDeviceGetMigMode(dev, &cur, &pend) != NVML_SUCCESS) return std::nullopt;
  return cur != 0;
}

std::optional<double> Nvml::power_limit_w(int h) const {
  NB_NVML_HANDLE(h);
  unsigned mw = 0;
  if (!api_->nvmlDeviceGetPowerManagementLimit || api_->nvmlDeviceGetPowerManagementLimit(dev, &mw) != NVML_SUCCESS) return std::nullopt;
  return mw / 1000.0;
}

std::optional<unsigned long long> Nvml::pcie_replay_counter(int h) const {
  NB_NVML_HANDLE(h);
  unsigned v = 0;
  if (!api_->nvmlDeviceGetPcieReplayCounter || api_->nvmlDeviceGetPcieReplayCounter(dev, &v) != NVML_SUCCESS) return std::nullopt;
  return v;
}

std::optional<double> Nvml::slowdown_temperature_c(int h) const {
  NB_NVML_HANDLE(h);
  unsigned v = 0;
  if (!api_->nvmlDeviceGetTemperatureThreshold ||
      api_->nvmlDeviceGetTemperatureThreshold(dev, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN, &v) != NVML_SUCCESS || v == 0) return std::nullopt;
  return double(v);
}

std::optional<double> Nvml::shutdown_temperature_c(int h) const {
  NB_NVML_HANDLE(h);
  unsigned v = 0;
  if (!api_->nvmlDeviceGetTemperatureThreshold ||
      api_->nvmlDeviceGetTemperatureThreshold(dev, NVML_TEMPERATURE_THRESHOLD_SHUTDOWN, &v) != NVML_SUCCESS || v == 0) return std::nullopt;
  return double(v);
}

}  // namespace nb
