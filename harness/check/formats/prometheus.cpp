// `validate --prometheus FILE`: the verdicts as a node_exporter textfile (check/validate_outputs.hpp).
#include <memory>

#include "check/validate_outputs.hpp"
#include "run/formats.hpp"

namespace nb {
namespace {

const FormatRegistrar kPrometheus{{
    .name = "prometheus",
    .what = "Prometheus textfile",
    .commands = kFormatValidate,
    .option = "--prometheus",
    .help = "Write the verdicts as a node_exporter textfile (.prom) to FILE",
    .stage = FormatStage::verdict,
    .order = 50,
    .make = [](const FormatContext& c) -> std::unique_ptr<Reporter> {
      const auto* v = dynamic_cast<const VerdictExtra*>(c.extra);
      if (!v) return nullptr;
      return std::make_unique<PrometheusReport>(c.file, v->report, v->prom);
    },
}};

}  // namespace
}  // namespace nb
