// What the hostlink family contributes to `nodebench advise` (bench/contributions.hpp): the
// host-to-device copy rate of its copy-engine cases, per memory kind, GPU and transfer size.
#include "base/json_fields.hpp"
#include "bench/contributions.hpp"
#include "hostlink_metrics.hpp"

namespace nb::hostlink {
namespace {

using nlohmann::json;
using jf::at;
using jf::str_or;

void read(const json& r, AdviceFacts& facts) {
  const json& p = at(r, "params");
  if (str_or(r, "id").rfind("hostlink/h2d/", 0) != 0 || str_or(p, "direction") != "h2d") return;
  if (!str_or(p, "engine").empty() && str_or(p, "engine") != "ce") return;
  const json& g = at(r, "gpus");
  const int gpu = g.is_array() && !g.empty() && g[0].is_number() ? g[0].get<int>() : 0;
  const auto gbps = kGbps.of(r);
  const auto bytes = jf::jnum(p, "bytes");
  if (!gbps || !bytes) return;
  facts.host_copies.push_back({str_or(p, "memory"), gpu, *bytes, *gbps});
}

const AdviceRegistrar advice({"hostlink", read,
                              {{"metrics", kGbps.name(), 0, true}, {"params", "bytes", 0, true}},
                              "",
                              std::nullopt,
                              "^hostlink/h2d/[^/]+/ce/"});

}  // namespace
}  // namespace nb::hostlink
