// The CPU side of the input pipeline: the host's CPUs (sysfs topology), the order workers are
// pinned in, and a pool of worker threads, one per CPU (sched_setaffinity), each decoding and
// augmenting images into its slots of a shared output batch, as data-loader workers do.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "augment.hpp"
#include "images.hpp"
#include "bench/measure.hpp"

namespace nb::input {

struct Cpu {
  int id = 0;
  int core = 0;     // topology/core_id
  int package = 0;  // topology/physical_package_id
  int node = 0;     // the NUMA node whose cpulist holds it
};

// "0-3,8,10-11" -> 0 1 2 3 8 10 11. Throws nb::Error on anything else.
std::vector<int> parse_cpulist(const std::string& text);

// The CPUs this process may run on (sched_getaffinity), with their core, package and node.
std::vector<Cpu> allowed_cpus();

// Workers' CPUs in pinning order: one CPU of every physical core first (by node, then id), then
// the second hardware threads of the cores, and so on. `node`: only that node's CPUs.
std::vector<int> pin_order(const std::vector<Cpu>& cpus, std::optional<int> node = std::nullopt);
int physical_core_count(const std::vector<Cpu>& cpus);
std::vector<int> nodes_of(const std::vector<Cpu>& cpus);

// The node whose CPUs the workers of a NUMA placement ("gpu_node": the GPU's node; "other_node":
// the first other node) run on, or why the placement cannot be made: one node only (nothing to
// compare), the GPU's node unknown, or none of that node's CPUs allowed to this process.
struct NumaChoice {
  std::optional<int> node;
  std::string problem;  // empty when node is set
};
NumaChoice numa_node_for(const std::vector<Cpu>& cpus, const std::string& placement, std::optional<int> gpu_node,
                         int gpu_index);

// Worker counts of the sweep: 1, 2, 4, ... below n, and n.
std::vector<int> sweep_counts(int n);

struct PoolConfig {
  std::vector<int> cpus;            // one worker pinned to each
  Layout layout = Layout::nchw;
  DType dtype = DType::fp32;
  int slots_per_worker = 4;         // each worker's images of the output batch
  std::optional<int> memory_node;   // the files and the output batch bound to this node
  double warmup_s = 0.3;
  uint64_t seed = 1;
};

struct PoolResult {
  Measurement measurement;          // per sample: seconds per image over all workers together
  uint64_t images = 0;              // every image of the run, warm-up included
  double decode_per_image_ms = 0;   // a worker's mean time in the decoder per image
  double augment_per_image_ms = 0;  // ... and in crop, resize, flip and normalise
  std::vector<uint64_t> per_worker; // images per worker
  bool memory_bound = false;        // memory_node was honoured (mbind)
  // The workers' CPU time over their wall time: below 1 when other work shared their CPUs (the
  // rate is then the host's with that load, not its capacity).
  double cpu_share = 0;
  // Images per second of the workers' CPU time: the per-core rate with the cores to themselves
  // (other work's share of the caches and memory aside).
  double images_per_cpu_s = 0;
};

// Runs the workers until the sampling stops (mc: target CV, time cap, sample counts). Throws
// nb::Error when a worker cannot be pinned or an image cannot be decoded.
PoolResult run_pool(const ImageSet& set, const PoolConfig& pc, const MeasureConfig& mc);

}  // namespace nb::input
