// `nodebench monitor` and `run --monitor` without a GPU: the formats (CSV, JSON lines,
// Prometheus), throttle-reason decoding, the timeline's down-sampling and marks, the sampler
// thread (over an NVML that is not there), the atomic textfile write, and the CLI.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <thread>

#include "app/cli.hpp"
#include "app/cmd_monitor.hpp"
#include "output/monitor_formats.hpp"
#include "node/monitor.hpp"
#include "node/power_meter.hpp"
#include "run/plan.hpp"
#include "run/result.hpp"
#include "run/session.hpp"
#include "bench/settings.hpp"

using namespace nb;
using nlohmann::json;

namespace {

GpuSample full_sample() {
  GpuSample s;
  s.gpu = 1;
  s.uuid = "GPU-1234";
  s.t_s = 2.5;
  s.unix_time = 1700000000.25;
  s.gpu_util_pct = 97;
  s.mem_util_pct = 40;
  s.mem_used_bytes = 85899345920.0;  // 80 GiB: an integer beyond 32 bits must stay exact
  s.mem_free_bytes = 1024;
  s.mem_total_bytes = 85899346944.0;
  s.temperature_c = 61;
  s.power_w = 612.345;
  s.sm_clock_mhz = 1980;
  s.mem_clock_mhz = 2619;
  s.throttle_mask = 0x4ull | 0x40ull;
  s.pcie_tx_bytes_per_s = 1.5e9;
  s.pcie_rx_bytes_per_s = 2e6;
  s.nvlink_tx_bytes_per_s = 3e11;
  s.nvlink_rx_bytes_per_s = 2.5e11;
  s.ecc_volatile_corrected = 3;
  s.ecc_volatile_uncorrected = 0;
  return s;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

ParseOutcome parse(std::vector<std::string> a) {
  a.insert(a.begin(), "nodebench");
  return parse_cli(a);
}

}  // namespace

TEST(Monitor, ThrottleTextDecodesEachBit) {
  EXPECT_EQ(throttle_text(std::nullopt), "");
  EXPECT_EQ(throttle_text(0ull), "none");
  EXPECT_EQ(throttle_text(0x4ull | 0x40ull), "sw_power_cap|hw_thermal_slowdown");
  EXPECT_EQ(throttle_text(0x1ull), "gpu_idle");
  EXPECT_EQ(throttle_text(0x80ull | 0x100000ull), "hw_power_brake_slowdown|other");
}

TEST(Monitor, CounterRate) {
  EXPECT_DOUBLE_EQ(*counter_rate(1000, 3000, 2.0), 1000.0);
  EXPECT_FALSE(counter_rate(3000, 1000, 2.0));  // counter went back (driver reload)
  EXPECT_FALSE(counter_rate(1000, 3000, 0.0));
}

TEST(Monitor, CsvLineMatchesHeader) {
  const std::vector<std::string> head = split(csv_header(), ',');
  const GpuSample s = full_sample();
  const std::vector<std::string> cells = split(csv_line(s), ',');
  ASSERT_EQ(cells.size(), head.size());
  std::map<std::string, std::string> row;
  for (size_t i = 0; i < head.size(); ++i) row[head[i]] = cells[i];
  EXPECT_EQ(row["gpu"], "1");
  EXPECT_EQ(row["uuid"], "GPU-1234");
  EXPECT_EQ(row["t_s"], "2.5");
  EXPECT_EQ(row["mem_used_bytes"], "85899345920");
  EXPECT_EQ(row["power_w"], "612.345");
  EXPECT_EQ(row["nvlink_tx_bytes_per_s"], "300000000000");
  EXPECT_EQ(row["throttle_reasons"], "sw_power_cap|hw_thermal_slowdown");
  // A sample where NVML answered nothing: empty cells, same count.
  GpuSample empty;
  empty.gpu = 0;
  const std::vector<std::string> e = split(csv_line(empty), ',');
  ASSERT_EQ(e.size(), head.size());
  EXPECT_EQ(e[4], "");
  EXPECT_EQ(e.back(), "");
}

TEST(Monitor, CsvQuotesAnOddUuid) {
  GpuSample s;
  s.uuid = "a,b\"c";
  const std::string line = csv_line(s);
  EXPECT_NE(line.find(",\"a,b\"\"c\","), std::string::npos) << line;
}

TEST(Monitor, JsonLineRoundTrips) {
  const std::string line = jsonl_line(full_sample());
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const json j = json::parse(line);
  EXPECT_EQ(j["gpu"], 1);
  EXPECT_EQ(j["uuid"], "GPU-1234");
  EXPECT_DOUBLE_EQ(j["sm_clock_mhz"].get<double>(), 1980);
  EXPECT_EQ(j["mem_used_bytes"].get<double>(), 85899345920.0);
  EXPECT_EQ(j["throttle_mask"], 0x44);
  EXPECT_EQ(j["throttle_reasons"], json({"sw_power_cap", "hw_thermal_slowdown"}));
  const json e = json::parse(jsonl_line(GpuSample{}));
  EXPECT_TRUE(e["power_w"].is_null());
  EXPECT_TRUE(e["throttle_reasons"].is_null());
}

TEST(Monitor, PrometheusTextNamesLabelsAndEscaping) {
  GpuSample a = full_sample();
  a.gpu = 0;
  a.uuid = "GPU-\"odd\\name\nx";
  GpuSample b = full_sample();
  b.gpu = 1;
  b.power_w.reset();  // no power for this GPU: no line for it
  b.nvlink_tx_bytes_per_s.reset();
  a.nvlink_tx_bytes_per_s.reset();  // no GPU has it: no HELP/TYPE either
  const std::string text = prometheus_text({a, b}, 1700000000.7);
  const std::string la = "gpu=\"0\",uuid=\"GPU-\\\"odd\\\\name\\nx\"";
  EXPECT_NE(text.find("nodebench_gpu_power_watts{" + la + "} 612.345\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("nodebench_gpu_power_watts{gpu=\"1\""), std::string::npos);
  EXPECT_NE(text.find("nodebench_gpu_sm_clock_hertz{gpu=\"1\",uuid=\"GPU-1234\"} 1980000000\n"), std::string::npos);
  EXPECT_EQ(text.find("nodebench_gpu_nvlink_tx_bytes_per_second"), std::string::npos);
  EXPECT_NE(text.find("nodebench_gpu_throttle_reason{gpu=\"1\",uuid=\"GPU-1234\",reason=\"sw_power_cap\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("nodebench_gpu_throttle_reason{gpu=\"1\",uuid=\"GPU-1234\",reason=\"gpu_idle\"} 0\n"),
            std::string::npos);
  EXPECT_NE(text.find("nodebench_gpu_monitor_timestamp_seconds 1700000000\n"), std::string::npos);
  // Every sample line's metric has exactly one HELP and one TYPE line before its first sample;
  // every name starts with nodebench_gpu_; no raw newline inside a label.
  std::map<std::string, int> help, type;
  std::set<std::string> seen;
  std::istringstream is(text);
  for (std::string line; std::getline(is, line);) {
    ASSERT_FALSE(line.empty());
    if (line.rfind("# HELP ", 0) == 0) {
      ++help[split(line, ' ')[2]];
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      const auto parts = split(line, ' ');
      ++type[parts[2]];
      EXPECT_EQ(parts[3], "gauge");
      continue;
    }
    const std::string name = line.substr(0, line.find_first_of("{ "));
    EXPECT_EQ(name.rfind("nodebench_gpu_", 0), 0u) << line;
    EXPECT_EQ(help[name], 1) << name;
    EXPECT_EQ(type[name], 1) << name;
    seen.insert(name);
  }
  for (const auto& [n, k] : help) EXPECT_EQ(k, 1) << n;
  EXPECT_TRUE(seen.count("nodebench_gpu_memory_used_bytes"));
  EXPECT_TRUE(seen.count("nodebench_gpu_ecc_volatile_corrected_errors"));
}

TEST(Monitor, PrometheusFileIsReplacedAtomically) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(NB_TEST_OUTPUT_DIR) / "monitor_prom";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "nodebench.prom").string();
  write_file_atomic(path, prometheus_text({full_sample()}, 1.0));
  const std::string second = prometheus_text({full_sample()}, 2.0);
  write_file_atomic(path, second);
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_EQ(ss.str(), second);
  // No temporary file is left beside it (the textfile collector reads every *.prom).
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    ++files;
    EXPECT_EQ(e.path().filename(), "nodebench.prom");
  }
  EXPECT_EQ(files, 1u);
  EXPECT_THROW(write_file_atomic((dir / "missing" / "x.prom").string(), second), Error);
}

