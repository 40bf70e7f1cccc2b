// GPU timing: CUDA events around the timed region, a blocking kernel that holds the stream
// while the host queues the work (so enqueue cost stays out of short kernels), optional L2
// flush before each sample (cold), warm-up outside the timing, and sampling until the
// coefficient of variation reaches its target or the time cap is hit.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "node/nvml.hpp"
#include "base/resources.hpp"

namespace nb {

enum class L2Mode { hot, cold };

// events: CUDA events around the work on the GPU, with the blocking kernel holding the stream
// (what the GPU spends). host: the host's clock from the first call to the end of a stream
// synchronize (what a caller waits: latencies, and pageable copies, which the driver stages
// through the host and which must not be held back by a blocking kernel).
enum class Timer { events, host };

struct MeasureConfig {
  L2Mode l2 = L2Mode::hot;
  Timer timer = Timer::events;
  double target_cv = 0.01;     // stop once the samples' CV is at most this ...
  size_t min_samples = 10;     // ... and at least this many were taken
  size_t max_samples = 2000;
  double max_time_s = 1.0;     // wall-clock cap on sampling for one case
  size_t fixed_samples = 0;    // when > 0: exactly this many samples, no adaptive stop
  bool to_cap = false;         // never stop on the CV: sample until max_samples or max_time_s (for work
                               // whose CV hovers about the target, so that its cost does not flip)
  double warmup_s = 0.02;      // at least this long of warm-up launches (and >= 2 launches)
  double min_sample_s = 50e-6; // hot mode: batch launches so a sample lasts at least this long
  size_t max_batch = 256;
  uint64_t blocking_timeout_ns = 500'000'000;
};

// The decision of the sampling loop after each sample; pure, so it is unit-tested.
enum class StopReason { none, converged, time_cap, max_samples, fixed };
StopReason should_stop(const MeasureConfig& cfg, size_t n, double cv, double elapsed_s);

// Launches per sample so that one sample lasts at least min_sample_s (hot mode).
size_t choose_batch(const MeasureConfig& cfg, double seconds_per_launch);

// A latency configuration: one operation per sample (no batching of back-to-back operations,
// which would hide the latency behind the pipelining), and at least `min_samples` samples.
MeasureConfig one_op_per_sample(MeasureConfig cfg, size_t min_samples = 50);

// Both directions of a link at once, each timed by its own events: the sample time for 2x the
// bytes whose rate is the sum of the two directions' rates, 2 / (1/t_fwd + 1/t_rev).
double both_ways_sample_s(double t_fwd_s, double t_rev_s);

struct Measurement {
  std::vector<double> samples_s;  // per launch
  size_t batch = 1;
  size_t warmup_runs = 0;
  StopReason stop = StopReason::none;
  bool blocking_timeout = false;
  bool throttled = false;     // thermal / hardware slowdown seen between samples
  bool power_capped = false;  // software power cap seen between samples
  std::optional<double> sm_mhz_during;  // median of the SM clock read between samples
  std::vector<unsigned long long> throttle_masks;
};

// For cases that time themselves (several streams or GPUs at once): calls `sample()`, which
// runs the work once and returns its seconds, until should_stop() says so.
Measurement sample_until_stop(const MeasureConfig& cfg, const std::function<double()>& sample);
// The same after `warmup` untimed runs: `run(false)` warms up, `run(true)` is a sample and returns
// its seconds; the Measurement records the warm-up runs.
Measurement warm_then_sample(const MeasureConfig& cfg, int warmup, const std::function<double(bool keep)>& run);

// Holds a stream behind a blocking kernel while the host queues work, then releases it, so that
// the host's enqueue cost stays out of CUDA-event timings of short work: the Measurer's method,
// for timings made outside it (the algorithm choice times its candidates this way, as the cases
// that use the choice are measured).
class StreamHold {
 public:
  StreamHold();
  StreamHold(const StreamHold&) = delete;
  StreamHold& operator=(const StreamHold&) = delete;
  void hold(cudaStream_t s, uint64_t timeout_ns = 500'000'000);
  void release();                 // everything is queued: the kernel ends
  bool timed_out() const;         // the kernel gave up waiting before release()
 private:
  PinnedBuffer flag_;             // [0] release, [1] timed out; mapped into the device
  int32_t* dev_flag_ = nullptr;
};

class Measurer {
 public:
  // `nvml_index` may be empty: clocks are then not read.
  Measurer(int device, size_t l2_bytes, const Nvml* nvml, std::optional<int> nvml_index);
  Measurer(const Measurer&) = delete;
  Measurer& operator=(const Measurer&) = delete;

  // `launch` enqueues one instance of the timed work on the stream it is given.
  Measurement measure(cudaStream_t stream, const std::function<void(cudaStream_t)>& launch,
                      const MeasureConfig& cfg);

 private:
  void flush_l2(cudaStream_t s);
  int device_;
  size_t l2_bytes_;
  const Nvml* nvml_;
  std::optional<int> nvml_index_;
  StreamHold hold_;
  DeviceBuffer flush_buf_;
  uint32_t salt_ = 1;
  Event start_, stop_;
};

std::string to_string(StopReason r);

}  // namespace nb
