// GPU monitoring: samples of NVML's live counters per GPU (utilisation, memory, temperature,
// power, clocks, throttle reasons, PCIe and NVLink throughput, ECC), a sampler thread that keeps
// them with time marks (a run's case boundaries), the down-sampled timeline a result file holds,
// and the text formats of `nodebench monitor` (table, CSV, JSON lines, Prometheus textfile).
// The formatting is pure, so it is unit-tested without a GPU.
#pragma once
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "node/nvml.hpp"

namespace nb {

// A GPU to sample: `label` is the index it is shown under (NVML's for `monitor`, CUDA's in a
// run's timeline), `nvml_index` the NVML device.
struct MonitoredGpu {
  int label = 0;
  int nvml_index = 0;
  std::string uuid;
  std::string name;
};

struct GpuSample {
  int gpu = 0;  // MonitoredGpu::label
  std::string uuid;
  double t_s = 0;                      // seconds since the monitor started
  double unix_time = 0;                // wall clock of the sample
  std::optional<double> gpu_util_pct, mem_util_pct;
  std::optional<double> mem_used_bytes, mem_free_bytes, mem_total_bytes;
  std::optional<double> temperature_c, power_w, sm_clock_mhz, mem_clock_mhz;
  std::optional<unsigned long long> throttle_mask;
  std::optional<double> pcie_tx_bytes_per_s, pcie_rx_bytes_per_s;
  std::optional<double> nvlink_tx_bytes_per_s, nvlink_rx_bytes_per_s;  // from counter differences
  std::optional<double> ecc_volatile_corrected, ecc_volatile_uncorrected;
};

// Reads one GPU. NVLink rates need the previous counters: `prev` holds them between calls
// (the first call gives no NVLink rate).
struct NvlinkState {
  std::optional<NvlinkCounters> counters;
  double t_s = 0;
};
// `full` false reads only what a timeline keeps (utilisation, memory, clocks, power,
// temperature, throttle reasons): PCIe throughput takes NVML 20 ms per direction and GPU.
GpuSample sample_gpu(const Nvml& nvml, const MonitoredGpu& gpu, double t_s, double unix_time, NvlinkState& prev,
                     bool full = true);

// NVLink rate from two cumulative counter readings (nullopt when the time did not advance or a
// counter went back, e.g. after a driver reload).
std::optional<double> counter_rate(unsigned long long before, unsigned long long after, double dt_s);

// The throttle reasons of a sample, joined with '|' ("none" for an empty mask, "" when unknown).
std::string throttle_text(const std::optional<unsigned long long>& mask);

// --- timeline --------------------------------------------------------------------------------
struct TimelineMark {
  double t_s = 0;
  std::string text;
  std::vector<int> gpus;  // the GPUs the mark concerns (empty: all)
};
struct GpuSeries {
  int gpu = 0;
  std::string uuid;
  std::vector<double> t_s;
  std::vector<std::optional<double>> gpu_util, sm_clock_mhz, power_w, mem_used_bytes;
};
// Reduces a series to at most `max_points` points: consecutive samples are grouped into equal
// buckets and each bucket becomes one point (its mean time, and the mean of each quantity over
// the samples that have it; null where none has). A series already short enough is unchanged.
GpuSeries downsample(const GpuSeries& in, size_t max_points);
// The result's `timeline` object.
nlohmann::json timeline_json(double interval_s, const std::vector<GpuSeries>& gpus, const std::vector<TimelineMark>& marks);

// Samples the GPUs every `interval_s` on its own thread, from start() until stop(); keeps every
// sample and the marks, with one clock for both.
class Sampler {
 public:
  Sampler(const Nvml& nvml, std::vector<MonitoredGpu> gpus, double interval_s);
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;
  void start();
  void stop();
  void mark(const std::string& text, std::vector<int> gpus = {});
  double interval_s() const { return interval_s_; }
  // Per GPU (in the order given), the samples so far as series.
  std::vector<GpuSeries> series() const;
  std::vector<TimelineMark> marks() const;

 private:
  double now_s() const;
  void loop();
  const Nvml& nvml_;
  std::vector<MonitoredGpu> gpus_;
  double interval_s_;
  std::vector<NvlinkState> nvlink_;
  std::vector<GpuSeries> series_;  // what the timeline keeps, nothing more (runs may be long)
  std::vector<TimelineMark> marks_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
  double t0_ = 0;
};

// Monotonic seconds (steady clock).
double monotonic_s();

}  // namespace nb
