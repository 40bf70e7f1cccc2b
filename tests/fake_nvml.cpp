// A stand-in for the driver's libnvidia-ml.so.1 with two made-up GPUs, for test_nvml_binding.cpp:
// its entry points are defined against the toolkit's nvml.h, so that the harness's run-time
// binding (node/nvml_api.hpp) is checked against the same declarations and layouts. Entry points
// it leaves out are absent, as on an old driver.
#include <cstdint>
#include <cstring>

#define NVML_NO_UNVERSIONED_FUNC_DEFS
#include <nvml.h>

namespace {
int index_of(nvmlDevice_t d) { return int(reinterpret_cast<uintptr_t>(d)) - 1; }
}  // namespace

extern "C" {

nvmlReturn_t nvmlInit_v2() { return NVML_SUCCESS; }
nvmlReturn_t nvmlShutdown() { return NVML_SUCCESS; }
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* n) {
  *n = 2;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t* d) {
  if (i >= 2) return NVML_ERROR_INVALID_ARGUMENT;
  *d = reinterpret_cast<nvmlDevice_t>(uintptr_t(i) + 1);
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t* p) {
  std::memset(p, 0, sizeof *p);
  std::strcpy(p->busId, index_of(d) == 0 ? "00000000:3B:00.0" : "00000000:AF:00.0");
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t* m) {
  m->total = 80000000000ull + uint64_t(index_of(d));
  m->free = 70000000000ull;
  m->used = 10000000000ull;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t* u) {
  u->gpu = 97 - unsigned(index_of(d));
  u->memory = 45;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t, unsigned long long* r) {
  *r = nvmlClocksEventReasonSwPowerCap | nvmlClocksThrottleReasonHwThermalSlowdown;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t, nvmlClockType_t t, unsigned int* mhz) {
  *mhz = t == NVML_CLOCK_SM ? 1980 : t == NVML_CLOCK_MEM ? 2619 : 0;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t, nvmlTemperatureThresholds_t t, unsigned int* c) {
  *c = t == NVML_TEMPERATURE_THRESHOLD_SLOWDOWN ? 87 : t == NVML_TEMPERATURE_THRESHOLD_SHUTDOWN ? 92 : 0;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t, int n, nvmlFieldValue_t* v) {
  for (int i = 0; i < n; ++i) {
    v[i].nvmlReturn = NVML_SUCCESS;
    v[i].valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
    v[i].value.ullVal = v[i].fieldId == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX ? 100 : 200;
  }
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t, unsigned int* n, nvmlProcessInfo_t* p) {
  if (*n < 2) {
    *n = 2;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  *n = 2;
  p[0] = nvmlProcessInfo_t{4242, 1ull << 30, 0, 0};
  p[1] = nvmlProcessInfo_t{4343, static_cast<unsigned long long>(NVML_VALUE_NOT_AVAILABLE), 0, 0};
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t d, nvmlEnableState_t* current, nvmlEnableState_t* pending) {
  *current = *pending = index_of(d) == 0 ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  return NVML_SUCCESS;
}

}  // extern "C"
