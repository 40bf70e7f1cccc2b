#include "node/nvml.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace nb {
namespace {

// ABI subset of nvml.h (stable across driver versions: these are the versioned symbols the
// header maps its names to).
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
constexpr nvmlReturn_t kSuccess = 0;
constexpr int kClockGraphics = 0, kClockSm = 1, kClockMem = 2;
constexpr int kTemperatureGpu = 0;

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

struct Nvml::Api {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  nvmlReturn_t (*system_driver_version)(char*, unsigned) = nullptr;
  nvmlReturn_t (*system_cuda_driver_version)(int*) = nullptr;
  nvmlReturn_t (*count)(unsigned*) = nullptr;
  nvmlReturn_t (*handle_by_index)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*cuda_cc)(nvmlDevice_t, int*, int*) = nullptr;
  nvmlReturn_t (*pci_info)(nvmlDevice_t, void*) = nullptr;
  nvmlReturn_t (*curr_gen)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*max_gen)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*curr_width)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*max_width)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*max_clock)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*power_usage)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*power_limit)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*throttle)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*ecc)(nvmlDevice_t, int*, int*) = nullptr;
  nvmlReturn_t (*persistence)(nvmlDevice_t, int*) = nullptr;
  nvmlReturn_t (*mig)(nvmlDevice_t, unsigned*, unsigned*) = nullptr;
  nvmlReturn_t (*topology)(nvmlDevice_t, nvmlDevice_t, int*) = nullptr;
  // nvmlDeviceGetP2PStatus(device1, device2, nvmlGpuP2PCapsIndex_t, nvmlGpuP2PStatus_t*)
  nvmlReturn_t (*p2p_status)(nvmlDevice_t, nvmlDevice_t, int, int*) = nullptr;
  // nvmlDeviceGetTotalEccErrors(device, nvmlMemoryErrorType_t, nvmlEccCounterType_t, unsigned long long*)
  nvmlReturn_t (*ecc_total)(nvmlDevice_t, int, int, unsigned long long*) = nullptr;
  // nvmlDeviceGetRetiredPages(device, nvmlPageRetirementCause_t, unsigned int* count, unsigned long long* addresses)
  nvmlReturn_t (*retired_pages)(nvmlDevice_t, int, unsigned*, unsigned long long*) = nullptr;
  // nvmlDeviceGetRetiredPagesPendingStatus(device, nvmlEnableState_t*)
  nvmlReturn_t (*retired_pending)(nvmlDevice_t, int*) = nullptr;
  // nvmlDeviceGetRemappedRows(device, unsigned* corrRows, unsigned* uncRows, unsigned* isPending, unsigned* failureOccurred)
  nvmlReturn_t (*remapped_rows)(nvmlDevice_t, unsigned*, unsigned*, unsigned*, unsigned*) = nullptr;
  // nvmlDeviceGetComputeRunningProcesses_v3/_v2(device, unsigned* infoCount, nvmlProcessInfo_t* infos)
  nvmlReturn_t (*compute_procs)(nvmlDevice_t, unsigned*, void*) = nullptr;
  // nvmlDeviceGetUtilizationRates(device, nvmlUtilization_t* {unsigned gpu, memory})
  nvmlReturn_t (*utilization)(nvmlDevice_t, unsigned*) = nullptr;
  // nvmlDeviceGetMemoryInfo(device, nvmlMemory_t* {unsigned long long total, free, used})
  nvmlReturn_t (*memory)(nvmlDevice_t, unsigned long long*) = nullptr;
  // nvmlDeviceGetPcieThroughput(device, nvmlPcieUtilCounter_t (0 TX, 1 RX), unsigned* KB/s)
  nvmlReturn_t (*pcie_throughput)(nvmlDevice_t, int, unsigned*) = nullptr;
  // nvmlDeviceGetFieldValues(device, int count, nvmlFieldValue_t* values)
  nvmlReturn_t (*field_values)(nvmlDevice_t, int, void*) = nullptr;
  // nvmlDeviceGetPcieReplayCounter(device, unsigned* value)
  nvmlReturn_t (*pcie_replay)(nvmlDevice_t, unsigned*) = nullptr;
  // nvmlDeviceGetTemperatureThreshold(device, nvmlTemperatureThresholds_t, unsigned* degrees C)
  nvmlReturn_t (*temperature_threshold)(nvmlDevice_t, int, unsigned*) = nullptr;
  // nvmlEventSetCreate(nvmlEventSet_t*), nvmlDeviceRegisterEvents(device, unsigned long long types,
  // set), nvmlEventSetWait_v2(set, nvmlEventData_t*, unsigned timeout_ms), nvmlEventSetFree(set)
  nvmlReturn_t (*event_set_create)(void**) = nullptr;
  nvmlReturn_t (*register_events)(nvmlDevice_t, unsigned long long, void*) = nullptr;
  nvmlReturn_t (*event_set_wait)(void*, void*, unsigned) = nullptr;
  nvmlReturn_t (*event_set_free)(void*) = nullptr;
  // nvmlDeviceGetTotalEnergyConsumption(device, unsigned long long* mJ since the driver loaded; Volta and newer)
  nvmlReturn_t (*total_energy)(nvmlDevice_t, unsigned long long*) = nullptr;
};

