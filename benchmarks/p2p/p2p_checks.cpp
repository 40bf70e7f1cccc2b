// The p2p family's validate check (p2p_spec.hpp): one-way peer copies, one judgement per ordered
// pair, by the pair's link class (thresholds p2p.<link>, benchmarks/p2p/thresholds.json).
#include "p2p_spec.hpp"

#include <cmath>
#include <set>

#include "base/json_fields.hpp"
#include "bench/validate_values.hpp"

namespace nb::p2p {

using nlohmann::json;

// What `nodebench validate` judges of this family: one-way copies with peer access on (the
// staged, peer-off copies measure the host path), one check per ordered pair, by link type.
std::vector<ValidationCheck> p2p_checks() {
  ValidationCheck c;
  c.id = "p2p.bandwidth";
  c.keys_prefix = "p2p.";
  c.required_level = 3;
  c.min_gpus = 2;
  c.fix = "Peer bandwidth is low: see p2p.access, p2p.topology and p2p.iommu; on NVLink systems check "
          "nvidia-smi nvlink -s for inactive links and the fabric manager (nvidia-fabricmanager) on NVSwitch systems.";
  c.runs_case = [](const Case& x) {
    return x.params.value("test", "bandwidth") == "bandwidth" && x.params.value("mode", "one_way") == "one_way" &&
           x.params.value("peer", "enabled") == "enabled" && x.params.value("engine", "ce") == "ce";
  };
  c.node = [](const NodeCheckInput& in) {
    using jf::at;
    using jf::num_or;
    using jf::str_or;
    const json& doc = in.doc;
    const json& records = at(doc, "records");
    const json* env = &at(doc, "environment");
    auto usable = [](const json& r) {
      const json& p = at(r, "params");
      return str_or(r, "family") == "p2p" && at(p, "src").is_number() && at(p, "dst").is_number() &&
             str_or(p, "test", "bandwidth") == "bandwidth" && str_or(p, "mode", "one_way") == "one_way" &&
             str_or(p, "peer", "enabled") == "enabled" && str_or(p, "engine", "ce") == "ce";
    };
    std::set<std::pair<int, int>> pairs;
    for (const auto& r : records)
      if (usable(r)) {
        const int a = at(at(r, "params"), "src").get<int>(), b = at(at(r, "params"), "dst").get<int>();
        if (a != b) pairs.insert({a, b});
      }
    std::vector<Judgement> out;
    if (pairs.empty()) {
      Judgement j;
      j.id = "p2p.bandwidth";
      j.skip = "no one-way peer copy record in this run";
      out.push_back(j);
    }
    for (const auto& [s, d] : pairs) {
      Judgement j;
      j.record = largest_record(records, [&, s = s, d = d](const json& r) {
        return usable(r) && num_or(at(r, "params"), "src", -1) == s && num_or(at(r, "params"), "dst", -1) == d;
      });
      const std::string link = j.record ? link_class(doc, *j.record, {s, d}) : "pcie";
      j.id = "p2p." + link;
      j.gpu = s;
      j.peer = d;
      j.model_gpu = s;
      j.what = "p2p " + std::to_string(s) + "->" + std::to_string(d);
      const std::string unit = in.unit(j.id, s);
      j.value = [env, unit, link, s = s, d = d](const json& r, std::string& how) {
        return rate_against_link(kGbps.of(r).value_or(NAN), unit, slowest_link_gbps(*env, {s, d}, true), "",
                                 "the slower GPU's PCIe link", link, how);
      };
      out.push_back(j);
    }
    return out;
  };
  return {c};
}

}  // namespace nb::p2p
