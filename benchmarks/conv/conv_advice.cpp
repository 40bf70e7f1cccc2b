// What the conv family contributes to `nodebench advise` (bench/contributions.hpp): its ResNet-50
// network case's training pass as a partial one-GPU step (convolutions only), used where no
// full training step was measured. Built with or without cuDNN: advise reads result files of
// other nodes; so is the registration of its metrics (the check of a result file read back).
#include "base/json_fields.hpp"
#include "bench/algo_choice.hpp"
#include "bench/contributions.hpp"
#include "bench/metric_registry.hpp"
#include "conv_metrics.hpp"
#include "shared/common/advice_step.hpp"

namespace nb::conv {
namespace {

void read(const nlohmann::json& r, AdviceFacts& facts) {
  if (jf::str_or(r, "id").rfind("conv/resnet50/", 0) != 0 || jf::str_or(jf::at(r, "params"), "pass") != "train") return;
  std::optional<StepTime> s = advice_step(r, kTimeMetric, "conv");
  if (!s) return;
  s->partial = true;
  facts.steps.push_back(*s);
}

const AdviceRegistrar advice({"conv", read,
                              {{"metrics", kTimeMetric.name(), 0, true}, {"params", "batch", 1, false}},
                              "no train record for some rows: their one-GPU step is the conv family's network case "
                              "(convolutions only: batch norm, ReLU, pooling and the update are left out, so the step "
                              "is shorter and the predicted efficiency lower than a real training step's)",
                              std::nullopt,
                              "^conv/resnet50/"});

NB_REGISTER_METRICS("conv", {kTflops, kImagesPerS, kTrainImagesPerS, kFwdImagesPerS, kFwdTime, kPeakMemory, kMemoryFraction,
                             kWorkspaceMetric});

}  // namespace
}  // namespace nb::conv
