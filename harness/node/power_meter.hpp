// The board's mean power over a stretch of work (a benchmark's timed iterations), from NVML: the
// total-energy counter where the GPU has one (Volta and newer: the energy difference over the
// wall time), else the board power sampled every `period` on a thread of its own (a P40). Never
// throws; stop() returns nullopt where NVML reads neither.
#pragma once
#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "node/nvml.hpp"

namespace nb {

struct PowerReading {
  std::string method;      // "energy_counter" or "sampled_power"
  double mean_power_w = 0;
  double energy_j = 0;     // over `seconds`
  double seconds = 0;
  int samples = 0;         // power readings averaged (2 counter reads for the counter)
};

// From two reads of the energy counter (millijoules) `seconds` apart; nullopt for a counter that
// did not move forward or no elapsed time.
std::optional<PowerReading> reading_from_energy(unsigned long long mj_start, unsigned long long mj_end, double seconds);
// From power samples (watts) taken evenly over `seconds`; nullopt without a sample.
std::optional<PowerReading> reading_from_samples(const std::vector<double>& watts, double seconds);

class PowerMeter {
 public:
  PowerMeter(const Nvml& nvml, std::optional<int> nvml_index,
             std::chrono::milliseconds period = std::chrono::milliseconds(20));
  ~PowerMeter();
  PowerMeter(const PowerMeter&) = delete;
  PowerMeter& operator=(const PowerMeter&) = delete;
  void start();
  std::optional<PowerReading> stop();

 private:
  const Nvml& nvml_;
  std::optional<int> h_;
  std::chrono::milliseconds period_;
  std::chrono::steady_clock::time_point t0_;
  std::optional<unsigned long long> mj0_;
  std::vector<double> watts_;
  std::atomic<bool> running_{false};
  std::thread sampler_;
};

}  // namespace nb
