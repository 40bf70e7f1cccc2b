// What node/nvml*.cpp share: the NVML entry points bound at run time (Nvml::Api) and the parts
// of nvml.h they pass. Internal to those files.
#pragma once
#include "node/nvml.hpp"

namespace nb {

// ABI subset of nvml.h (stable across driver versions: these are the versioned symbols the
// header maps its names to).
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
constexpr nvmlReturn_t kSuccess = 0;
constexpr int kClockGraphics = 0, kClockSm = 1, kClockMem = 2;
constexpr int kTemperatureGpu = 0;

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

// nvmlEventData_t (nvml.h).
struct NvmlEventData {
  void* device;
  unsigned long long eventType;
  unsigned long long eventData;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
constexpr unsigned long long kEventXid = 0x8ull;  // nvmlEventTypeXidCriticalError

#define NB_NVML_HANDLE(h) \
  if (!available_ || h < 0 || size_t(h) >= handles_.size() || !handles_[size_t(h)]) return {}; \
  nvmlDevice_t dev = handles_[size_t(h)]

}  // namespace nb
