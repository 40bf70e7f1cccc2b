#include "advise/advise_overhead.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <sstream>

namespace nb::advise {

using nlohmann::json;

const std::vector<std::string>& left_out_costs() {
  static const std::vector<std::string> costs = {
      "the framework's per-step cost (Python, kernel launches, DDP's bucket bookkeeping)",
      "the optimizer's update beyond what the one-GPU step holds",
      "stragglers and clock differences between GPUs",
      "communication kernels slowing the compute they overlap (SMs and memory bandwidth)",
      "data loading and decoding on the CPU (only the copy to the GPU is modelled)"};
  return costs;
}

json efficiency_definition() {
  return {{"kind", "bound"},
          {"text", "an upper bound set by communication and input: N-GPU images/s over N x one-GPU images/s at "
                   "the same per-GPU batch, counting only the exposed gradient all-reduce and the host input copy"},
          {"left_out", left_out_costs()},
          {"measured_overhead",
           "where a train_dp record of the same precision, layout, batch and accumulation is given, its measured "
           "step overhead (its step x (1 - scaling_efficiency_ratio), less its exposed all-reduce) is added to the "
           "predicted step: efficiency_with_overhead"}};
}

std::optional<double> measured_overhead_s(const MeasuredDp& d) {
  if (!d.step_ms || !d.efficiency || !d.exposed_comm_ms || !(*d.step_ms > 0)) return std::nullopt;
  const double lost_ms = *d.step_ms * (1.0 - *d.efficiency);
  return std::max(0.0, lost_ms - *d.exposed_comm_ms) * 1e-3;
}

namespace {

std::string fmt(double v, int prec) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(prec) << v;
  return os.str();
}

// The record for a row: the same configuration at the same GPU count, else at the nearest count.
const MeasuredDp* record_for(const json& row, const std::vector<MeasuredDp>& dp) {
  const MeasuredDp* best = nullptr;
  const int n = row["gpus"].get<int>();
  for (const auto& d : dp) {
    if (d.precision != row["precision"].get<std::string>() || d.layout != row["layout"].get<std::string>() ||
        d.batch != row["batch"].get<int>() || d.accumulation != row["accumulation"].get<int>() || d.gpus < 2 ||
        !measured_overhead_s(d))
      continue;
    if (!best || std::abs(d.gpus - n) < std::abs(best->gpus - n)) best = &d;
  }
  return best;
}

}  // namespace

int apply_measured_overhead(json& rows, const std::vector<MeasuredDp>& dp) {
  int applied = 0;
  for (json& r : rows) {
    if (r["gpus"].get<int>() < 2) continue;
    const MeasuredDp* d = record_for(r, dp);
    if (!d) continue;
    const double over = *measured_overhead_s(*d);
    const double step = r["step_ms"].get<double>() * 1e-3 + over;
    const double images = double(r["gpus"].get<int>()) * r["batch"].get<int>() * r["accumulation"].get<int>();
    const double ips = images / step;
    r["measured_overhead"] = {
        {"id", d->id},
        {"gpus", d->gpus},
        {"overhead_ms", over * 1e3},
        {"how", "step " + fmt(*d->step_ms, 2) + " ms x (1 - scaling_efficiency_ratio " + fmt(*d->efficiency, 3) +
                    ") - exposed all-reduce " + fmt(*d->exposed_comm_ms, 2) + " ms, measured at " +
                    std::to_string(d->gpus) + " GPUs" +
                    (d->gpus == r["gpus"].get<int>() ? std::string() : " (taken as is for this count)")}};
    r["step_with_overhead_ms"] = step * 1e3;
    r["images_per_s_with_overhead"] = ips;
    r["efficiency_with_overhead"] = r["efficiency"].get<double>() * r["images_per_s_with_overhead"].get<double>() /
                                    r["images_per_s"].get<double>();
    ++applied;
  }
  return applied;
}

}  // namespace nb::advise
