#include "collectives.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <tuple>

namespace nb::coll {

const std::vector<Collective>& all_collectives() {
  static const std::vector<Collective> v = {Collective::all_reduce, Collective::reduce_scatter,
                                            Collective::all_gather, Collective::broadcast};
  return v;
}

std::string to_string(Collective c) {
  switch (c) {
    case Collective::all_reduce: return "all_reduce";
    case Collective::reduce_scatter: return "reduce_scatter";
    case Collective::all_gather: return "all_gather";
    case Collective::broadcast: return "broadcast";
  }
  return "unknown";
}

std::optional<Collective> parse_collective(const std::string& s) {
  for (Collective c : all_collectives())
    if (to_string(c) == s) return c;
  return std::nullopt;
}

bool reduces(Collective c) { return c == Collective::all_reduce || c == Collective::reduce_scatter; }

const std::vector<DType>& all_dtypes() {
  static const std::vector<DType> v = {DType::f32, DType::f16, DType::bf16};
  return v;
}

std::string to_string(DType d) {
  switch (d) {
    case DType::f32: return "float";
    case DType::f16: return "half";
    case DType::bf16: return "bfloat16";
  }
  return "unknown";
}

std::optional<DType> parse_dtype(const std::string& s) {
  for (DType d : all_dtypes())
    if (to_string(d) == s) return d;
  return std::nullopt;
}

size_t elem_size(DType d) { return d == DType::f32 ? 4 : 2; }

double bus_factor(Collective c, int n) {
  if (n < 1) throw std::invalid_argument("bus_factor: rank count must be at least 1");
  const double dn = double(n);
  switch (c) {
    case Collective::all_reduce: return 2.0 * (dn - 1.0) / dn;
    case Collective::reduce_scatter:
    case Collective::all_gather: return (dn - 1.0) / dn;
    case Collective::broadcast: return 1.0;
  }
  return 0.0;
}

Counts counts(Collective c, size_t bytes, size_t esize, int nranks) {
  if (esize == 0 || nranks < 1) throw std::invalid_argument("counts: element size and rank count must be positive");
  const size_t n = size_t(nranks);
  Counts k;
  const size_t elems = bytes / esize;
  switch (c) {
    case Collective::all_reduce:
    case Collective::broadcast:
      k.send = k.recv = k.chunk = std::max<size_t>(elems, 1);
      k.bytes = k.send * esize;
      break;
    case Collective::reduce_scatter:
      k.chunk = std::max<size_t>(elems / n, 1);
      k.send = k.chunk * n;
      k.recv = k.chunk;
      k.bytes = k.send * esize;
      break;
    case Collective::all_gather:
      k.chunk = std::max<size_t>(elems / n, 1);
      k.send = k.chunk;
      k.recv = k.chunk * n;
      k.bytes = k.recv * esize;
      break;
  }
  return k;
}

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

std::string size_name(size_t b) {
  const size_t KiB = 1024, MiB = KiB * 1024, GiB = MiB * 1024;
  if (b >= GiB && b % GiB == 0) return std::to_string(b / GiB) + "GiB";
  if (b >= MiB && b % MiB == 0) return std::to_string(b / MiB) + "MiB";
  if (b >= KiB && b % KiB == 0) return std::to_string(b / KiB) + "KiB";
  return std::to_string(b) + "B";
}

std::vector<size_t> size_ladder(size_t lo, size_t hi, int step_log2) {
  std::vector<size_t> out;
  if (lo == 0 || hi < lo || step_log2 < 1) return out;
  for (size_t b = lo; b <= hi; b <<= step_log2) {
    out.push_back(b);
    if (b > (std::numeric_limits<size_t>::max() >> step_log2)) break;
  }
  if (out.back() != hi) out.push_back(hi);
  return out;
}

}  // namespace nb::coll
