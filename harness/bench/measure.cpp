#include "bench/measure.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "kernels/common/kernels.cuh"
#include "base/stats.hpp"

namespace nb {

using Clock = std::chrono::steady_clock;

StopReason should_stop(const MeasureConfig& cfg, size_t n, double cv, double elapsed_s) {
  if (cfg.fixed_samples > 0) return n >= cfg.fixed_samples ? StopReason::fixed : StopReason::none;
  if (!cfg.to_cap && n >= cfg.min_samples && cv <= cfg.target_cv) return StopReason::converged;
  if (n >= cfg.max_samples) return StopReason::max_samples;
  if (elapsed_s >= cfg.max_time_s && n >= 1) return StopReason::time_cap;
  return StopReason::none;
}

size_t choose_batch(const MeasureConfig& cfg, double seconds_per_launch) {
  if (cfg.l2 == L2Mode::cold) return 1;  // each launch must start from a flushed L2
  if (!(seconds_per_launch > 0)) return cfg.max_batch;
  const double want = std::ceil(cfg.min_sample_s / seconds_per_launch);
  return std::clamp<size_t>(size_t(want), 1, cfg.max_batch);
}

MeasureConfig one_op_per_sample(MeasureConfig cfg, size_t min_samples) {
  cfg.min_sample_s = 0;  // choose_batch -> 1
  cfg.max_batch = 1;
  cfg.min_samples = std::max(cfg.min_samples, min_samples);
  cfg.max_samples = std::max(cfg.max_samples, cfg.min_samples);
  return cfg;
}

double both_ways_sample_s(double t_fwd_s, double t_rev_s) {
  if (!(t_fwd_s > 0) || !(t_rev_s > 0)) return 0;
  return 2.0 / (1.0 / t_fwd_s + 1.0 / t_rev_s);
}

std::string to_string(StopReason r) {
  switch (r) {
    case StopReason::none: return "none";
    case StopReason::converged: return "converged";
    case StopReason::time_cap: return "time_cap";
    case StopReason::max_samples: return "max_samples";
    case StopReason::fixed: return "fixed";
  }
  return "none";
}

Measurement sample_until_stop(const MeasureConfig& cfg, const std::function<double()>& sample) {
  Measurement m;
  double sum = 0, sumsq = 0;
  const auto t0 = Clock::now();
  while (true) {
    const double t = sample();
    m.samples_s.push_back(t);
    sum += t;
    sumsq += t * t;
    const size_t n = m.samples_s.size();
    const double mean = sum / double(n);
    const double var = n > 1 ? std::max(0.0, (sumsq - double(n) * mean * mean) / double(n - 1)) : 0.0;
    const double cv = n > 1 && mean > 0 ? std::sqrt(var) / mean : 1.0;
    m.stop = should_stop(cfg, n, cv, std::chrono::duration<double>(Clock::now() - t0).count());
    if (m.stop != StopReason::none) return m;
  }
}

Measurement warm_then_sample(const MeasureConfig& cfg, int warmup, const std::function<double(bool keep)>& run) {
  for (int i = 0; i < warmup; ++i) run(false);
  Measurement m = sample_until_stop(cfg, [&] { return run(true); });
  m.warmup_runs = warmup;
  return m;
}

StreamHold::StreamHold() : flag_(2 * sizeof(int32_t), cudaHostAllocMapped | cudaHostAllocPortable) {
  NB_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev_flag_), flag_.get(), 0));
}

void StreamHold::hold(cudaStream_t s, uint64_t timeout_ns) {
  volatile int32_t* f = flag_.as<int32_t>();
  f[0] = 0;
  f[1] = 0;
  kernels::launch_blocking(s, dev_flag_, dev_flag_ + 1, timeout_ns);
  NB_CUDA_LAUNCH();
}

void StreamHold::release() { static_cast<volatile int32_t*>(flag_.as<int32_t>())[0] = 1; }

bool StreamHold::timed_out() const {
  return static_cast<const volatile int32_t*>(flag_.as<int32_t>())[1] != 0;
}

