// What the train_dp family contributes to `nodebench advise` (bench/contributions.hpp): its
// measured data-parallel steps, which the advice sets beside its predicted rows. Built with or
// without cuDNN: advise reads result files of other nodes.
#include "base/json_fields.hpp"
#include "bench/contributions.hpp"
#include "bench/metric_registry.hpp"
#include "train_dp_metrics.hpp"

namespace nb::train_dp {
namespace {

using nlohmann::json;
using jf::at;
using jf::jnum;
using jf::str_or;

void read(const json& r, AdviceFacts& facts) {
  const json& p = at(r, "params");
  DataParallelStep d;
  d.id = str_or(r, "id");
  d.precision = str_or(p, "precision");
  d.layout = str_or(p, "layout");
  d.batch = int(jnum(p, "batch").value_or(0));
  d.gpus = int(jnum(p, "gpus").value_or(0));
  d.accumulation = int(jnum(p, "accumulation").value_or(1));
  d.images_per_s = kImagesPerS.of(r).value_or(0);
  d.efficiency = kScalingEfficiency.of(r);
  d.step_ms = kStepTime.of(r);
  d.exposed_comm_ms = kExposedComm.of(r);
  facts.dp.push_back(d);
}

const AdviceRegistrar advice({"train_dp", read,
                              {{"metrics", kImagesPerS.name(), 0, false},
                               {"metrics", kStepTime.name(), 0, true},
                               {"params", "batch", 1, false},
                               {"params", "gpus", 1, false},
                               {"params", "accumulation", 1, false}},
                              "",
                              std::nullopt,
                              "^train_dp/"});

// Its metrics, registered here (built with or without cuDNN) for the check of a result file read back.
NB_REGISTER_METRICS("train_dp", {kStepTime, kImagesPerS, kComputeStep, kExposedComm, kOneGpuStep, kOneGpuImagesPerS,
                                 kScalingEfficiency, kBucketBytes, kBucketCount, kGradientBytes});

}  // namespace
}  // namespace nb::train_dp
