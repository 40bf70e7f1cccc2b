// The gemm family's metrics, declared once (bench/metric.hpp): its cases write them (the rate, as
// the throughput the harness computes) and its analyses read them back through these declarations.
#pragma once
#include "bench/metric.hpp"

namespace nb::gemm {

inline constexpr MetricDecl kTflops{"", Unit::tflops, Better::higher};
inline constexpr MetricDecl kTops{"", Unit::tops, Better::higher};  // the integer GEMMs

}  // namespace nb::gemm