TEST(Monitor, DownsampleKeepsBucketMeans) {
  GpuSeries s;
  s.gpu = 3;
  s.uuid = "GPU-x";
  const size_t n = 1000;
  for (size_t i = 0; i < n; ++i) {
    s.t_s.push_back(double(i));
    s.gpu_util.push_back(double(i % 10));
    s.sm_clock_mhz.push_back(i < 500 ? std::optional<double>() : std::optional<double>(1500.0 + double(i % 2)));
    s.power_w.push_back(i % 2 == 0 ? std::optional<double>(100.0) : std::nullopt);
    s.mem_used_bytes.push_back(double(i) * 1e6);
  }
  const GpuSeries d = downsample(s, 100);
  ASSERT_EQ(d.t_s.size(), 100u);
  ASSERT_EQ(d.gpu_util.size(), 100u);
  EXPECT_EQ(d.gpu, 3);
  EXPECT_EQ(d.uuid, "GPU-x");
  for (size_t b = 0; b < 100; ++b) {
    EXPECT_DOUBLE_EQ(d.t_s[b], double(b * 10) + 4.5);
    EXPECT_DOUBLE_EQ(*d.gpu_util[b], 4.5);
    EXPECT_DOUBLE_EQ(*d.power_w[b], 100.0);  // the mean of the samples that have a value
    if (b < 50) EXPECT_FALSE(d.sm_clock_mhz[b].has_value());
    else EXPECT_DOUBLE_EQ(*d.sm_clock_mhz[b], 1500.5);
  }
  // The mean over the whole run is kept (equal buckets).
  const double mean_in = std::accumulate(s.mem_used_bytes.begin(), s.mem_used_bytes.end(), 0.0,
                                         [](double a, const std::optional<double>& v) { return a + *v; }) / double(n);
  const double mean_out = std::accumulate(d.mem_used_bytes.begin(), d.mem_used_bytes.end(), 0.0,
                                          [](double a, const std::optional<double>& v) { return a + *v; }) / 100.0;
  EXPECT_NEAR(mean_in, mean_out, 1e-6 * mean_in);
  // Uneven: 1001 samples into 600 points: at most 600, times increasing.
  s.t_s.push_back(1000);
  s.gpu_util.push_back(0.0);
  s.sm_clock_mhz.push_back(1.0);
  s.power_w.push_back(1.0);
  s.mem_used_bytes.push_back(1.0);
  const GpuSeries u = downsample(s, 600);
  EXPECT_EQ(u.t_s.size(), 600u);
  for (size_t i = 1; i < u.t_s.size(); ++i) EXPECT_LT(u.t_s[i - 1], u.t_s[i]);
  // Buckets of one or two samples: [0, 1) first, [999, 1001) last.
  EXPECT_DOUBLE_EQ(u.t_s.front(), 0.0);
  EXPECT_DOUBLE_EQ(u.t_s.back(), 999.5);
  // Short enough already: unchanged.
  const GpuSeries same = downsample(s, 5000);
  EXPECT_EQ(same.t_s, s.t_s);
}

