// The latency family's metrics, declared once (bench/metric.hpp); the median is the core's
// kLatencyMetric (latency_us, the record's figure of merit).
#pragma once
#include "bench/metric.hpp"

namespace nb::latency {

inline constexpr MetricDecl kP90Latency{"p90_latency", Unit::us, Better::lower};

}  // namespace nb::latency
