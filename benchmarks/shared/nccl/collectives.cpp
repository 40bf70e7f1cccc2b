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
