// The monitor's formats (`nodebench monitor --format`): the sample as CSV, JSON lines, a live
// table and a Prometheus textfile for node_exporter, each also a Reporter (run/reporter.hpp) fed
// one round of samples at a time.
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "node/monitor.hpp"
#include "run/reporter.hpp"

namespace nb {

std::string csv_header();
std::string csv_line(const GpuSample& s);
std::string jsonl_line(const GpuSample& s);  // one JSON object, no newline
nlohmann::json sample_json(const GpuSample& s);
// The live table: one row per GPU of the latest samples.
std::string table_text(const std::vector<GpuSample>& latest);
// Prometheus text exposition for node_exporter's textfile collector: `nodebench_gpu_*` gauges
// with `gpu` and `uuid` labels, HELP and TYPE lines once per metric.
std::string prometheus_text(const std::vector<GpuSample>& latest, double unix_time);

// --format csv / jsonl: a line per GPU per round on `os` (the CSV header first).
class CsvSamples : public Reporter {
 public:
  explicit CsvSamples(std::ostream& os) : os_(os) {}
  std::string what() const override { return "CSV"; }
  void sampled(const std::vector<GpuSample>& round, double unix_time) override;

 private:
  std::ostream& os_;
  bool header_ = false;
};
class JsonlSamples : public Reporter {
 public:
  explicit JsonlSamples(std::ostream& os) : os_(os) {}
  std::string what() const override { return "JSON lines"; }
  void sampled(const std::vector<GpuSample>& round, double unix_time) override;

 private:
  std::ostream& os_;
};
// --format table: the round as a table with a title (cleared and redrawn when `live`).
class TableSamples : public Reporter {
 public:
  TableSamples(std::ostream& os, std::vector<MonitoredGpu> gpus, double interval_s, bool live)
      : os_(os), gpus_(std::move(gpus)), interval_s_(interval_s), live_(live) {}
  std::string what() const override { return "table"; }
  void sampled(const std::vector<GpuSample>& round, double unix_time) override;

 private:
  std::ostream& os_;
  std::vector<MonitoredGpu> gpus_;
  double interval_s_;
  bool live_;
};
// --format prometheus: the file replaced atomically after each round; throws nb::Error.
class PrometheusSamples : public Reporter {
 public:
  explicit PrometheusSamples(std::string path) : path_(std::move(path)) {}
  std::string what() const override { return "Prometheus textfile"; }
  void sampled(const std::vector<GpuSample>& round, double unix_time) override;

 private:
  std::string path_;
};

}  // namespace nb
