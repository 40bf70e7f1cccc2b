// The nccl family's metrics, declared once (bench/metric.hpp): its cases write them and its
// contributions (advise, validate) read them through these declarations.
#pragma once
#include "bench/metric.hpp"

namespace nb::nccl {

inline constexpr MetricDecl kAlgbw{"algbw", Unit::gbps, Better::higher};
inline constexpr MetricDecl kBusbw{"busbw", Unit::gbps, Better::higher};
inline constexpr MetricDecl kBusFactor{"bus_factor", Unit::x};
inline constexpr MetricDecl kData{"data", Unit::bytes};
inline constexpr MetricDecl kGpuCount{"gpu", Unit::count};
inline constexpr MetricDecl kWrong{"wrong", Unit::count, Better::lower};
inline constexpr MetricDecl kScalingEfficiency{"scaling_efficiency", Unit::pct, Better::higher};

}  // namespace nb::nccl
