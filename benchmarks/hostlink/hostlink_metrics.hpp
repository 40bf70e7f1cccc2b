// The hostlink family's metrics, declared once (bench/metric.hpp): its cases write them and its
// checks and advice read them back through these declarations.
#pragma once
#include "bench/metric.hpp"

namespace nb::hostlink {

// The copy rate, the throughput of every hostlink case.
inline constexpr MetricDecl kGbps{"", Unit::gbps, Better::higher};
// The link's theoretical one-direction rate, and the copy rate against it.
inline constexpr MetricDecl kLinkGbps{"link", Unit::gbps};
inline constexpr MetricDecl kLinkPct{"link", Unit::pct, Better::higher};
// Both directions at once: each, and their sum (as tools that report each direction add them).
inline constexpr MetricDecl kH2dGbps{"h2d", Unit::gbps, Better::higher};
inline constexpr MetricDecl kD2hGbps{"d2h", Unit::gbps, Better::higher};
inline constexpr MetricDecl kSumGbps{"sum", Unit::gbps, Better::higher};
// Every GPU at once: each GPU's rate, gpu<N>_gbps.
inline constexpr KeyedMetricDecl kGpuGbps{"gpu", Unit::gbps, Better::higher};

}  // namespace nb::hostlink
