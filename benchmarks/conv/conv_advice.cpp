// What the conv family contributes to `nodebench advise` (bench/contributions.hpp): its ResNet-50
// network case's training pass as a partial one-GPU step (convolutions only), used where no
// full training step was measured. Built with or without cuDNN: advise reads result files of
// other nodes.
#include "base/json_fields.hpp"
#include "bench/contributions.hpp"
#include "bench/metric.hpp"

namespace nb::conv {
namespace {

using nlohmann::json;
using jf::at;
using jf::jnum;
using jf::str_or;

void read(const json& r, AdviceFacts& facts) {
  const json& p = at(r, "params");
  if (str_or(r, "id").rfind("conv/resnet50/", 0) != 0 || str_or(p, "pass") != "train") return;
  const auto batch = jnum(p, "batch");
  if (!batch) return;
  StepTime s;
  s.precision = str_or(p, "precision");
  s.layout = str_or(p, "layout");
  s.batch = int(*batch);
  s.step_s = kTimeMetric.of(r).value_or(0) * 1e-6;
  s.source = str_or(r, "id");
  s.kind = "conv";
  s.partial = true;
  facts.steps.push_back(s);
}

const AdviceRegistrar advice({"conv", read,
                              {{"metrics", kTimeMetric.name(), 0, true}, {"params", "batch", 1, false}},
                              "no train record for some rows: their one-GPU step is the conv family's network case "
                              "(convolutions only: batch norm, ReLU, pooling and the update are left out, so the step "
                              "is shorter and the predicted efficiency lower than a real training step's)",
                              std::nullopt,
                              "^conv/resnet50/"});

}  // namespace
}  // namespace nb::conv
