// How the GPUs of this host are linked, from NVML: the topology level of each pair (the
// closest common ancestor: PIX, PXB, PHB, NODE, SYS), whether they talk over NVLink, and the
// distance matrix the GPU-count sweep chooses subsets from (topo::sweep_subsets).
#pragma once
#include <optional>
#include <string>
#include <cstddef>
#include <vector>

#include "node/environment.hpp"

namespace nb {
namespace topo {

// GPU counts of the scaling sweep: 1, 2, 4, ... up to n, with n itself last when it is not a
// power of two. Empty for n < 1.
std::vector<int> sweep_counts(int n);

// Distance between two GPUs for choosing subsets: 0 for NVLink (or the same board), else the
// NVML topology level (10 PIX, 20 PXB, 30 PHB, 40 NODE, 50 SYS), kUnknownDistance when the
// level is unknown, kNetworkDistance between GPUs of different hosts.
constexpr int kUnknownDistance = 60;
constexpr int kNetworkDistance = 100;
int link_distance(std::optional<int> nvml_level, bool nvlink);

// Name of the link between two GPUs as nvidia-smi topo writes it: "NVLink", "PIX", "PXB",
// "PHB", "NODE", "SYS", "internal" (level 0: the same board), or "unknown".
std::string link_type(std::optional<int> nvml_level, bool nvlink);

// The k GPUs (indices into `dist`, a symmetric n x n matrix) that are closest together: the
// smallest largest pairwise distance (the closest common ancestor), then the smallest sum of
// distances, then the lowest indices. Greedy from every start, so exact for hierarchical
// (tree-like) topologies. Returned sorted. Throws std::invalid_argument for k outside 1..n or a
// matrix that is not square.
std::vector<int> pick_closest(const std::vector<std::vector<int>>& dist, int k);

// One subset per count of sweep_counts(n).
struct SweepStep {
  int count = 0;
  std::vector<int> members;
};
std::vector<SweepStep> sweep_subsets(const std::vector<std::vector<int>>& dist);

}  // namespace topo


struct PairLink {
  std::optional<int> level;  // NVML topology level, nullopt when unknown
  bool nvlink = false;       // NVML reports NVLink peer-to-peer
  std::string type;          // topo::link_type
  int distance = 0;          // topo::link_distance
};

// The link between two GPUs given their NVML indices (nullopt: NVML does not know the GPU).
PairLink pair_link(const Nvml& nvml, std::optional<int> a, std::optional<int> b);

// Distance matrix over `gpus` (topo::link_distance; 0 on the diagonal).
std::vector<std::vector<int>> distance_matrix(const Nvml& nvml, const std::vector<const GpuInfo*>& gpus);

}  // namespace nb
