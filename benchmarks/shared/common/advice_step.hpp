// The one-GPU training step a record holds, as `nodebench advise` takes it (bench/contributions.hpp's
// StepTime), for the families whose records carry one (conv's network case, train): read the same
// way from each, through the family's declaration of its step metric.
#pragma once
#include <optional>

#include <nlohmann/json_fwd.hpp>

#include "bench/contributions.hpp"
#include "bench/metric.hpp"

namespace nb {

// The record's precision, layout and batch (its params), its id as the source, `kind`, and its step
// in seconds from the metric `step` (in us, ms or s; 0 where the record has none); nullopt where the
// params hold no batch.
std::optional<StepTime> advice_step(const nlohmann::json& record, const MetricDecl& step, const char* kind);

}  // namespace nb
