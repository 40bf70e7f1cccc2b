#include "collectives.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace nb::coll {

namespace {

// The one description of each collective.
struct Info {
  Collective id;
  const char* name;
  bool reduces;
  Shape shape;
  double (*bus_factor)(double n);
};
const Info kCollectives[] = {
    {Collective::all_reduce, "all_reduce", true, Shape::same, [](double n) { return 2.0 * (n - 1.0) / n; }},
    {Collective::reduce_scatter, "reduce_scatter", true, Shape::scatter, [](double n) { return (n - 1.0) / n; }},
    {Collective::all_gather, "all_gather", false, Shape::gather, [](double n) { return (n - 1.0) / n; }},
    {Collective::broadcast, "broadcast", false, Shape::same, [](double) { return 1.0; }},
};

const Info& info(Collective c) {
  for (const Info& i : kCollectives)
    if (i.id == c) return i;
  throw std::invalid_argument("unknown collective");
}

struct DTypeInfo {
  DType id;
  const char* name;
  size_t size;
};
const DTypeInfo kDTypes[] = {{DType::f32, "float", 4}, {DType::f16, "half", 2}, {DType::bf16, "bfloat16", 2}};

const DTypeInfo& info(DType d) {
  for (const DTypeInfo& i : kDTypes)
    if (i.id == d) return i;
  throw std::invalid_argument("unknown data type");
}

}  // namespace

const std::vector<Collective>& all_collectives() {
  static const std::vector<Collective> v = [] {
    std::vector<Collective> out;
    for (const Info& i : kCollectives) out.push_back(i.id);
    return out;
  }();
  return v;
}

std::string to_string(Collective c) { return info(c).name; }

std::optional<Collective> parse_collective(const std::string& s) {
  for (const Info& i : kCollectives)
    if (s == i.name) return i.id;
  return std::nullopt;
}

bool reduces(Collective c) { return info(c).reduces; }
Shape shape(Collective c) { return info(c).shape; }

const std::vector<DType>& all_dtypes() {
  static const std::vector<DType> v = {DType::f32, DType::f16, DType::bf16};
  return v;
}

std::string to_string(DType d) { return info(d).name; }

std::optional<DType> parse_dtype(const std::string& s) {
  for (const DTypeInfo& i : kDTypes)
    if (s == i.name) return i.id;
  return std::nullopt;
}

size_t elem_size(DType d) { return info(d).size; }

double bus_factor(Collective c, int n) {
  if (n < 1) throw std::invalid_argument("bus_factor: rank count must be at least 1");
  return info(c).bus_factor(double(n));
}

Counts counts(Collective c, size_t bytes, size_t esize, int nranks) {
  if (esize == 0 || nranks < 1) throw std::invalid_argument("counts: element size and rank count must be positive");
  const size_t n = size_t(nranks);
  Counts k;
  const size_t elems = bytes / esize;
  switch (shape(c)) {
    case Shape::same:
      k.send = k.recv = k.chunk = std::max<size_t>(elems, 1);
      k.bytes = k.send * esize;
      break;
    case Shape::scatter:
      k.chunk = std::max<size_t>(elems / n, 1);
      k.send = k.chunk * n;
      k.recv = k.chunk;
      k.bytes = k.send * esize;
      break;
    case Shape::gather:
      k.chunk = std::max<size_t>(elems / n, 1);
      k.send = k.chunk;
      k.recv = k.chunk * n;
      k.bytes = k.recv * esize;
      break;
  }
  return k;
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
