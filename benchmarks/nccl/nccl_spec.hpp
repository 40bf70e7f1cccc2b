// Internal to the nccl family: a case's specification and the shared driver that measures one
// collective on a team of GPUs (nccl_driver.cpp), used by the cases (nccl.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "shared/nccl/collectives.hpp"
#include "bench/measure.hpp"

#if NB_HAVE_NCCL
#include "shared/nccl/nccl_team.hpp"
#endif

namespace nb::nccl {

struct Spec {
  coll::Collective coll = coll::Collective::all_reduce;
  coll::DType dtype = coll::DType::f32;
  size_t bytes = 0;
  bool in_place = false;
  bool graph = false;
  bool sweep = false;
};

inline std::string case_name(const Spec& s) {
  if (s.sweep) return "sweep/" + coll::to_string(s.coll) + "/" + coll::to_string(s.dtype) + "/" + coll::size_name(s.bytes);
  return coll::to_string(s.coll) + "/" + coll::to_string(s.dtype) + "/" + (s.in_place ? "in_place" : "out_of_place") +
         "/" + (s.graph ? "graph" : "eager") + "/" + coll::size_name(s.bytes);
}

#if NB_HAVE_NCCL

struct TeamResult {
  Measurement m;
  coll::Counts k;
  double factor = 0, algbw = 0, busbw = 0, median = 0;
  uint64_t wrong = 0;
  uint64_t checked = 0;
  std::string first_wrong;
  std::vector<double> wrong_per_rank;
};

// Measures `spec` on `team` (nullptr or no local member: this process only keeps step with the
// others). Called by every process; on failure `ls` says so and the result is empty.
TeamResult measure_team(Team* team, int nranks, const Spec& spec, const MeasureConfig& cfg, Lockstep& ls);
// The record's metrics and details of a measured collective.
void fill_output(nlohmann::json& metrics, nlohmann::json& details, const TeamResult& r, const Spec& spec, int nranks);

#endif  // NB_HAVE_NCCL

}  // namespace nb::nccl
