// The peak family's metrics, declared once (bench/metric.hpp): the rate (the throughput the
// harness computes), the theoretical rate at the measured clock (the harness adds
// of_theoretical_pct from it) and the clock (the core's kSmClockMetric).
#pragma once
#include "bench/metric.hpp"

namespace nb::peak {

inline constexpr MetricDecl kTflops{"", Unit::tflops, Better::higher};
inline constexpr MetricDecl kTops{"", Unit::tops, Better::higher};  // the integer units
inline constexpr MetricDecl kTheoreticalTflops{"theoretical", Unit::tflops};
inline constexpr MetricDecl kTheoreticalTops{"theoretical", Unit::tops};

}  // namespace nb::peak
