#include "shared/common/advice_step.hpp"

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/json_fields.hpp"

namespace nb {

namespace {

double seconds_per(Unit u) {
  switch (u) {
    case Unit::us: return 1e-6;
    case Unit::ms: return 1e-3;
    case Unit::s: return 1.0;
    default: throw Error(std::string("a step time in ") + suffix(u) + ": not a time");
  }
}

}  // namespace

std::optional<StepTime> advice_step(const nlohmann::json& r, const MetricDecl& step, const char* kind) {
  const nlohmann::json& p = jf::at(r, "params");
  const auto batch = jf::jnum(p, "batch");
  if (!batch) return std::nullopt;
  StepTime s;
  s.precision = jf::str_or(p, "precision");
  s.layout = jf::str_or(p, "layout");
  s.batch = int(*batch);
  s.step_s = step.of(r).value_or(0) * seconds_per(step.unit);
  s.source = jf::str_or(r, "id");
  s.kind = kind;
  return s;
}

}  // namespace nb
