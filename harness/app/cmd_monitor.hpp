// `nodebench monitor`: NVML's live counters per GPU, sampled every --interval seconds, as a live
// table, CSV, JSON lines, or a Prometheus textfile for node_exporter (replaced atomically).
// The sampling and the formats live in harness/node/monitor.*; this is the command around them.
#pragma once
#include <string>
#include <vector>

#include "app/commands.hpp"
#include "node/monitor.hpp"

namespace nb {

// The GPUs to watch, by NVML index, with their uuid and name.
std::vector<MonitoredGpu> monitored_gpus(const Nvml& nvml, const std::vector<int>& nvml_indices);

// How many sampling rounds a --duration allows at an --interval (0 duration: unbounded, 0
// returned): rounds at t = 0, interval, 2*interval, ... up to and including the duration.
size_t monitor_rounds(double interval_s, double duration_s);

}  // namespace nb
