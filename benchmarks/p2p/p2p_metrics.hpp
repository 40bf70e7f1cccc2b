// The p2p family's metrics, declared once (bench/metric.hpp): its cases write them and its checks
// read them back through these declarations (latency_us is the core's kLatencyMetric).
#pragma once
#include "bench/metric.hpp"

namespace nb::p2p {

inline constexpr MetricDecl kGbps{"", Unit::gbps, Better::higher};  // the copy rate (the throughput)
inline constexpr MetricDecl kP90Latency{"p90_latency", Unit::us, Better::lower};
// Both directions at once: each, their sum, and the sum over the wall time of both.
inline constexpr MetricDecl kFwdGbps{"fwd", Unit::gbps, Better::higher};
inline constexpr MetricDecl kRevGbps{"rev", Unit::gbps, Better::higher};
inline constexpr MetricDecl kSumGbps{"sum", Unit::gbps, Better::higher};
inline constexpr MetricDecl kWallGbps{"wall", Unit::gbps, Better::higher};

}  // namespace nb::p2p
