#include "node/power_meter.hpp"

namespace nb {

std::optional<PowerReading> reading_from_energy(unsigned long long mj_start, unsigned long long mj_end, double seconds) {
  if (!(seconds > 0) || mj_end <= mj_start) return std::nullopt;
  PowerReading r;
  r.method = "energy_counter";
  r.energy_j = double(mj_end - mj_start) / 1e3;
  r.seconds = seconds;
  r.mean_power_w = r.energy_j / seconds;
  r.samples = 2;
  return r;
}

std::optional<PowerReading> reading_from_samples(const std::vector<double>& watts, double seconds) {
  if (watts.empty() || !(seconds > 0)) return std::nullopt;
  double sum = 0;
  for (double w : watts) sum += w;
  PowerReading r;
  r.method = "sampled_power";
  r.mean_power_w = sum / double(watts.size());
  r.seconds = seconds;
  r.energy_j = r.mean_power_w * seconds;
  r.samples = int(watts.size());
  return r;
}

PowerMeter::PowerMeter(const Nvml& nvml, std::optional<int> nvml_index, std::chrono::milliseconds period)
    : nvml_(nvml), h_(nvml_index), period_(period) {}

PowerMeter::~PowerMeter() {
  running_ = false;
  if (sampler_.joinable()) sampler_.join();
}

void PowerMeter::start() {
  watts_.clear();
  mj0_.reset();
  if (!nvml_.available() || !h_) return;
  mj0_ = nvml_.total_energy_mj(*h_);
  t0_ = std::chrono::steady_clock::now();
  if (mj0_) return;
  running_ = true;
  sampler_ = std::thread([this] {
    while (running_) {
      if (auto w = nvml_.snapshot(*h_).power_w) watts_.push_back(*w);
      std::this_thread::sleep_for(period_);
    }
  });
}

std::optional<PowerReading> PowerMeter::stop() {
  if (!nvml_.available() || !h_) return std::nullopt;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  if (mj0_) {
    const auto mj1 = nvml_.total_energy_mj(*h_);
    return mj1 ? reading_from_energy(*mj0_, *mj1, seconds) : std::nullopt;
  }
  running_ = false;
  if (sampler_.joinable()) sampler_.join();
  return reading_from_samples(watts_, seconds);
}

}  // namespace nb