TEST(Monitor, TimelineJsonKeepsMarks) {
  GpuSeries s;
  s.gpu = 0;
  s.uuid = "GPU-a";
  s.t_s = {0, 1};
  s.gpu_util = {10.0, std::nullopt};
  s.sm_clock_mhz = {1000.0, 1100.0};
  s.power_w = {50.0, 60.0};
  s.mem_used_bytes = {1.0, 2.0};
  const json t = timeline_json(0.5, {s}, {{0.2, "start memory/copy", {0}}, {0.9, "end memory/copy", {}}});
  EXPECT_DOUBLE_EQ(t["interval_s"].get<double>(), 0.5);
  ASSERT_EQ(t["gpus"].size(), 1u);
  EXPECT_EQ(t["gpus"][0]["cuda_index"], 0);
  EXPECT_EQ(t["gpus"][0]["uuid"], "GPU-a");
  EXPECT_TRUE(t["gpus"][0]["gpu_util"][1].is_null());
  EXPECT_EQ(t["gpus"][0]["sm_clock_mhz"], json({1000.0, 1100.0}));
  ASSERT_EQ(t["marks"].size(), 2u);
  EXPECT_EQ(t["marks"][0]["text"], "start memory/copy");
  EXPECT_EQ(t["marks"][0]["gpus"], json({0}));
  EXPECT_FALSE(t["marks"][1].contains("gpus"));
  EXPECT_DOUBLE_EQ(t["marks"][1]["t_s"].get<double>(), 0.9);
}