// nvmlFieldValue_t (nvml.h): 40 bytes.
struct NvmlFieldValue {
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;
  long long latencyUsec;
  int valueType;  // nvmlValueType_t: 0 double, 1 unsigned int, 2 unsigned long, 3 unsigned long long, 4 signed long long
  nvmlReturn_t nvmlReturn;
  union {
    double d;
    unsigned int ui;
    unsigned long ul;
    unsigned long long ull;
    long long sll;
  } value;
};
static_assert(sizeof(NvmlFieldValue) == 40, "nvmlFieldValue_t is 40 bytes");
constexpr unsigned kFieldNvlinkDataTx = 138;  // NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX (KiB, cumulative)
constexpr unsigned kFieldNvlinkDataRx = 139;  // NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX
constexpr unsigned kScopeAllLinks = 0xFFFFFFFFu;

// nvmlProcessInfo_t as the _v2 and _v3 entry points take it (nvmlProcessInfo_v2_t in nvml.h).
struct NvmlProcessInfo {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
constexpr nvmlReturn_t kErrorInsufficientSize = 7;
constexpr unsigned long long kValueNotAvailable = ~0ull;  // NVML_VALUE_NOT_AVAILABLE

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
  bind(lib_, a.total_energy, {"nvmlDeviceGetTotalEnergyConsumption"});
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

#define NB_NVML_HANDLE(h) \
  if (!available_ || h < 0 || size_t(h) >= handles_.size() || !handles_[size_t(h)]) return {}; \
  nvmlDevice_t dev = handles_[size_t(h)]

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

std::optional<unsigned long long> Nvml::total_energy_mj(int h) const {
  NB_NVML_HANDLE(h);
  unsigned long long mj = 0;
  if (!api_->total_energy || api_->total_energy(dev, &mj) != kSuccess) return std::nullopt;
  return mj;
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

// nvmlEventData_t (nvml.h).
struct NvmlEventData {
  void* device;
  unsigned long long eventType;
  unsigned long long eventData;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
constexpr unsigned long long kEventXid = 0x8ull;  // nvmlEventTypeXidCriticalError

std::optional<void*> Nvml::xid_events_open(int h) const {
  NB_NVML_HANDLE(h);
  if (!api_->event_set_create || !api_->register_events || !api_->event_set_wait) return std::nullopt;
  void* set = nullptr;
  if (api_->event_set_create(&set) != kSuccess || !set) return std::nullopt;
  if (api_->register_events(dev, kEventXid, set) != kSuccess) {
    if (api_->event_set_free) api_->event_set_free(set);
    return std::nullopt;
  }
  return set;
}

std::vector<unsigned long long> Nvml::xid_events_poll(void* set) const {
  std::vector<unsigned long long> out;
  if (!available_ || !set || !api_->event_set_wait) return out;
  for (int k = 0; k < 64; ++k) {  // what is pending now, never waiting
    NvmlEventData d{};
    if (api_->event_set_wait(set, &d, 0) != kSuccess) break;
    if (d.eventType & kEventXid) out.push_back(d.eventData);
  }
  return out;
}

void Nvml::xid_events_close(void* set) const {
  if (available_ && set && api_->event_set_free) api_->event_set_free(set);
}

EccCounters Nvml::ecc_counters(int h) const {
  NB_NVML_HANDLE(h);
  EccCounters c;
  if (!api_->ecc_total) return c;
  // nvmlMemoryErrorType_t: 0 corrected, 1 uncorrected; nvmlEccCounterType_t: 0 volatile, 1 aggregate.
  unsigned long long v = 0;
  if (api_->ecc_total(dev, 0, 0, &v) == kSuccess) c.volatile_corrected = v;
  if (api_->ecc_total(dev, 1, 0, &v) == kSuccess) c.volatile_uncorrected = v;
  if (api_->ecc_total(dev, 0, 1, &v) == kSuccess) c.aggregate_corrected = v;
  if (api_->ecc_total(dev, 1, 1, &v) == kSuccess) c.aggregate_uncorrected = v;
  return c;
}

RetiredPages Nvml::retired_pages(int h) const {
  NB_NVML_HANDLE(h);
  RetiredPages r;
  // nvmlPageRetirementCause_t: 0 multiple single-bit errors, 1 double-bit error. A count of 0 with
  // no buffer asks for the count: success when there are none, INSUFFICIENT_SIZE with the count.
  if (api_->retired_pages) {
    for (int cause : {0, 1}) {
      unsigned n = 0;
      const nvmlReturn_t rc = api_->retired_pages(dev, cause, &n, nullptr);
      if (rc == kSuccess || rc == kErrorInsufficientSize) (cause == 0 ? r.single_bit : r.double_bit) = n;
    }
  }
  int pending = 0;
  if (api_->retired_pending && api_->retired_pending(dev, &pending) == kSuccess) r.pending = pending != 0;
  return r;
}

std::optional<RemappedRows> Nvml::remapped_rows(int h) const {
  NB_NVML_HANDLE(h);
  unsigned corr = 0, unc = 0, pending = 0, failure = 0;
  if (!api_->remapped_rows || api_->remapped_rows(dev, &corr, &unc, &pending, &failure) != kSuccess)
    return std::nullopt;
  return RemappedRows{corr, unc, pending != 0, failure != 0};
}

std::optional<std::vector<ProcessUse>> Nvml::compute_processes(int h) const {
  NB_NVML_HANDLE(h);
  if (!api_->compute_procs) return std::nullopt;
  std::vector<NvmlProcessInfo> buf(64);
  for (int attempt = 0; attempt < 4; ++attempt) {
    unsigned n = unsigned(buf.size());
    const nvmlReturn_t rc = api_->compute_procs(dev, &n, buf.data());
    if (rc == kErrorInsufficientSize) {
      buf.resize(size_t(n) + 16);  // processes may start between the calls
      continue;
    }
    if (rc != kSuccess) return std::nullopt;
    std::vector<ProcessUse> out;
    for (unsigned i = 0; i < n && i < buf.size(); ++i) {
      ProcessUse p;
      p.pid = buf[i].pid;
      if (buf[i].usedGpuMemory != kValueNotAvailable) p.used_bytes = buf[i].usedGpuMemory;
      out.push_back(p);
    }
    return out;
  }
  return std::nullopt;
}

std::optional<Utilization> Nvml::utilization(int h) const {
  NB_NVML_HANDLE(h);
  unsigned v[2] = {0, 0};
  if (!api_->utilization || api_->utilization(dev, v) != kSuccess) return std::nullopt;
  return Utilization{v[0], v[1]};
}

std::optional<MemoryInfo> Nvml::memory_info(int h) const {
  NB_NVML_HANDLE(h);
  unsigned long long v[3] = {0, 0, 0};
  if (!api_->memory || api_->memory(dev, v) != kSuccess) return std::nullopt;
  return MemoryInfo{v[0], v[1], v[2]};
}

std::optional<double> Nvml::mem_clock_mhz(int h) const {
  NB_NVML_HANDLE(h);
  unsigned v = 0;
  if (!api_->clock || api_->clock(dev, kClockMem, &v) != kSuccess) return std::nullopt;
  return double(v);
}

std::optional<double> Nvml::pcie_tx_bytes_per_s(int h) const {
  NB_NVML_HANDLE(h);
  unsigned kb = 0;
  if (!api_->pcie_throughput || api_->pcie_throughput(dev, 0, &kb) != kSuccess) return std::nullopt;
  return kb * 1000.0;  // NVML reports KB/s
}

std::optional<double> Nvml::pcie_rx_bytes_per_s(int h) const {
  NB_NVML_HANDLE(h);
  unsigned kb = 0;
  if (!api_->pcie_throughput || api_->pcie_throughput(dev, 1, &kb) != kSuccess) return std::nullopt;
  return kb * 1000.0;
}

std::optional<NvlinkCounters> Nvml::nvlink_counters(int h) const {
  NB_NVML_HANDLE(h);
  if (!api_->field_values) return std::nullopt;
  NvmlFieldValue v[2];
  std::memset(v, 0, sizeof v);
  v[0].fieldId = kFieldNvlinkDataTx;
  v[1].fieldId = kFieldNvlinkDataRx;
  v[0].scopeId = v[1].scopeId = kScopeAllLinks;
  if (api_->field_values(dev, 2, v) != kSuccess) return std::nullopt;
  auto kib = [](const NvmlFieldValue& f) -> std::optional<unsigned long long> {
    if (f.nvmlReturn != kSuccess) return std::nullopt;
    switch (f.valueType) {
      case 0: return f.value.d >= 0 ? std::optional<unsigned long long>((unsigned long long)f.value.d) : std::nullopt;
      case 1: return f.value.ui;
      case 2: return f.value.ul;
      case 3: return f.value.ull;
      case 4: return f.value.sll >= 0 ? std::optional<unsigned long long>((unsigned long long)f.value.sll) : std::nullopt;
      default: return std::nullopt;
    }
  };
  const auto tx = kib(v[0]), rx = kib(v[1]);
  if (!tx || !rx) return std::nullopt;
  return NvlinkCounters{*tx * 1024ull, *rx * 1024ull};
}

std::optional<int> Nvml::topology_level(int a, int b) const {
  if (!available_ || !api_->topology) return std::nullopt;
  if (a < 0 || b < 0 || size_t(a) >= handles_.size() || size_t(b) >= handles_.size()) return std::nullopt;
  int level = 0;
  if (api_->topology(handles_[size_t(a)], handles_[size_t(b)], &level) != kSuccess) return std::nullopt;
  return level;
}

std::optional<bool> Nvml::nvlink_p2p(int a, int b) const {
  if (!available_ || !api_->p2p_status) return std::nullopt;
  if (a < 0 || b < 0 || size_t(a) >= handles_.size() || size_t(b) >= handles_.size()) return std::nullopt;
  constexpr int kP2pCapsNvlink = 2;  // NVML_P2P_CAPS_INDEX_NVLINK
  constexpr int kP2pStatusOk = 0;    // NVML_P2P_STATUS_OK
  int status = -1;
  if (api_->p2p_status(handles_[size_t(a)], handles_[size_t(b)], kP2pCapsNvlink, &status) != kSuccess) return std::nullopt;
  return status == kP2pStatusOk;
}

}  // namespace nb
