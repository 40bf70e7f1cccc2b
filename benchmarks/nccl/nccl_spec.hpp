// Internal to the nccl family: a case's specification and the shared driver that measures one
// collective on a team of GPUs (nccl_driver.cpp), used by the cases (nccl.cpp).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/benchmark.hpp"
#include "bench/measure.hpp"
#include "shared/nccl/collectives.hpp"

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
  if (s.sweep) return "sweep/" + coll::to_string(s.coll) + "/" + coll::to_string(s.dtype) + "/" + bytes_label(int64_t(s.bytes));
  return coll::to_string(s.coll) + "/" + coll::to_string(s.dtype) + "/" + (s.in_place ? "in_place" : "out_of_place") +
         "/" + (s.graph ? "graph" : "eager") + "/" + bytes_label(int64_t(s.bytes));
}

// What the time of a collective over one rank is (its record's details.note): nothing crosses a
// link, so the record has no bandwidth and carries the flag single_rank (docs/SCHEMA.md).
std::string single_rank_note(coll::Collective c, bool in_place);
constexpr const char* kSingleRankFlag = "single_rank";

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
// others), with the watchdog, trace and hooks of `teams` and the hold of `settings`. Called by
// every process; on failure `ls` says so and the result is empty.
TeamResult measure_team(Teams& teams, const Settings& settings, Team* team, int nranks, const Spec& spec,
                        const MeasureConfig& cfg, Lockstep& ls);
// The record's metrics, details and flags of a measured collective; over one rank, no bandwidth
// metric and the flag single_rank.
void fill_output(CaseOutput& out, const TeamResult& r, const Spec& spec, int nranks, const Teams& teams);

// One GPU count of the sweep: its point of analysis.nccl_scaling (status, time, bandwidths,
// efficiency_pct against `reference`, the bus bandwidth at the smallest count above one, set here
// by the first such count). One rank is no link: its point has single_rank and no bandwidth, and
// it is never the reference.
nlohmann::json scaling_point(const TeamResult& r, int count, std::optional<double>& reference, int& reference_count);

#endif  // NB_HAVE_NCCL

}  // namespace nb::nccl
