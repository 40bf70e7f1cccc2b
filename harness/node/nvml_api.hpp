// What node/nvml*.cpp share: the NVML entry points, bound at run time with dlopen/dlsym so that
// the binary starts where there is no driver (Nvml::Api), typed by the toolkit's nvml.h. Internal
// to those files.
#pragma once
// The versioned names (nvmlInit_v2, ...) are bound by name; nvml.h's unversioned macros would
// rename the declarations decltype reads.
#define NVML_NO_UNVERSIONED_FUNC_DEFS
#include <nvml.h>

#include "node/nvml.hpp"

namespace nb {

// The entry points, each typed as nvml.h declares its newest version; `bind` (nvml.cpp) also
// takes an older version of the same signature where the driver lacks the newer.
#define NB_NVML_ENTRY_POINTS(X) \
  X(nvmlInit_v2) \
  X(nvmlShutdown) \
  X(nvmlSystemGetDriverVersion) \
  X(nvmlSystemGetCudaDriverVersion_v2) \
  X(nvmlDeviceGetCount_v2) \
  X(nvmlDeviceGetHandleByIndex_v2) \
  X(nvmlDeviceGetUUID) \
  X(nvmlDeviceGetName) \
  X(nvmlDeviceGetCudaComputeCapability) \
  X(nvmlDeviceGetPciInfo_v3) \
  X(nvmlDeviceGetCurrPcieLinkGeneration) \
  X(nvmlDeviceGetMaxPcieLinkGeneration) \
  X(nvmlDeviceGetCurrPcieLinkWidth) \
  X(nvmlDeviceGetMaxPcieLinkWidth) \
  X(nvmlDeviceGetClockInfo) \
  X(nvmlDeviceGetMaxClockInfo) \
  X(nvmlDeviceGetTemperature) \
  X(nvmlDeviceGetPowerUsage) \
  X(nvmlDeviceGetPowerManagementLimit) \
  X(nvmlDeviceGetCurrentClocksEventReasons) \
  X(nvmlDeviceGetEccMode) \
  X(nvmlDeviceGetPersistenceMode) \
  X(nvmlDeviceGetMigMode) \
  X(nvmlDeviceGetTopologyCommonAncestor) \
  X(nvmlDeviceGetP2PStatus) \
  X(nvmlDeviceGetTotalEccErrors) \
  X(nvmlDeviceGetRetiredPages) \
  X(nvmlDeviceGetRetiredPagesPendingStatus) \
  X(nvmlDeviceGetRemappedRows) \
  X(nvmlDeviceGetComputeRunningProcesses_v3) \
  X(nvmlDeviceGetUtilizationRates) \
  X(nvmlDeviceGetMemoryInfo) \
  X(nvmlDeviceGetPcieThroughput) \
  X(nvmlDeviceGetFieldValues) \
  X(nvmlDeviceGetPcieReplayCounter) \
  X(nvmlDeviceGetTemperatureThreshold) \
  X(nvmlEventSetCreate) \
  X(nvmlDeviceRegisterEvents) \
  X(nvmlEventSetWait_v2) \
  X(nvmlEventSetFree) \
  X(nvmlDeviceGetTotalEnergyConsumption)

// nvmlDeviceGetTemperature is deprecated from CUDA 13's nvml.h on; the drivers of older GPUs
// (the P40's) have only it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
namespace nvml_fn {
#define NB_NVML_TYPE(name) using name = decltype(&::name);
NB_NVML_ENTRY_POINTS(NB_NVML_TYPE)
#undef NB_NVML_TYPE
}  // namespace nvml_fn
#pragma GCC diagnostic pop

struct Nvml::Api {
#define NB_NVML_MEMBER(name) nvml_fn::name name = nullptr;
  NB_NVML_ENTRY_POINTS(NB_NVML_MEMBER)
#undef NB_NVML_MEMBER
};

// The device of NVML index h, or return {} from the member function.
#define NB_NVML_HANDLE(h)                                                                    \
  if (!available_ || h < 0 || size_t(h) >= handles_.size() || !handles_[size_t(h)]) return {}; \
  const nvmlDevice_t dev = static_cast<nvmlDevice_t>(handles_[size_t(h)])

}  // namespace nb
