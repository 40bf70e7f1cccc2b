#include "app/cmd_monitor.hpp"
#include "output/monitor_formats.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <ctime>
#include <fstream>
#include <iostream>
#include <thread>

#include "base/error.hpp"
#include "run/result.hpp"
#include "bench/settings.hpp"

namespace nb {

namespace {

std::atomic<bool> g_stop{false};

extern "C" void on_monitor_signal(int) { g_stop.store(true); }

void install_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_monitor_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

size_t monitor_rounds(double interval_s, double duration_s) {
  if (!(duration_s > 0) || !(interval_s > 0)) return 0;
  // A small tolerance so that --duration 2 --interval 0.1 gives 21 rounds despite rounding.
  return size_t(std::floor(duration_s / interval_s + 1e-9)) + 1;
}

std::vector<MonitoredGpu> monitored_gpus(const Nvml& nvml, const std::vector<int>& nvml_indices) {
  std::vector<MonitoredGpu> out;
  for (int i : nvml_indices) {
    MonitoredGpu g;
    g.label = i;
    g.nvml_index = i;
    g.uuid = nvml.uuid(i).value_or("");
    g.name = nvml.name(i).value_or("");
    out.push_back(std::move(g));
  }
  return out;
}

int cmd_monitor(const MonitorCommand& c) {
  const MonitorOptions& mo = c.options;
  const Nvml nvml(current_settings().text("NODEBENCH_NVML_LIBRARY"));
  if (!nvml.available()) {
    std::cerr << "nodebench: monitor reads the GPUs through NVML, which is unavailable: " << nvml.error()
              << "\n  (NVML comes with the NVIDIA driver as libnvidia-ml.so.1; in a container, start it with the "
                 "driver's libraries, e.g. --gpus all; NODEBENCH_NVML_LIBRARY names another path)\n";
    return kExitNoGpu;
  }
  const unsigned count = nvml.device_count().value_or(0);
  if (count == 0) {
    std::cerr << "nodebench: NVML sees no GPU\n";
    return kExitNoGpu;
  }
  std::vector<int> indices;
  try {
    indices = parse_gpu_list(mo.gpus, int(count));
  } catch (const Error& e) {
    std::cerr << "nodebench: " << e.what() << " (NVML indices)\n";
    return kExitUsage;
  }
  const std::vector<MonitoredGpu> gpus = monitored_gpus(nvml, indices);

  std::ofstream file;
  const bool prom = mo.format == "prometheus";
  if (!mo.out_file.empty() && !prom) {
    file.open(mo.out_file, std::ios::out | std::ios::trunc);
    if (!file) {
      std::cerr << "nodebench: --out: cannot write '" << mo.out_file << "'\n";
      return kExitUsage;
    }
  }
  std::ostream& os = file.is_open() ? static_cast<std::ostream&>(file) : std::cout;
  const bool live = mo.format == "table" && !file.is_open() && isatty(STDOUT_FILENO) != 0;
  std::unique_ptr<Reporter> out;
  if (mo.format == "csv") out = std::make_unique<CsvSamples>(os);
  else if (mo.format == "jsonl") out = std::make_unique<JsonlSamples>(os);
  else if (prom) out = std::make_unique<PrometheusSamples>(mo.out_file);
  else out = std::make_unique<TableSamples>(os, gpus, mo.interval_s, live);

  install_handlers();
  const size_t rounds = monitor_rounds(mo.interval_s, mo.duration_s);
  std::vector<NvlinkState> nvlink(gpus.size());
  const double t0 = monotonic_s();
  for (size_t tick = 0; !g_stop.load() && (rounds == 0 || tick < rounds); ++tick) {
    std::vector<GpuSample> latest;
    for (size_t i = 0; i < gpus.size(); ++i) latest.push_back(sample_gpu(nvml, gpus[i], monotonic_s() - t0, unix_now(), nvlink[i]));
    try {
      out->sampled(latest, unix_now());
    } catch (const Error& e) {
      std::cerr << "nodebench: --out: " << e.what() << "\n";
      if (tick == 0) return kExitUsage;  // a path that never worked is a usage error
    }
    os.flush();
    if (!os) {
      std::cerr << "nodebench: cannot write the samples (output closed)\n";
      return kExitCaseFailed;
    }
    if (rounds != 0 && tick + 1 >= rounds) break;
    // Sleep to the next tick in short steps, so that Ctrl-C ends the command at once.
    const double next = t0 + mo.interval_s * double(tick + 1);
    for (double now = monotonic_s(); now < next && !g_stop.load(); now = monotonic_s())
      std::this_thread::sleep_for(std::chrono::duration<double>(std::min(0.1, next - now)));
  }
  return kExitOk;
}

}  // namespace nb
