#include "output/monitor_formats.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <iomanip>
#include <sstream>

#include "base/files.hpp"
#include "base/prometheus.hpp"

namespace nb {
using nlohmann::json;

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

void CsvSamples::sampled(const std::vector<GpuSample>& round, double) {
  if (!header_) os_ << csv_header() << "\n";
  header_ = true;
  for (const auto& s : round) os_ << csv_line(s) << "\n";
}

void JsonlSamples::sampled(const std::vector<GpuSample>& round, double) {
  for (const auto& s : round) os_ << jsonl_line(s) << "\n";
}

void TableSamples::sampled(const std::vector<GpuSample>& round, double) {
  const std::time_t t = std::time(nullptr);
  char when[32];
  std::tm tm{};
  localtime_r(&t, &tm);
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
  if (live_) os_ << "\033[H\033[2J";
  os_ << "nodebench monitor  " << when << "  every " << interval_s_ << " s" << (live_ ? "  (Ctrl-C to stop)" : "") << "\n";
  for (const auto& g : gpus_) os_ << "  gpu " << g.label << ": " << g.name << "  " << g.uuid << "\n";
  os_ << table_text(round) << (live_ ? "" : "\n");
}

void PrometheusSamples::sampled(const std::vector<GpuSample>& round, double unix_time) {
  write_file_atomic(path_, prometheus_text(round, unix_time));
}

}  // namespace nb
