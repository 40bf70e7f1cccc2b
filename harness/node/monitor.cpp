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

namespace {

// Integers as integers (byte counts stay exact), other values with up to 3 decimals.
std::string num(double v) {
  if (!std::isfinite(v)) return std::isnan(v) ? "NaN" : (v > 0 ? "+Inf" : "-Inf");
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  std::snprintf(buf, sizeof buf, "%.3f", v);
  std::string s = buf;
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

std::string opt(const std::optional<double>& v) { return v ? num(*v) : ""; }

json jopt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

// The sample's quantities in one place: name (CSV and JSON), value.
struct Field {
  const char* name;
  std::optional<double> GpuSample::*member;
};
constexpr Field kFields[] = {
    {"gpu_util_pct", &GpuSample::gpu_util_pct},
    {"mem_util_pct", &GpuSample::mem_util_pct},
    {"mem_used_bytes", &GpuSample::mem_used_bytes},
    {"mem_free_bytes", &GpuSample::mem_free_bytes},
    {"mem_total_bytes", &GpuSample::mem_total_bytes},
    {"temperature_c", &GpuSample::temperature_c},
    {"power_w", &GpuSample::power_w},
    {"sm_clock_mhz", &GpuSample::sm_clock_mhz},
    {"mem_clock_mhz", &GpuSample::mem_clock_mhz},
    {"pcie_tx_bytes_per_s", &GpuSample::pcie_tx_bytes_per_s},
    {"pcie_rx_bytes_per_s", &GpuSample::pcie_rx_bytes_per_s},
    {"nvlink_tx_bytes_per_s", &GpuSample::nvlink_tx_bytes_per_s},
    {"nvlink_rx_bytes_per_s", &GpuSample::nvlink_rx_bytes_per_s},
    {"ecc_volatile_corrected", &GpuSample::ecc_volatile_corrected},
    {"ecc_volatile_uncorrected", &GpuSample::ecc_volatile_uncorrected},
};

}  // namespace

std::string csv_header() {
  std::string h = "unix_time,t_s,gpu,uuid";
  for (const auto& f : kFields) h += std::string(",") + f.name;
  return h + ",throttle_reasons";
}

std::string csv_line(const GpuSample& s) {
  // A uuid never holds a comma or a quote; quote it anyway if one does.
  std::string uuid = s.uuid;
  if (uuid.find_first_of(",\"\n") != std::string::npos) {
    std::string q(1, '"');
    for (char c : s.uuid) {
      if (c == '"') q.push_back('"');
      q.push_back(c);
    }
    q.push_back('"');
    uuid.swap(q);
  }
  std::string l = num(s.unix_time) + "," + num(s.t_s) + "," + std::to_string(s.gpu) + "," + uuid;
  for (const auto& f : kFields) {
    l.push_back(',');
    l.append(opt(s.*(f.member)));
  }
  l.push_back(',');
  l.append(throttle_text(s.throttle_mask));
  return l;
}

json sample_json(const GpuSample& s) {
  json j = {{"unix_time", s.unix_time}, {"t_s", s.t_s}, {"gpu", s.gpu}, {"uuid", s.uuid}};
  for (const auto& f : kFields) j[f.name] = jopt(s.*(f.member));
  j["throttle_mask"] = s.throttle_mask ? json(*s.throttle_mask) : json(nullptr);
  j["throttle_reasons"] = s.throttle_mask ? json(throttle_reason_names(*s.throttle_mask)) : json(nullptr);
  return j;
}

std::string jsonl_line(const GpuSample& s) { return sample_json(s).dump(-1, ' ', false, json::error_handler_t::replace); }

std::string table_text(const std::vector<GpuSample>& latest) {
  std::ostringstream os;
  auto cell = [](const std::optional<double>& v, double scale, int decimals) {
    if (!v) return std::string("-");
    std::ostringstream s;
    s << std::fixed << std::setprecision(decimals) << *v * scale;
    return s.str();
  };
  os << std::left << std::setw(4) << "gpu" << std::right << std::setw(6) << "util%" << std::setw(6) << "mem%"
     << std::setw(15) << "mem used/GiB" << std::setw(7) << "temp C" << std::setw(9) << "power W" << std::setw(8)
     << "SM MHz" << std::setw(9) << "mem MHz" << std::setw(16) << "PCIe tx/rx MB/s" << std::setw(18)
     << "NVLink tx/rx GB/s" << std::setw(10) << "ECC c/u" << "  throttle\n";
  for (const auto& s : latest) {
    const std::string mem = cell(s.mem_used_bytes, 1.0 / (1 << 30), 1) + "/" + cell(s.mem_total_bytes, 1.0 / (1 << 30), 1);
    const std::string pcie = cell(s.pcie_tx_bytes_per_s, 1e-6, 0) + "/" + cell(s.pcie_rx_bytes_per_s, 1e-6, 0);
    const std::string nvl = cell(s.nvlink_tx_bytes_per_s, 1e-9, 1) + "/" + cell(s.nvlink_rx_bytes_per_s, 1e-9, 1);
    const std::string ecc = cell(s.ecc_volatile_corrected, 1, 0) + "/" + cell(s.ecc_volatile_uncorrected, 1, 0);
    const std::string thr = throttle_text(s.throttle_mask);
    os << std::left << std::setw(4) << s.gpu << std::right << std::setw(6) << cell(s.gpu_util_pct, 1, 0) << std::setw(6)
       << cell(s.mem_util_pct, 1, 0) << std::setw(15) << mem << std::setw(7) << cell(s.temperature_c, 1, 0) << std::setw(9)
       << cell(s.power_w, 1, 1) << std::setw(8) << cell(s.sm_clock_mhz, 1, 0) << std::setw(9) << cell(s.mem_clock_mhz, 1, 0)
       << std::setw(16) << pcie << std::setw(18) << nvl << std::setw(10) << ecc << "  " << (thr.empty() ? "-" : thr)
       << "\n";
  }
  return os.str();
}


std::string prometheus_text(const std::vector<GpuSample>& latest, double unix_time) {
  std::ostringstream os;
  auto labels = [](const GpuSample& s) {
    return "gpu=\"" + std::to_string(s.gpu) + "\",uuid=\"" + prometheus_label_escape(s.uuid) + "\"";
  };
  struct Metric {
    const char* name;
    const char* help;
    std::optional<double> GpuSample::*member;
    double scale;
  };
  const Metric metrics[] = {
      {"nodebench_gpu_utilization_percent", "Percent of the last sample period in which a kernel ran.", &GpuSample::gpu_util_pct, 1},
      {"nodebench_gpu_memory_utilization_percent", "Percent of the last sample period in which device memory was read or written.", &GpuSample::mem_util_pct, 1},
      {"nodebench_gpu_memory_used_bytes", "Device memory in use, bytes.", &GpuSample::mem_used_bytes, 1},
      {"nodebench_gpu_memory_free_bytes", "Device memory free, bytes.", &GpuSample::mem_free_bytes, 1},
      {"nodebench_gpu_memory_total_bytes", "Device memory in all, bytes.", &GpuSample::mem_total_bytes, 1},
      {"nodebench_gpu_temperature_celsius", "GPU die temperature, degrees Celsius.", &GpuSample::temperature_c, 1},
      {"nodebench_gpu_power_watts", "Board power draw, watts.", &GpuSample::power_w, 1},
      {"nodebench_gpu_sm_clock_hertz", "SM clock, hertz.", &GpuSample::sm_clock_mhz, 1e6},
      {"nodebench_gpu_memory_clock_hertz", "Memory clock, hertz.", &GpuSample::mem_clock_mhz, 1e6},
      {"nodebench_gpu_pcie_tx_bytes_per_second", "PCIe throughput out of the GPU, bytes per second.", &GpuSample::pcie_tx_bytes_per_s, 1},
      {"nodebench_gpu_pcie_rx_bytes_per_second", "PCIe throughput into the GPU, bytes per second.", &GpuSample::pcie_rx_bytes_per_s, 1},
      {"nodebench_gpu_nvlink_tx_bytes_per_second", "NVLink data sent over every link, bytes per second.", &GpuSample::nvlink_tx_bytes_per_s, 1},
      {"nodebench_gpu_nvlink_rx_bytes_per_second", "NVLink data received over every link, bytes per second.", &GpuSample::nvlink_rx_bytes_per_s, 1},
      {"nodebench_gpu_ecc_volatile_corrected_errors", "Corrected ECC errors since the driver loaded.", &GpuSample::ecc_volatile_corrected, 1},
      {"nodebench_gpu_ecc_volatile_uncorrected_errors", "Uncorrected ECC errors since the driver loaded.", &GpuSample::ecc_volatile_uncorrected, 1},
  };
  for (const auto& m : metrics) {
    bool any = false;
    for (const auto& s : latest) any = any || (s.*(m.member)).has_value();
    if (!any) continue;
    os << "# HELP " << m.name << " " << m.help << "\n# TYPE " << m.name << " gauge\n";
    for (const auto& s : latest)
      if (const auto& v = s.*(m.member)) os << m.name << "{" << labels(s) << "} " << num(*v * m.scale) << "\n";
  }
  bool any_mask = false;
  for (const auto& s : latest) any_mask = any_mask || s.throttle_mask.has_value();
  if (any_mask) {
    os << "# HELP nodebench_gpu_throttle_reason 1 when the clocks are held back for this reason (NVML clocks event reasons).\n"
       << "# TYPE nodebench_gpu_throttle_reason gauge\n";
    const std::vector<std::string> all = throttle_reason_names(~0ull);  // every known name, then "other"
    for (const auto& s : latest) {
      if (!s.throttle_mask) continue;
      const auto set = throttle_reason_names(*s.throttle_mask);
      for (const auto& r : all) {
        const bool on = std::find(set.begin(), set.end(), r) != set.end();
        os << "nodebench_gpu_throttle_reason{" << labels(s) << ",reason=\"" << prometheus_label_escape(r) << "\"} "
           << (on ? 1 : 0) << "\n";
      }
    }
  }
  os << "# HELP nodebench_gpu_monitor_timestamp_seconds Unix time of the samples in this file.\n"
     << "# TYPE nodebench_gpu_monitor_timestamp_seconds gauge\n"
     << "nodebench_gpu_monitor_timestamp_seconds " << num(std::floor(unix_time)) << "\n";
  return os.str();
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