Measurer::Measurer(int device, size_t l2_bytes, const Nvml* nvml, std::optional<int> nvml_index)
    : device_(device), l2_bytes_(l2_bytes), nvml_(nvml), nvml_index_(nvml_index) {
  // Twice the L2 so that what the timed work left there is gone (the L2 is not strictly LRU).
  flush_buf_ = DeviceBuffer(std::max<size_t>(2 * l2_bytes_, 1 << 20));
}

void Measurer::flush_l2(cudaStream_t s) {
  kernels::launch_l2_flush(s, flush_buf_.get(), flush_buf_.bytes(), salt_++);
  NB_CUDA_LAUNCH();
}

Measurement Measurer::measure(cudaStream_t stream, const std::function<void(cudaStream_t)>& launch,
                              const MeasureConfig& cfg) {
  Measurement m;

  // Warm-up: module loading, library heuristics, clocks ramping up. Also estimates one
  // launch's time, to size the batch.
  const auto w0 = Clock::now();
  double est = 0;
  do {
    const auto h0 = Clock::now();
    start_.record(stream);
    launch(stream);
    stop_.record(stream);
    NB_CUDA(cudaStreamSynchronize(stream));
    NB_CUDA(cudaGetLastError());
    est = cfg.timer == Timer::host ? std::chrono::duration<double>(Clock::now() - h0).count()
                                   : stop_.seconds_since(start_);
    ++m.warmup_runs;
  } while (m.warmup_runs < 2 ||
           std::chrono::duration<double>(Clock::now() - w0).count() < cfg.warmup_s);
  m.batch = choose_batch(cfg, est);

  std::vector<double> clocks;
  double sum = 0, sumsq = 0;
  auto last_poll = Clock::now() - std::chrono::seconds(1);
  const auto t0 = Clock::now();
  while (true) {
    if (cfg.l2 == L2Mode::cold) {
      flush_l2(stream);
      if (cfg.timer == Timer::host) NB_CUDA(cudaStreamSynchronize(stream));
    }
    double t = 0;
    if (cfg.timer == Timer::host) {
      const auto h0 = Clock::now();
      for (size_t i = 0; i < m.batch; ++i) launch(stream);
      NB_CUDA(cudaStreamSynchronize(stream));
      t = std::chrono::duration<double>(Clock::now() - h0).count() / double(m.batch);
      NB_CUDA(cudaGetLastError());
    } else {
    hold_.hold(stream, cfg.blocking_timeout_ns);
    start_.record(stream);
    for (size_t i = 0; i < m.batch; ++i) launch(stream);
    stop_.record(stream);
    hold_.release();  // everything is queued
    NB_CUDA(cudaEventSynchronize(stop_.get()));
    NB_CUDA(cudaGetLastError());
    if (hold_.timed_out()) m.blocking_timeout = true;
    t = stop_.seconds_since(start_) / double(m.batch);
    }
    m.samples_s.push_back(t);
    sum += t;
    sumsq += t * t;

    const auto now = Clock::now();
    if (nvml_ && nvml_index_ && now - last_poll > std::chrono::milliseconds(20)) {
      last_poll = now;
      const ClockSnapshot s = nvml_->snapshot(*nvml_index_);
      if (s.sm_mhz) clocks.push_back(*s.sm_mhz);
      if (s.throttle_mask) {
        m.throttle_masks.push_back(*s.throttle_mask);
        if (is_throttling(*s.throttle_mask)) m.throttled = true;
        if (is_power_capped(*s.throttle_mask)) m.power_capped = true;
      }
    }
    const size_t n = m.samples_s.size();
    const double mean = sum / double(n);
    const double var = n > 1 ? std::max(0.0, (sumsq - double(n) * mean * mean) / double(n - 1)) : 0.0;
    const double cv = n > 1 && mean > 0 ? std::sqrt(var) / mean : 1.0;
    const double elapsed = std::chrono::duration<double>(now - t0).count();
    m.stop = should_stop(cfg, n, cv, elapsed);
    if (m.stop != StopReason::none) break;
  }
  if (!clocks.empty()) {
    std::sort(clocks.begin(), clocks.end());
    m.sm_mhz_during = quantile_sorted(clocks, 0.5);
  }
  return m;
}

}  // namespace nb
