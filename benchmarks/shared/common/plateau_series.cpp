#include "plateau_series.hpp"

#include "bench/settings.hpp"

namespace nb {

namespace {
const SettingRegistrar kPlateau({"NODEBENCH_SWEEP_PLATEAU", SettingKind::flag, "sweep_plateau", true, 0, false,
                                 "=0|1 the train batch sweep stops once a doubling of the batch gains under 3% (1, "
                                 "default); 0 runs every batch up to out of memory",
                                 "sweeps"});
}  // namespace

bool sweep_stops_at_plateau(const Settings& s) { return s.flag("NODEBENCH_SWEEP_PLATEAU"); }

void PlateauSeries::measured(const std::string& series, int64_t batch, double per_s) {
  std::lock_guard<std::mutex> lock(mu_);
  points_[series].push_back({batch, per_s});
}

std::vector<SweepPoint> PlateauSeries::points(const std::string& series) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = points_.find(series);
  return it == points_.end() ? std::vector<SweepPoint>{} : it->second;
}

std::optional<std::string> PlateauSeries::stop_reason(const Settings& s, const std::string& series, int64_t batch) const {
  if (!sweep_stops_at_plateau(s)) return std::nullopt;
  const auto why = plateau_stop(points(series), batch);
  if (!why) return std::nullopt;
  return "not run: " + *why + " (NODEBENCH_SWEEP_PLATEAU=0 runs every batch)";
}

void PlateauSeries::skip_if_plateau(CaseContext& ctx, const std::string& series, int64_t batch) const {
  if (const auto why = stop_reason(ctx.settings(), series, batch)) ctx.skip(*why, ReasonKind::plateau);
}

}  // namespace nb