TEST(Monitor, SamplerRunsOverAMissingNvml) {
  const Nvml nvml("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(nvml.available());
  EXPECT_NE(nvml.error().find("/nonexistent/libnvidia-ml.so.1"), std::string::npos);
  Sampler s(nvml, {{5, 0, "GPU-z", "fake"}}, 0.01);
  s.start();
  s.mark("start a", {5});
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  s.mark("end a");
  s.stop();
  const auto series = s.series();
  ASSERT_EQ(series.size(), 1u);
  EXPECT_EQ(series[0].gpu, 5);
  EXPECT_EQ(series[0].uuid, "GPU-z");
  ASSERT_GE(series[0].t_s.size(), 3u);  // at 0, ~every 10 ms, and one at stop
  for (size_t i = 1; i < series[0].t_s.size(); ++i) EXPECT_LE(series[0].t_s[i - 1], series[0].t_s[i]);
  EXPECT_FALSE(series[0].power_w[0].has_value());  // no NVML: nothing known, no crash
  const auto marks = s.marks();
  ASSERT_EQ(marks.size(), 2u);
  EXPECT_EQ(marks[0].text, "start a");
  EXPECT_LT(marks[0].t_s, marks[1].t_s);
  EXPECT_LE(marks[1].t_s, series[0].t_s.back());  // the last sample is taken at stop, after the end mark
}

// The board's mean power over a benchmark's timed iterations (node/power_meter.hpp): from two
// reads of NVML's energy counter, or from sampled power.
TEST(PowerMeter, EnergyCounterGivesEnergyOverTime) {
  const auto r = reading_from_energy(1'000'000, 1'450'000, 1.5);  // 450 J in 1.5 s
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->method, "energy_counter");
  EXPECT_DOUBLE_EQ(r->energy_j, 450.0);
  EXPECT_DOUBLE_EQ(r->mean_power_w, 300.0);
  EXPECT_DOUBLE_EQ(r->seconds, 1.5);
  EXPECT_FALSE(reading_from_energy(5, 5, 1.0).has_value());   // the counter did not move
  EXPECT_FALSE(reading_from_energy(9, 5, 1.0).has_value());   // or went back (driver reloaded)
  EXPECT_FALSE(reading_from_energy(5, 9, 0.0).has_value());   // no time
}

