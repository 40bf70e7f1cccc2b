// The train family's metrics, declared once (bench/metric.hpp): the case writes them and its
// contributions read them back through these declarations.
#pragma once
#include "bench/metric.hpp"

namespace nb::train {

inline constexpr MetricDecl kStepTime{"step_time", Unit::ms, Better::lower};
inline constexpr MetricDecl kImagesPerS{"", Unit::images_per_s, Better::higher};
inline constexpr MetricDecl kPeakMemory{"peak_memory", Unit::bytes, Better::lower};
inline constexpr MetricDecl kMemoryFraction{"memory_fraction", Unit::x, Better::lower};
inline constexpr MetricDecl kTflops{"", Unit::tflops, Better::higher};  // 3 x the forward pass's flops
// The eager loop (no CUDA graph): the host's issue time, its step and rate.
inline constexpr MetricDecl kHostIssue{"host_issue", Unit::ms, Better::lower};
inline constexpr MetricDecl kEagerStep{"eager_step", Unit::ms, Better::lower};
inline constexpr MetricDecl kEagerImagesPerS{"eager", Unit::images_per_s, Better::higher};
inline constexpr MetricDecl kDeviceUsed{"device_used", Unit::bytes, Better::lower};
// The time per layer kind (time_<kind>_ms) and the memory-bound kinds' share of their sum.
inline constexpr KeyedMetricDecl kKindTime{"time_", Unit::ms, Better::lower};
inline constexpr MetricDecl kElementwiseShare{"elementwise", Unit::share};
// The bytes the memory-bound kinds must move at least (shared/resnet50's memory_bound_floor).
inline constexpr MetricDecl kBnFloor{"bn_floor", Unit::bytes};
inline constexpr MetricDecl kElementwiseFloor{"elementwise_floor", Unit::bytes};
inline constexpr MetricDecl kPoolFloor{"pool_floor", Unit::bytes};
inline constexpr MetricDecl kUpdateFloor{"update_floor", Unit::bytes};
// The mean board power over the timed iterations (node/power_meter.hpp): the energy counter, or sampled.
inline constexpr MetricDecl kBoardPower{"board_power", Unit::w, Better::lower};

}  // namespace nb::train
