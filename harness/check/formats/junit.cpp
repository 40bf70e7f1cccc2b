// `validate --junit FILE`: the verdicts as JUnit XML (check/validate_outputs.hpp), for CI dashboards.
#include <memory>

#include "check/validate_outputs.hpp"
#include "run/formats.hpp"

namespace nb {
namespace {

const FormatRegistrar kJunit{{
    .name = "junit",
    .what = "JUnit XML",
    .commands = kFormatValidate,
    .option = "--junit",
    .help = "Write the verdicts as JUnit XML to FILE",
    .stage = FormatStage::verdict,
    .order = 40,
    .make = [](const FormatContext& c) -> std::unique_ptr<Reporter> {
      const auto* v = dynamic_cast<const VerdictExtra*>(c.extra);
      if (!v) return nullptr;
      return std::make_unique<JunitReport>(c.file, v->report, v->hostname, v->started);
    },
}};

}  // namespace
}  // namespace nb