TEST(PowerMeter, SampledPowerIsTheMean) {
  const auto r = reading_from_samples({200.0, 250.0, 240.0, 250.0}, 2.0);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->method, "sampled_power");
  EXPECT_DOUBLE_EQ(r->mean_power_w, 235.0);
  EXPECT_DOUBLE_EQ(r->energy_j, 470.0);
  EXPECT_EQ(r->samples, 4);
  EXPECT_FALSE(reading_from_samples({}, 2.0).has_value());
}

TEST(PowerMeter, NothingWithoutNvml) {
  const Nvml nvml("/nonexistent/libnvidia-ml.so.1");
  PowerMeter m(nvml, 0);
  m.start();
  EXPECT_FALSE(m.stop().has_value());
  PowerMeter none(nvml, std::nullopt);
  none.start();
  EXPECT_FALSE(none.stop().has_value());
}

TEST(Monitor, Rounds) {
  EXPECT_EQ(monitor_rounds(1, 2), 3u);
  EXPECT_EQ(monitor_rounds(0.1, 2), 21u);
  EXPECT_EQ(monitor_rounds(1, 0), 0u);
  EXPECT_EQ(monitor_rounds(5, 2), 1u);
}

TEST(MonitorCli, Defaults) {
  auto p = parse({"monitor"});
  ASSERT_TRUE(p.command) << p.err;
  EXPECT_EQ(std::string(p.command->name()), "monitor");
  EXPECT_DOUBLE_EQ(p.command->as<MonitorCommand>()->options.interval_s, 1);
  EXPECT_DOUBLE_EQ(p.command->as<MonitorCommand>()->options.duration_s, 0);
  EXPECT_EQ(p.command->as<MonitorCommand>()->options.format, "table");
  EXPECT_EQ(p.command->as<MonitorCommand>()->options.gpus, "all");
}

TEST(MonitorCli, EveryOption) {
  auto p = parse({"monitor", "--interval", "0.5", "--duration", "10", "--gpus", "0,3", "--format", "prometheus",
                  "--out", "/tmp/x.prom"});
  ASSERT_TRUE(p.command) << p.err;
  const MonitorOptions& m = p.command->as<MonitorCommand>()->options;
  EXPECT_DOUBLE_EQ(m.interval_s, 0.5);
  EXPECT_DOUBLE_EQ(m.duration_s, 10);
  EXPECT_EQ(m.gpus, "0,3");
  EXPECT_EQ(m.format, "prometheus");
  EXPECT_EQ(m.out_file, "/tmp/x.prom");
}

TEST(MonitorCli, BadValuesExit2NamingTheOption) {
  struct Case {
    std::vector<std::string> args;
    std::string names;
  };
  const Case cases[] = {
      {{"monitor", "--interval", "0"}, "--interval"},
      {{"monitor", "--interval", "abc"}, "--interval"},
      {{"monitor", "--duration", "-1"}, "--duration"},
      {{"monitor", "--format", "xml"}, "--format"},
      {{"monitor", "--format", "prometheus"}, "--out"},
      {{"monitor", "--gpus", "0,x"}, "--gpus"},
      {{"run", "--monitor=abc"}, "--monitor"},
      {{"run", "--monitor=0"}, "--monitor"},
  };
  for (const auto& c : cases) {
    auto p = parse(c.args);
    EXPECT_FALSE(p.command) << c.args.back();
    EXPECT_EQ(p.exit_code, kExitUsage) << c.args.back();
    EXPECT_NE(p.err.find(c.names), std::string::npos) << c.args.back() << ": " << p.err;
  }
}

TEST(MonitorCli, RunMonitorOptionalInterval) {
  auto none = parse({"run"});
  ASSERT_TRUE(none.command);
  EXPECT_FALSE(none.command->as<RunCommand>()->options.monitor_interval_s);
  auto bare = parse({"run", "--monitor", "--family", "memory"});
  ASSERT_TRUE(bare.command) << bare.err;
  EXPECT_DOUBLE_EQ(*bare.command->as<RunCommand>()->options.monitor_interval_s, 1.0);
  EXPECT_EQ(bare.command->as<RunCommand>()->options.families, std::vector<std::string>{"memory"});
  auto last = parse({"run", "--family", "memory", "--monitor"});
  ASSERT_TRUE(last.command) << last.err;
  EXPECT_DOUBLE_EQ(*last.command->as<RunCommand>()->options.monitor_interval_s, 1.0);
  auto given = parse({"run", "--monitor=0.25"});
  ASSERT_TRUE(given.command) << given.err;
  EXPECT_DOUBLE_EQ(*given.command->as<RunCommand>()->options.monitor_interval_s, 0.25);
}

