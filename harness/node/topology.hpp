// How the GPUs of this host are linked, from NVML: the topology level of each pair (the
// closest common ancestor: PIX, PXB, PHB, NODE, SYS), whether they talk over NVLink, and the
// distance matrix the GPU-count sweep chooses subsets from (collectives.hpp).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "environment.hpp"

namespace nb {

struct PairLink {
  std::optional<int> level;  // NVML topology level, nullopt when unknown
  bool nvlink = false;       // NVML reports NVLink peer-to-peer
  std::string type;          // coll::link_type
  int distance = 0;          // coll::link_distance
};

// The link between two GPUs given their NVML indices (nullopt: NVML does not know the GPU).
PairLink pair_link(const Nvml& nvml, std::optional<int> a, std::optional<int> b);

// Distance matrix over `gpus` (coll::link_distance; 0 on the diagonal).
std::vector<std::vector<int>> distance_matrix(const Nvml& nvml, const std::vector<const GpuInfo*>& gpus);

}  // namespace nb
