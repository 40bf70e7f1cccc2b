#include "topology.hpp"

#include "collectives.hpp"

namespace nb {

PairLink pair_link(const Nvml& nvml, std::optional<int> a, std::optional<int> b) {
  PairLink p;
  if (a && b && nvml.available()) {
    p.level = nvml.topology_level(*a, *b);
    p.nvlink = nvml.nvlink_p2p(*a, *b).value_or(false);
  }
  p.type = coll::link_type(p.level, p.nvlink);
  p.distance = coll::link_distance(p.level, p.nvlink);
  return p;
}

std::vector<std::vector<int>> distance_matrix(const Nvml& nvml, const std::vector<const GpuInfo*>& gpus) {
  const size_t n = gpus.size();
  std::vector<std::vector<int>> d(n, std::vector<int>(n, 0));
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + 1; j < n; ++j)
      d[i][j] = d[j][i] = pair_link(nvml, gpus[i]->nvml_index, gpus[j]->nvml_index).distance;
  return d;
}

}  // namespace nb
