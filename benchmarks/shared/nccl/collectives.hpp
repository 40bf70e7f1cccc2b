// Pure logic of the multi-GPU families (no CUDA, no NCCL): collective names and data types,
// buffer counts and bus-bandwidth factors, the GPU-count sweep and the choice of GPU subsets
// from the topology, and the link-type names of the peer-to-peer matrix. Unit-tested.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nb::coll {

enum class Collective { all_reduce, reduce_scatter, all_gather, broadcast };
// In the order the family runs them: all-reduce first.
const std::vector<Collective>& all_collectives();
std::string to_string(Collective c);
std::optional<Collective> parse_collective(const std::string& s);
// Whether the collective does arithmetic (its data type matters beyond its size).
bool reduces(Collective c);

enum class DType { f32, f16, bf16 };
const std::vector<DType>& all_dtypes();
std::string to_string(DType d);  // "float", "half", "bfloat16"
std::optional<DType> parse_dtype(const std::string& s);
size_t elem_size(DType d);

// Bus-bandwidth factor, the convention of nccl-tests: busbw = algbw * factor, which makes the
// figure comparable with the hardware's link bandwidth whatever the rank count. all-reduce
// 2(n-1)/n; reduce-scatter and all-gather (n-1)/n; broadcast 1. 0 for an all-reduce, reduce-
// scatter or all-gather on one rank (nothing crosses a link). n < 1 throws std::invalid_argument.
double bus_factor(Collective c, int nranks);

// The buffers of one rank for a collective of nominal size `bytes` (the convention of
// nccl-tests: all-reduce and broadcast move a buffer of that size; reduce-scatter's input and
// all-gather's output are that size, n times the per-rank chunk). Element counts are rounded
// down so that they divide evenly among the ranks, with at least one element per rank.
struct Counts {
  size_t send = 0;   // elements in the send buffer
  size_t recv = 0;   // elements in the receive buffer
  size_t chunk = 0;  // per-rank chunk (reduce-scatter output, all-gather input); else = send
  size_t bytes = 0;  // the size actually moved (what algbw is computed from)
};
Counts counts(Collective c, size_t bytes, size_t elem_size, int nranks);

// "8B", "64KiB", "256MiB", "4GiB": the size as a case name writes it (exact powers of 1024
// use the larger unit).
std::string size_name(size_t bytes);

// Nominal sizes of the collective sweep: powers of two from `lo` to `hi` bytes, every
// `step_log2` doublings, `hi` always included.
std::vector<size_t> size_ladder(size_t lo, size_t hi, int step_log2);

}  // namespace nb::coll
