// What the train family contributes to `nodebench advise` (bench/contributions.hpp): the
// one-GPU ResNet-50 training step per precision, layout and batch, with its peak device memory.
// Built with or without cuDNN: advise reads result files of other nodes.
#include "base/json_fields.hpp"
#include "bench/contributions.hpp"
#include "train_metrics.hpp"

namespace nb::train {
namespace {

using nlohmann::json;
using jf::at;
using jf::jnum;
using jf::str_or;

void read(const json& r, AdviceFacts& facts) {
  if (str_or(r, "id").rfind("train/resnet50/", 0) != 0) return;
  const json& p = at(r, "params");
  const auto batch = jnum(p, "batch");
  if (!batch) return;
  StepTime s;
  s.precision = str_or(p, "precision");
  s.layout = str_or(p, "layout");
  s.batch = int(*batch);
  s.step_s = kStepTime.of(r).value_or(0) * 1e-3;
  s.source = str_or(r, "id");
  s.kind = "train";
  s.peak_memory_bytes = kPeakMemory.of(r);
  facts.steps.push_back(s);
}

const AdviceRegistrar advice({"train", read,
                              {{"metrics", kStepTime.name(), 0, true}, {"params", "batch", 1, false}},
                              "",
                              std::nullopt,
                              "^train/resnet50/"});

}  // namespace
}  // namespace nb::train
