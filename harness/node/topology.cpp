#include "node/topology.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <tuple>

namespace nb {
namespace topo {

std::vector<int> sweep_counts(int n) {
  std::vector<int> out;
  for (int k = 1; k <= n && k > 0; k *= 2) out.push_back(k);
  if (n >= 1 && out.back() != n) out.push_back(n);
  return out;
}

int link_distance(std::optional<int> level, bool nvlink) {
  if (nvlink) return 0;
  if (!level) return kUnknownDistance;
  return std::clamp(*level, 0, kNetworkDistance - 1);
}

std::string link_type(std::optional<int> level, bool nvlink) {
  if (nvlink) return "NVLink";
  if (!level) return "unknown";
  switch (*level) {
    case 0: return "internal";
    case 10: return "PIX";
    case 20: return "PXB";
    case 30: return "PHB";
    case 40: return "NODE";
    case 50: return "SYS";
    default: return "unknown";
  }
}

std::vector<int> pick_closest(const std::vector<std::vector<int>>& dist, int k) {
  const int n = int(dist.size());
  for (const auto& row : dist)
    if (int(row.size()) != n) throw std::invalid_argument("pick_closest: the distance matrix is not square");
  if (k < 1 || k > n) throw std::invalid_argument("pick_closest: k must be between 1 and the GPU count");
  if (k == n) {
    std::vector<int> all(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) all[size_t(i)] = i;
    return all;
  }
  auto d = [&](int a, int b) { return a == b ? 0 : std::max(dist[size_t(a)][size_t(b)], dist[size_t(b)][size_t(a)]); };
  using Score = std::tuple<int, long long, std::vector<int>>;  // max pairwise, sum pairwise, members
  std::optional<Score> best;
  const size_t un = static_cast<size_t>(n);
  std::vector<int> worst(un);
  std::vector<long long> sum(un);
  std::vector<char> in(un);
  for (int s = 0; s < n; ++s) {
    std::fill(in.begin(), in.end(), 0);
    std::vector<int> set = {s};
    in[size_t(s)] = 1;
    for (int c = 0; c < n; ++c) {
      worst[size_t(c)] = d(c, s);
      sum[size_t(c)] = d(c, s);
    }
    while (int(set.size()) < k) {
      int pick = -1;
      for (int c = 0; c < n; ++c) {
        if (in[size_t(c)]) continue;
        if (pick < 0 || std::tie(worst[size_t(c)], sum[size_t(c)]) < std::tie(worst[size_t(pick)], sum[size_t(pick)]))
          pick = c;
      }
      set.push_back(pick);
      in[size_t(pick)] = 1;
      for (int c = 0; c < n; ++c) {
        worst[size_t(c)] = std::max(worst[size_t(c)], d(c, pick));
        sum[size_t(c)] += d(c, pick);
      }
    }
    std::sort(set.begin(), set.end());
    int mx = 0;
    long long total = 0;
    for (size_t i = 0; i < set.size(); ++i)
      for (size_t j = i + 1; j < set.size(); ++j) {
        mx = std::max(mx, d(set[i], set[j]));
        total += d(set[i], set[j]);
      }
    Score sc{mx, total, set};
    if (!best || sc < *best) best = std::move(sc);
  }
  return std::get<2>(*best);
}

std::vector<SweepStep> sweep_subsets(const std::vector<std::vector<int>>& dist) {
  std::vector<SweepStep> out;
  for (int k : sweep_counts(int(dist.size()))) out.push_back({k, pick_closest(dist, k)});
  return out;
}

}  // namespace topo


PairLink pair_link(const Nvml& nvml, std::optional<int> a, std::optional<int> b) {
  PairLink p;
  if (a && b && nvml.available()) {
    p.level = nvml.topology_level(*a, *b);
    p.nvlink = nvml.nvlink_p2p(*a, *b).value_or(false);
  }
  p.type = topo::link_type(p.level, p.nvlink);
  p.distance = topo::link_distance(p.level, p.nvlink);
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
