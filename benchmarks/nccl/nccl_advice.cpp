// What the nccl family contributes besides its cases (bench/contributions.hpp): to `nodebench
// advise`, its all-reduce records over two GPUs or more as points of the collective time model,
// with the NCCL_* settings they ran under; to a record's console line, its bus bandwidth.
#include <algorithm>

#include "base/json_fields.hpp"
#include "bench/contributions.hpp"
#include "nccl_metrics.hpp"

namespace nb::nccl {
namespace {

using nlohmann::json;
using jf::at;
using jf::jnum;
using jf::str_or;

bool has_flag(const json& r, const char* flag) {
  const json& f = at(r, "flags");
  return f.is_array() && std::find(f.begin(), f.end(), json(flag)) != f.end();
}

void read(const json& r, AdviceFacts& facts) {
  const json& p = at(r, "params");
  if (str_or(p, "collective") != "all_reduce") return;
  const auto bw = kBusbw.of(r);
  const auto bytes = kData.of(r) ? kData.of(r) : jnum(p, "bytes");
  auto n = kGpuCount.of(r);
  if (!n) n = jnum(p, "ngpus");
  // One rank crosses no link (flag single_rank; files before the flag: one GPU): not a curve point.
  if (!bw || !bytes || !n || *n < 2 || !(*bw > 0) || has_flag(r, "single_rank")) return;
  std::string settings;
  const json& env = at(at(r, "details"), "nccl_env");
  if (env.is_object())
    for (const auto& [k, v] : env.items())
      if (k != "NCCL_VERSION" && k.rfind("NCCL_DEBUG", 0) != 0 && v.is_string())
        settings += (settings.empty() ? "" : " ") + k + "=" + v.get<std::string>();
  facts.allreduce.push_back({str_or(p, "dtype"), int(*n), *bytes, *bw, kTimeMetric.of(r).value_or(0) * 1e-6, settings});
}

const AdviceRegistrar advice({"nccl", read,
                              {{"metrics", kBusbw.name(), 0, false},
                               {"metrics", kData.name(), 0, true},
                               {"metrics", kTimeMetric.name(), 0, true},
                               {"metrics", kGpuCount.name(), 1, false},
                               {"params", "bytes", 0, true},
                               {"params", "ngpus", 1, false}},
                              "",
                              std::nullopt,
                              "^nccl/all_reduce/"});

// The console line's figure: the bus bandwidth, or on one rank (where it is 0 by definition) the
// algorithm bandwidth, which says more there.
std::optional<std::string> headline(const json& r) {
  const auto bus = kBusbw.of(r);
  return bus && *bus > 0 ? kBusbw.name() : kAlgbw.name();
}

const HeadlineRegistrar headline_registrar({"nccl", headline});

}  // namespace
}  // namespace nb::nccl
