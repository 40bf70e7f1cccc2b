// The p2p family's link classification (bench/contributions.hpp): the class of the link between
// GPUs from its analysis's link-type matrix (analysis.p2p: NVLink, PIX, PXB, PHB, NODE, SYS): NVLink
// when every pair is, SYS when any pair is, else PCIe; nothing said without the matrix.
#include <optional>

#include "base/json_fields.hpp"
#include "bench/contributions.hpp"

namespace nb::p2p {
namespace {

using nlohmann::json;
using jf::at;

std::optional<std::string> classify(const json& doc, const std::vector<int>& members) {
  const json& p2p = at(at(doc, "analysis"), "p2p");
  const json& ids = at(p2p, "gpus");
  const json& types = at(p2p, "link_type");
  if (!ids.is_array() || !types.is_array()) return std::nullopt;
  auto pos = [&](int g) -> std::optional<size_t> {
    for (size_t i = 0; i < ids.size(); ++i)
      if (ids[i].is_number() && ids[i].get<int>() == g) return i;
    return std::nullopt;
  };
  bool all_nvlink = true, any_sys = false, known = false;
  for (size_t x = 0; x < members.size(); ++x)
    for (size_t y = 0; y < members.size(); ++y) {
      if (x == y) continue;
      const auto a = pos(members[x]), b = pos(members[y]);
      if (!a || !b || *a >= types.size() || !types[*a].is_array() || *b >= types[*a].size() || !types[*a][*b].is_string())
        return "pcie";
      const std::string t = types[*a][*b].get<std::string>();
      known = true;
      all_nvlink = all_nvlink && t == "NVLink";
      any_sys = any_sys || t == "SYS";
    }
  if (!known) return "pcie";
  if (all_nvlink) return "nvlink";
  return any_sys ? "sys" : "pcie";
}

const LinkClassifierRegistrar link_classifier(classify);

}  // namespace
}  // namespace nb::p2p
