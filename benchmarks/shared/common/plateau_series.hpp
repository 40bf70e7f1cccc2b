// The points of each batch sweep measured so far (series: GPU, precision, layout; the train family's),
// so that a sweep stops at its throughput plateau (bench/sweep.hpp): the larger batches are recorded as skipped,
// reason_kind plateau, instead of being run. GPUs run their cases at once, one thread each, so it
// is guarded. NODEBENCH_SWEEP_PLATEAU=0 runs every batch (up to out of memory) instead.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "bench/benchmark.hpp"
#include "bench/sweep.hpp"

namespace nb {

class PlateauSeries {
 public:
  void measured(const std::string& series, int64_t batch, double per_s);
  std::vector<SweepPoint> points(const std::string& series) const;
  // Why `batch` of `series` is not run (the sweep reached its plateau below it), unless the
  // setting asks for the whole sweep; nullopt: run it.
  std::optional<std::string> stop_reason(const Settings& s, const std::string& series, int64_t batch) const;
  // Skips the case (throws through ctx.skip, reason_kind plateau) when stop_reason gives one.
  void skip_if_plateau(CaseContext& ctx, const std::string& series, int64_t batch) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::vector<SweepPoint>> points_;
};

// Whether the sweeps stop at their plateau (NODEBENCH_SWEEP_PLATEAU, default 1).
bool sweep_stops_at_plateau(const Settings& s);

}  // namespace nb
