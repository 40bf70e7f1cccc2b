// The health and load figures of node/nvml.hpp: XID events, ECC counters, retired pages and
// remapped rows, processes, utilisation, memory, PCIe and NVLink throughput, topology.
#include "node/nvml_api.hpp"

#include <climits>
#include <cstring>

namespace nb {

std::optional<void*> Nvml::xid_events_open(int h) const {
  NB_NVML_HANDLE(h);
  if (!api_->nvmlEventSetCreate || !api_->nvmlDeviceRegisterEvents || !api_->nvmlEventSetWait_v2) return std::nullopt;
  nvmlEventSet_t set = nullptr;
  if (api_->nvmlEventSetCreate(&set) != NVML_SUCCESS || !set) return std::nullopt;
  if (api_->nvmlDeviceRegisterEvents(dev, nvmlEventTypeXidCriticalError, set) != NVML_SUCCESS) {
    if (api_->nvmlEventSetFree) api_->nvmlEventSetFree(set);
    return std::nullopt;
  }
  return static_cast<void*>(set);
}

std::vector<unsigned long long> Nvml::xid_events_poll(void* set) const {
  std::vector<unsigned long long> out;
  if (!available_ || !set || !api_->nvmlEventSetWait_v2) return out;
  for (int k = 0; k < 64; ++k) {  // what is pending now, never waiting
    nvmlEventData_t d{};
    if (api_->nvmlEventSetWait_v2(static_cast<nvmlEventSet_t>(set), &d, 0) != NVML_SUCCESS) break;
    if (d.eventType & nvmlEventTypeXidCriticalError) out.push_back(d.eventData);
  }
  return out;
}

void Nvml::xid_events_close(void* set) const {
  if (available_ && set && api_->nvmlEventSetFree) api_->nvmlEventSetFree(static_cast<nvmlEventSet_t>(set));
}

EccCounters Nvml::ecc_counters(int h) const {
  NB_NVML_HANDLE(h);
  EccCounters c;
  if (!api_->nvmlDeviceGetTotalEccErrors) return c;
  const auto total = [&](nvmlMemoryErrorType_t e, nvmlEccCounterType_t k, std::optional<unsigned long long>& to) {
    unsigned long long v = 0;
    if (api_->nvmlDeviceGetTotalEccErrors(dev, e, k, &v) == NVML_SUCCESS) to = v;
  };
  total(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, c.volatile_corrected);
  total(NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, c.volatile_uncorrected);
  total(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC, c.aggregate_corrected);
  total(NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC, c.aggregate_uncorrected);
  return c;
}

RetiredPages Nvml::retired_pages(int h) const {
  NB_NVML_HANDLE(h);
  RetiredPages r;
  // A count of 0 with no buffer asks for the count: success when there are none,
  // INSUFFICIENT_SIZE with the count.
  if (api_->nvmlDeviceGetRetiredPages) {
    for (nvmlPageRetirementCause_t cause :
         {NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS, NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR}) {
      unsigned n = 0;
      const nvmlReturn_t rc = api_->nvmlDeviceGetRetiredPages(dev, cause, &n, nullptr);
      if (rc == NVML_SUCCESS || rc == NVML_ERROR_INSUFFICIENT_SIZE)
        (cause == NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS ? r.single_bit : r.double_bit) = n;
    }
  }
  nvmlEnableState_t pending = NVML_FEATURE_DISABLED;
  if (api_->nvmlDeviceGetRetiredPagesPendingStatus && api_->nvmlDeviceGetRetiredPagesPendingStatus(dev, &pending) == NVML_SUCCESS) r.pending = pending != 0;
  return r;
}

std::optional<RemappedRows> Nvml::remapped_rows(int h) const {
  NB_NVML_HANDLE(h);
  unsigned corr = 0, unc = 0, pending = 0, failure = 0;
  if (!api_->nvmlDeviceGetRemappedRows || api_->nvmlDeviceGetRemappedRows(dev, &corr, &unc, &pending, &failure) != NVML_SUCCESS)
    return std::nullopt;
  return RemappedRows{corr, unc, pending != 0, failure != 0};
}

std::optional<std::vector<ProcessUse>> Nvml::compute_processes(int h) const {
  NB_NVML_HANDLE(h);
  if (!api_->nvmlDeviceGetComputeRunningProcesses_v3) return std::nullopt;
  std::vector<nvmlProcessInfo_t> buf(64);
  for (int attempt = 0; attempt < 4; ++attempt) {
    unsigned n = unsigned(buf.size());
    const nvmlReturn_t rc = api_->nvmlDeviceGetComputeRunningProcesses_v3(dev, &n, buf.data());
    if (rc == NVML_ERROR_INSUFFICIENT_SIZE) {
      buf.resize(size_t(n) + 16);  // processes may start between the calls
      continue;
    }
    if (rc != NVML_SUCCESS) return std::nullopt;
    std::vector<ProcessUse> out;
    for (unsigned i = 0; i < n && i < buf.size(); ++i) {
      ProcessUse p;
      p.pid = buf[i].pid;
      if (buf[i].usedGpuMemory != static_cast<unsigned long long>(NVML_VALUE_NOT_AVAILABLE)) p.used_bytes = buf[i].usedGpuMemory;
      out.push_back(p);
    }
    return out;
  }
  return std::nullopt;
}

std::optional<Utilization> Nvml::utilization(int h) const {
  NB_NVML_HANDLE(h);
  nvmlUtilization_t u{};
  if (!api_->nvmlDeviceGetUtilizationRates || api_->nvmlDeviceGetUtilizationRates(dev, &u) != NVML_SUCCESS)
    return std::nullopt;
  return Utilization{u.gpu, u.memory};
}

std::optional<MemoryInfo> Nvml::memory_info(int h) const {
  NB_NVML_HANDLE(h);
  nvmlMemory_t m{};
  if (!api_->nvmlDeviceGetMemoryInfo || api_->nvmlDeviceGetMemoryInfo(dev, &m) != NVML_SUCCESS) return std::nullopt;
  return MemoryInfo{m.total, m.free, m.used};
}

std::optional<double> Nvml::mem_clock_mhz(int h) const {
  NB_NVML_HANDLE(h);
  unsigned v = 0;
  if (!api_->nvmlDeviceGetClockInfo || api_->nvmlDeviceGetClockInfo(dev, NVML_CLOCK_MEM, &v) != NVML_SUCCESS) return std::nullopt;
  return double(v);
}

std::optional<double> Nvml::pcie_tx_bytes_per_s(int h) const {
  NB_NVML_HANDLE(h);
  unsigned kb = 0;
  if (!api_->nvmlDeviceGetPcieThroughput || api_->nvmlDeviceGetPcieThroughput(dev, NVML_PCIE_UTIL_TX_BYTES, &kb) != NVML_SUCCESS) return std::nullopt;
  return kb * 1000.0;  // NVML reports KB/s
}

std::optional<double> Nvml::pcie_rx_bytes_per_s(int h) const {
  NB_NVML_HANDLE(h);
  unsigned kb = 0;
  if (!api_->nvmlDeviceGetPcieThroughput || api_->nvmlDeviceGetPcieThroughput(dev, NVML_PCIE_UTIL_RX_BYTES, &kb) != NVML_SUCCESS) return std::nullopt;
  return kb * 1000.0;
}

std::optional<NvlinkCounters> Nvml::nvlink_counters(int h) const {
  NB_NVML_HANDLE(h);
  if (!api_->nvmlDeviceGetFieldValues) return std::nullopt;
  nvmlFieldValue_t v[2];
  std::memset(v, 0, sizeof v);
  v[0].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX;  // KiB, cumulative
  v[1].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX;
  v[0].scopeId = v[1].scopeId = UINT_MAX;  // every link
  if (api_->nvmlDeviceGetFieldValues(dev, 2, v) != NVML_SUCCESS) return std::nullopt;
  auto kib = [](const nvmlFieldValue_t& f) -> std::optional<unsigned long long> {
    if (f.nvmlReturn != NVML_SUCCESS) return std::nullopt;
    switch (f.valueType) {
      case NVML_VALUE_TYPE_DOUBLE:
        return f.value.dVal >= 0 ? std::optional<unsigned long long>((unsigned long long)f.value.dVal) : std::nullopt;
      case NVML_VALUE_TYPE_UNSIGNED_INT: return f.value.uiVal;
      case NVML_VALUE_TYPE_UNSIGNED_LONG: return f.value.ulVal;
      case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: return f.value.ullVal;
      case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
        return f.value.sllVal >= 0 ? std::optional<unsigned long long>((unsigned long long)f.value.sllVal) : std::nullopt;
      default: return std::nullopt;
    }
  };
  const auto tx = kib(v[0]), rx = kib(v[1]);
  if (!tx || !rx) return std::nullopt;
  return NvlinkCounters{*tx * 1024ull, *rx * 1024ull};
}

std::optional<int> Nvml::topology_level(int a, int b) const {
  if (!available_ || !api_->nvmlDeviceGetTopologyCommonAncestor) return std::nullopt;
  if (a < 0 || b < 0 || size_t(a) >= handles_.size() || size_t(b) >= handles_.size()) return std::nullopt;
  nvmlGpuTopologyLevel_t level = NVML_TOPOLOGY_INTERNAL;
  if (api_->nvmlDeviceGetTopologyCommonAncestor(static_cast<nvmlDevice_t>(handles_[size_t(a)]),
                                                static_cast<nvmlDevice_t>(handles_[size_t(b)]), &level) != NVML_SUCCESS)
    return std::nullopt;
  return int(level);
}

std::optional<bool> Nvml::nvlink_p2p(int a, int b) const {
  if (!available_ || !api_->nvmlDeviceGetP2PStatus) return std::nullopt;
  if (a < 0 || b < 0 || size_t(a) >= handles_.size() || size_t(b) >= handles_.size()) return std::nullopt;
  nvmlGpuP2PStatus_t status = NVML_P2P_STATUS_UNKNOWN;
  if (api_->nvmlDeviceGetP2PStatus(static_cast<nvmlDevice_t>(handles_[size_t(a)]),
                                   static_cast<nvmlDevice_t>(handles_[size_t(b)]), NVML_P2P_CAPS_INDEX_NVLINK,
                                   &status) != NVML_SUCCESS)
    return std::nullopt;
  return status == NVML_P2P_STATUS_OK;
}

}  // namespace nb
