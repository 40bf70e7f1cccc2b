// NVML, loaded at run time with dlopen so that nodebench runs (without these fields) where the
// library is missing, e.g. in a container without the driver's user-space libraries. Only the
// handful of entry points nodebench reads are declared here, with the ABI of nvml.h.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nb {

struct PcieLink {
  std::optional<unsigned> gen_current, gen_max, width_current, width_max;
};

struct ClockSnapshot {
  std::optional<double> sm_mhz, mem_mhz, temperature_c, power_w;
  std::optional<unsigned long long> throttle_mask;
};

// Names of the set bits of an NVML clocks-event (throttle) reason mask.
std::vector<std::string> throttle_reason_names(unsigned long long mask);
// True when the mask holds a reason that slows the GPU for its health or the host's: thermal
// limits, hardware slowdown, power brake. Idle and application-clock settings are not
// throttling; the software power cap is reported apart (is_power_capped), since a GPU under
// full load normally runs at its power limit.
bool is_throttling(unsigned long long mask);
bool is_power_capped(unsigned long long mask);

// ECC error counters (nvmlDeviceGetTotalEccErrors); each nullopt where NVML does not report it
// (ECC off or unsupported).
struct EccCounters {
  std::optional<unsigned long long> volatile_corrected, volatile_uncorrected;
  std::optional<unsigned long long> aggregate_corrected, aggregate_uncorrected;
};
// Page retirement (GPUs before Ampere) and row remapping (Ampere and newer HBM GPUs).
struct RetiredPages {
  std::optional<unsigned> single_bit, double_bit;
  std::optional<bool> pending;
};
struct RemappedRows {
  unsigned correctable = 0, uncorrectable = 0;
  bool pending = false, failure = false;
};
// Device memory as NVML counts it (nvmlDeviceGetMemoryInfo), in bytes.
struct MemoryInfo {
  unsigned long long total = 0, free = 0, used = 0;
};
// Percent of the last sample period in which a kernel ran (gpu) / device memory was read or
// written (memory), from nvmlDeviceGetUtilizationRates.
struct Utilization {
  unsigned gpu = 0, memory = 0;
};
// Bytes moved since the driver loaded, summed over every NVLink of the device (data only, no
// protocol overhead); nullopt where the GPU has no NVLink or NVML does not report it.
struct NvlinkCounters {
  unsigned long long tx_bytes = 0, rx_bytes = 0;
};

struct ProcessUse {
  unsigned pid = 0;
  std::optional<unsigned long long> used_bytes;  // nullopt where NVML cannot tell (e.g. no permission)
};

class Nvml {
 public:
  // Loads and initialises NVML from `library` (default: the driver's libnvidia-ml.so.1; the
  // NODEBENCH_NVML_LIBRARY setting names another); never throws. available() says whether it worked.
  explicit Nvml(const std::string& library = "");
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  bool available() const { return available_; }
  const std::string& error() const { return error_; }

  std::optional<std::string> driver_version() const;
  std::optional<int> cuda_driver_version() const;  // e.g. 13000
  std::optional<unsigned> device_count() const;

  // The NVML device matching a PCI bus id as CUDA reports it ("0000:3B:00.0").
  // Returns an opaque index into an internal table, or nullopt.
  std::optional<int> find_by_pci(const std::string& pci_bus_id) const;

  std::optional<std::string> uuid(int h) const;
  std::optional<std::string> name(int h) const;
  // The CUDA compute capability as major*10+minor (61 for a P40), by NVML index: seen also where
  // CUDA_VISIBLE_DEVICES hides the GPU from CUDA.
  std::optional<int> compute_capability(int h) const;
  std::optional<std::string> pci_bus_id(int h) const;
  PcieLink pcie(int h) const;
  ClockSnapshot snapshot(int h) const;
  std::optional<double> sm_clock_mhz(int h) const;
  std::optional<double> max_sm_clock_mhz(int h) const;
  std::optional<double> max_mem_clock_mhz(int h) const;
  std::optional<bool> ecc_enabled(int h) const;
  std::optional<bool> persistence_mode(int h) const;
  std::optional<bool> mig_mode(int h) const;
  std::optional<double> power_limit_w(int h) const;
  // The board's energy since the driver loaded, in millijoules (nvmlDeviceGetTotalEnergyConsumption:
  // Volta and newer; nullopt on a P40, which has no such counter).
  std::optional<unsigned long long> total_energy_mj(int h) const;
  // The PCIe replay counter (link-level retransmissions since the driver loaded).
  std::optional<unsigned long long> pcie_replay_counter(int h) const;
  // The GPU's own temperatures at which it slows down / shuts down (NVML's thresholds).
  std::optional<double> slowdown_temperature_c(int h) const;
  std::optional<double> shutdown_temperature_c(int h) const;
  // Xid (critical error) events of one device: open an event set registered for them (nullopt
  // where NVML cannot, e.g. without permission), poll it without waiting (the Xid codes since the
  // last poll), close it.
  std::optional<void*> xid_events_open(int h) const;
  std::vector<unsigned long long> xid_events_poll(void* set) const;
  void xid_events_close(void* set) const;
  EccCounters ecc_counters(int h) const;
  std::optional<Utilization> utilization(int h) const;
  std::optional<MemoryInfo> memory_info(int h) const;
  std::optional<double> mem_clock_mhz(int h) const;
  // PCIe throughput over NVML's last 20 ms window, in bytes/s (TX: out of the GPU).
  std::optional<double> pcie_tx_bytes_per_s(int h) const;
  std::optional<double> pcie_rx_bytes_per_s(int h) const;
  std::optional<NvlinkCounters> nvlink_counters(int h) const;
  RetiredPages retired_pages(int h) const;
  std::optional<RemappedRows> remapped_rows(int h) const;
  // Processes with a compute context on the device; nullopt when NVML cannot list them.
  std::optional<std::vector<ProcessUse>> compute_processes(int h) const;

  // NVML's topology level between two devices (0 internal ... 60 system), or nullopt.
  std::optional<int> topology_level(int a, int b) const;
  // Whether NVML reports peer-to-peer over NVLink between two devices (directly or through
  // NVSwitch), or nullopt when it cannot tell.
  std::optional<bool> nvlink_p2p(int a, int b) const;

 private:
  struct Api;
  std::unique_ptr<Api> api_;
  void* lib_ = nullptr;
  bool available_ = false;
  std::string error_;
  mutable std::vector<void*> handles_;  // nvmlDevice_t by NVML index
};

}  // namespace nb
