// The memory family's metrics, declared once (bench/metric.hpp): its cases write the bandwidth
// (the throughput the harness computes) and its checks read it back through this declaration.
#pragma once
#include "bench/metric.hpp"

namespace nb::memory {

inline constexpr MetricDecl kGbps{"", Unit::gbps, Better::higher};

}  // namespace nb::memory
