// The train_dp family's metrics, declared once (bench/metric.hpp): its case writes them and its
// contribution to `nodebench advise` reads them through these declarations.
#pragma once
#include "bench/metric.hpp"

namespace nb::train_dp {

inline constexpr MetricDecl kStepTime{"step_time", Unit::ms, Better::lower};
inline constexpr MetricDecl kImagesPerS{"", Unit::images_per_s, Better::higher};
inline constexpr MetricDecl kComputeStep{"compute_step", Unit::ms, Better::lower};
inline constexpr MetricDecl kExposedComm{"exposed_comm", Unit::ms, Better::lower};
inline constexpr MetricDecl kOneGpuStep{"one_gpu_step", Unit::ms, Better::lower};
inline constexpr MetricDecl kOneGpuImagesPerS{"one_gpu", Unit::images_per_s, Better::higher};
inline constexpr MetricDecl kScalingEfficiency{"scaling_efficiency", Unit::ratio, Better::higher};
inline constexpr MetricDecl kBucketBytes{"bucket", Unit::bytes};
inline constexpr MetricDecl kBucketCount{"bucket", Unit::count};
inline constexpr MetricDecl kGradientBytes{"gradient", Unit::bytes};

}  // namespace nb::train_dp
