// The health and load figures of node/nvml.hpp: XID events, ECC counters, retired pages and
// remapped rows, processes, utilisation, memory, PCIe and NVLink throughput, topology.
#include "node/nvml_api.hpp"

#include <cstring>

namespace nb {

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
