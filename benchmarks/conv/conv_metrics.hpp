// The conv family's metrics, declared once (bench/metric.hpp): its cases write them and its
// analyses read them back through these declarations (time_us and workspace_bytes are the
// core's: kTimeMetric, kWorkspaceMetric).
#pragma once
#include "bench/metric.hpp"

namespace nb::conv {

inline constexpr MetricDecl kTflops{"", Unit::tflops, Better::higher};  // the throughput
inline constexpr MetricDecl kImagesPerS{"", Unit::images_per_s, Better::higher};
// The network case (resnet50_total): the training pass, the forward pass, its memory.
inline constexpr MetricDecl kTrainImagesPerS{"train", Unit::images_per_s, Better::higher};
inline constexpr MetricDecl kFwdImagesPerS{"fwd", Unit::images_per_s, Better::higher};
inline constexpr MetricDecl kFwdTime{"fwd_time", Unit::us, Better::lower};
inline constexpr MetricDecl kPeakMemory{"peak_memory", Unit::bytes, Better::lower};
inline constexpr MetricDecl kMemoryFraction{"memory_fraction", Unit::x, Better::lower};

}  // namespace nb::conv