TEST(MonitorSettings, NvmlLibraryIsASetting) {
  std::vector<std::string> unknown;
  const Settings s = Settings::from_map({{"NODEBENCH_NVML_LIBRARY", "/opt/nvml/libnvidia-ml.so.1"}}, &unknown);
  EXPECT_TRUE(unknown.empty());
  EXPECT_EQ(s.text("NODEBENCH_NVML_LIBRARY"), "/opt/nvml/libnvidia-ml.so.1");
  EXPECT_EQ(s.to_json()["nvml_library"], "/opt/nvml/libnvidia-ml.so.1");
  EXPECT_FALSE(Settings::from_map({}).to_json().contains("nvml_library"));
}

// run --monitor where NVML cannot be loaded (a library path that does not exist, so this holds on a
// GPU machine too): the run goes on, the result has no timeline and a note says why.
TEST(RunMonitor, WithoutNvmlTheRunGoesOnWithANote) {
  const Settings settings = Settings::from_map({{"NODEBENCH_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1"}});
  Session session(ProfileDb::builtin(), settings);
  Plan plan;  // no case: only the monitor's part of run_plan is at stake
  plan.monitor_interval_s = 0.05;
  RunDocument file(json{{"run_id", "monitor-test"}});
  const RunOutcome out = run_plan(plan, session, file);
  EXPECT_EQ(std::string(to_string(out.status)), "complete");
  const json& doc = file.doc();
  EXPECT_FALSE(doc.contains("timeline"));
  ASSERT_TRUE(doc.contains("notes"));
  ASSERT_EQ(doc["notes"].size(), 1u);
  const std::string note = doc["notes"][0];
  EXPECT_NE(note.find("run --monitor: no timeline: NVML is unavailable"), std::string::npos) << note;
  EXPECT_NE(note.find("/nonexistent/libnvidia-ml.so.1"), std::string::npos) << note;
  // Without --monitor: neither field.
  Plan plain;
  RunDocument file2(json{{"run_id", "plain"}});
  run_plan(plain, session, file2);
  EXPECT_FALSE(file2.doc().contains("notes"));
  EXPECT_FALSE(file2.doc().contains("timeline"));
}

TEST(Monitor, TableRowPerGpuWithUnits) {
  GpuSample a = full_sample();
  a.gpu = 0;
  GpuSample b;  // NVML answered nothing
  b.gpu = 1;
  const std::string t = table_text({a, b});
  std::istringstream is(t);
  std::vector<std::string> lines;
  for (std::string l; std::getline(is, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 3u);  // header, one row per GPU
  for (const char* h : {"util%", "mem used/GiB", "temp C", "power W", "SM MHz", "PCIe tx/rx MB/s", "NVLink tx/rx GB/s", "throttle"})
    EXPECT_NE(lines[0].find(h), std::string::npos) << h;
  for (const char* v : {"80.0/80.0", "612.3", "1980", "2619", "1500/2", "300.0/250.0", "3/0", "sw_power_cap|hw_thermal_slowdown"})
    EXPECT_NE(lines[1].find(v), std::string::npos) << v << " in " << lines[1];
  EXPECT_EQ(lines[2].rfind("1 ", 0), 0u);
  EXPECT_NE(lines[2].find("-/-"), std::string::npos);
  EXPECT_EQ(lines[2].find_first_of("0123456789", 1), std::string::npos) << lines[2];  // nothing made up
}
