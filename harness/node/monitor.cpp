#include "node/monitor.hpp"
#include "base/prometheus.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <sstream>

namespace nb {
using nlohmann::json;

double monotonic_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::optional<double> counter_rate(unsigned long long before, unsigned long long after, double dt_s) {
  if (!(dt_s > 0) || after < before) return std::nullopt;
  return double(after - before) / dt_s;
}

GpuSample sample_gpu(const Nvml& nvml, const MonitoredGpu& gpu, double t_s, double unix_time, NvlinkState& prev,
                     bool full) {
  GpuSample s;
  s.gpu = gpu.label;
  s.uuid = gpu.uuid;
  s.t_s = t_s;
  s.unix_time = unix_time;
  const int h = gpu.nvml_index;
  if (auto u = nvml.utilization(h)) {
    s.gpu_util_pct = u->gpu;
    s.mem_util_pct = u->memory;
  }
  if (auto m = nvml.memory_info(h)) {
    s.mem_used_bytes = double(m->used);
    s.mem_free_bytes = double(m->free);
    s.mem_total_bytes = double(m->total);
  }
  const ClockSnapshot c = nvml.snapshot(h);
  s.sm_clock_mhz = c.sm_mhz;
  s.mem_clock_mhz = c.mem_mhz;
  s.temperature_c = c.temperature_c;
  s.power_w = c.power_w;
  s.throttle_mask = c.throttle_mask;
  if (!full) return s;
  s.pcie_tx_bytes_per_s = nvml.pcie_tx_bytes_per_s(h);
  s.pcie_rx_bytes_per_s = nvml.pcie_rx_bytes_per_s(h);
  if (auto n = nvml.nvlink_counters(h)) {
    if (prev.counters) {
      s.nvlink_tx_bytes_per_s = counter_rate(prev.counters->tx_bytes, n->tx_bytes, t_s - prev.t_s);
      s.nvlink_rx_bytes_per_s = counter_rate(prev.counters->rx_bytes, n->rx_bytes, t_s - prev.t_s);
    }
    prev.counters = n;
    prev.t_s = t_s;
  }
  const EccCounters e = nvml.ecc_counters(h);
  if (e.volatile_corrected) s.ecc_volatile_corrected = double(*e.volatile_corrected);
  if (e.volatile_uncorrected) s.ecc_volatile_uncorrected = double(*e.volatile_uncorrected);
  return s;
}

std::string throttle_text(const std::optional<unsigned long long>& mask) {
  if (!mask) return "";
  if (*mask == 0) return "none";
  std::string out;
  for (const auto& n : throttle_reason_names(*mask)) out += (out.empty() ? "" : "|") + n;
  return out;
}

GpuSeries downsample(const GpuSeries& in, size_t max_points) {
  const size_t n = in.t_s.size();
  if (max_points == 0 || n <= max_points) return in;
  GpuSeries out;
  out.gpu = in.gpu;
  out.uuid = in.uuid;
  auto mean = [](const std::vector<std::optional<double>>& v, size_t a, size_t b) -> std::optional<double> {
    double sum = 0;
    size_t k = 0;
    for (size_t i = a; i < b && i < v.size(); ++i)
      if (v[i]) {
        sum += *v[i];
        ++k;
      }
    if (k == 0) return std::nullopt;
    return sum / double(k);
  };
  for (size_t b = 0; b < max_points; ++b) {
    const size_t lo = b * n / max_points, hi = (b + 1) * n / max_points;
    if (hi <= lo) continue;
    double t = 0;
    for (size_t i = lo; i < hi; ++i) t += in.t_s[i];
    out.t_s.push_back(t / double(hi - lo));
    out.gpu_util.push_back(mean(in.gpu_util, lo, hi));
    out.sm_clock_mhz.push_back(mean(in.sm_clock_mhz, lo, hi));
    out.power_w.push_back(mean(in.power_w, lo, hi));
    out.mem_used_bytes.push_back(mean(in.mem_used_bytes, lo, hi));
  }
  return out;
}

json timeline_json(double interval_s, const std::vector<GpuSeries>& gpus, const std::vector<TimelineMark>& marks) {
  auto arr = [](const std::vector<std::optional<double>>& v) {
    json a = json::array();
    for (const auto& x : v) a.push_back(x ? json(*x) : json(nullptr));
    return a;
  };
  json g = json::array();
  for (const auto& s : gpus)
    g.push_back({{"cuda_index", s.gpu},
                 {"uuid", s.uuid.empty() ? json(nullptr) : json(s.uuid)},
                 {"t_s", s.t_s},
                 {"gpu_util", arr(s.gpu_util)},
                 {"sm_clock_mhz", arr(s.sm_clock_mhz)},
                 {"power_w", arr(s.power_w)},
                 {"mem_used_bytes", arr(s.mem_used_bytes)}});
  json m = json::array();
  for (const auto& k : marks) {
    json o = {{"t_s", k.t_s}, {"text", k.text}};
    if (!k.gpus.empty()) o["gpus"] = k.gpus;
    m.push_back(std::move(o));
  }
  return {{"interval_s", interval_s}, {"gpus", g}, {"marks", m}};
}

// --- Sampler ---------------------------------------------------------------------------------

Sampler::Sampler(const Nvml& nvml, std::vector<MonitoredGpu> gpus, double interval_s)
    : nvml_(nvml), gpus_(std::move(gpus)), interval_s_(interval_s), nvlink_(gpus_.size()), series_(gpus_.size()) {
  t0_ = monotonic_s();
  for (size_t i = 0; i < gpus_.size(); ++i) {
    series_[i].gpu = gpus_[i].label;
    series_[i].uuid = gpus_[i].uuid;
  }
}

Sampler::~Sampler() { stop(); }

double Sampler::now_s() const { return monotonic_s() - t0_; }

void Sampler::start() {
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] { loop(); });
}

void Sampler::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Sampler::mark(const std::string& text, std::vector<int> gpus) {
  std::lock_guard<std::mutex> lock(mu_);
  marks_.push_back({now_s(), text, std::move(gpus)});
}

void Sampler::loop() {
  const auto start = std::chrono::steady_clock::now();
  for (size_t tick = 0;; ++tick) {
    std::vector<GpuSample> round;
    for (size_t i = 0; i < gpus_.size(); ++i) {
      const double unix_time =
          std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
      round.push_back(sample_gpu(nvml_, gpus_[i], now_s(), unix_time, nvlink_[i], false));
    }
    std::unique_lock<std::mutex> lock(mu_);
    for (size_t i = 0; i < round.size(); ++i) {
      GpuSeries& s = series_[i];
      const GpuSample& x = round[i];
      s.t_s.push_back(x.t_s);
      s.gpu_util.push_back(x.gpu_util_pct);
      s.sm_clock_mhz.push_back(x.sm_clock_mhz);
      s.power_w.push_back(x.power_w);
      s.mem_used_bytes.push_back(x.mem_used_bytes);
    }
    if (stop_) return;  // the last round, taken after stop() was asked for
    const auto next = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                  std::chrono::duration<double>(interval_s_ * double(tick + 1)));
    // Woken by stop(): one more round (so a short case still has a sample at its end), then out.
    cv_.wait_until(lock, next, [this] { return stop_; });
  }
}

std::vector<GpuSeries> Sampler::series() const {
  std::lock_guard<std::mutex> lock(mu_);
  return series_;
}

std::vector<TimelineMark> Sampler::marks() const {
  std::lock_guard<std::mutex> lock(mu_);
  return marks_;
}

}  // namespace nb
