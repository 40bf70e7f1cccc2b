// What the train family contributes to `nodebench advise` (bench/contributions.hpp): the
// one-GPU ResNet-50 training step per precision, layout and batch, with its peak device memory.
// Built with or without cuDNN: advise reads result files of other nodes; so is the registration
// of its metrics (the check of a result file read back).
#include "base/json_fields.hpp"
#include "bench/algo_choice.hpp"
#include "bench/contributions.hpp"
#include "bench/metric_registry.hpp"
#include "shared/common/advice_step.hpp"
#include "train_metrics.hpp"

namespace nb::train {
namespace {

void read(const nlohmann::json& r, AdviceFacts& facts) {
  if (jf::str_or(r, "id").rfind("train/resnet50/", 0) != 0) return;
  std::optional<StepTime> s = advice_step(r, kStepTime, "train");
  if (!s) return;
  s->peak_memory_bytes = kPeakMemory.of(r);
  facts.steps.push_back(*s);
}

const AdviceRegistrar advice({"train", read,
                              {{"metrics", kStepTime.name(), 0, true}, {"params", "batch", 1, false}},
                              "",
                              std::nullopt,
                              "^train/resnet50/"});

NB_REGISTER_METRICS("train", {kImagesPerS, kStepTime, kTflops, kHostIssue, kEagerStep, kEagerImagesPerS, kPeakMemory,
                              kDeviceUsed, kMemoryFraction, kWorkspaceMetric, kKindTime, kElementwiseShare, kBnFloor,
                              kElementwiseFloor, kPoolFloor, kUpdateFloor, kBoardPower});

}  // namespace
}  // namespace nb::train
