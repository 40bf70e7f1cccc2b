// The example family's metrics, declared once (bench/metric.hpp): the case writes them (the fill
// rate, as the throughput the harness computes), the analysis reads them back through these
// declarations, and the family registers them (NB_REGISTER_METRICS in example.cpp) for `nodebench
// list --metrics` and the check of a result file read back. A new family copies this file.
#pragma once
#include "bench/metric.hpp"

namespace nb::example {

inline constexpr MetricDecl kFillRate{"", Unit::gbps, Better::higher};

}  // namespace nb::example
