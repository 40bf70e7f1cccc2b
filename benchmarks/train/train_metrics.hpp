// The train family's metrics that its contributions read back, declared once (bench/metric.hpp):
// the case writes them through these declarations too.
#pragma once
#include "bench/metric.hpp"

namespace nb::train {

inline constexpr MetricDecl kStepTime{"step_time", Unit::ms, Better::lower};
inline constexpr MetricDecl kImagesPerS{"", Unit::images_per_s, Better::higher};
inline constexpr MetricDecl kPeakMemory{"peak_memory", Unit::bytes, Better::lower};
inline constexpr MetricDecl kMemoryFraction{"memory_fraction", Unit::x, Better::lower};
// The mean board power over the timed iterations (node/power_meter.hpp): the energy counter, or sampled.
inline constexpr MetricDecl kBoardPower{"board_power", Unit::w, Better::lower};

}  // namespace nb::train
