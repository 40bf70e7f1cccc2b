// The nccl family's records of a collective over one rank, and the sweep's scaling points: pure
// functions of the measured figures (tests/test_nccl_output.cpp).
#include "nccl_spec.hpp"

namespace nb::nccl {

using nlohmann::json;

std::string single_rank_note(coll::Collective c, bool in_place) {
  std::string what;
  if (c == coll::Collective::reduce_scatter || !in_place)
    what = "the time is NCCL's local copy of the buffer (a device copy, not a link)";
  else
    what = "in place, NCCL has nothing to move: the time is the call's cost alone";
  return "one rank: nothing crosses a link, so no bus or algorithm bandwidth is recorded (flag single_rank); " + what;
}

#if NB_HAVE_NCCL

json scaling_point(const TeamResult& r, int count, std::optional<double>& reference, int& reference_count) {
  json p = {{"status", r.wrong ? "wrong" : "ok"}, {"time_us", r.median * 1e6}};
  if (count < 2) {
    p.update({{"single_rank", true}, {"algbw_gbps", nullptr}, {"busbw_gbps", nullptr}, {"efficiency_pct", nullptr}});
    return p;
  }
  if (!reference && r.busbw > 0) {
    reference = r.busbw;
    reference_count = count;
  }
  const bool eff = reference && r.busbw > 0;
  p.update({{"algbw_gbps", r.algbw},
            {"busbw_gbps", r.busbw},
            {"efficiency_pct", eff ? json(100.0 * r.busbw / *reference) : json(nullptr)}});
  return p;
}

#endif  // NB_HAVE_NCCL

}  // namespace nb::nccl
