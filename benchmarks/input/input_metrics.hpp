// The input family's metrics, declared once (bench/metric.hpp): its cases write them and its
// verdict reads them back through these declarations.
#pragma once
#include "bench/metric.hpp"

namespace nb::input {

// The rate (the throughput, and the record's figure of merit).
inline constexpr MetricDecl kImagesPerS{"", Unit::images_per_s, Better::higher};
// The CPU pipeline: per worker core, per CPU second, the workers, the time per image per stage,
// the files' and the output's size, the workers' share of the CPU.
inline constexpr MetricDecl kPerCore{"per_core", Unit::images_per_s, Better::higher};
inline constexpr MetricDecl kPerCoreCpuTime{"per_core_cpu_time", Unit::images_per_s, Better::higher};
inline constexpr MetricDecl kCores{"cores", Unit::count};
inline constexpr MetricDecl kDecodePerImage{"decode_per_image", Unit::ms, Better::lower};
inline constexpr MetricDecl kAugmentPerImage{"augment_per_image", Unit::ms, Better::lower};
inline constexpr MetricDecl kMeanFile{"mean_file", Unit::bytes};
inline constexpr MetricDecl kOutput{"output", Unit::bytes};
inline constexpr MetricDecl kWorkerCpu{"worker_cpu", Unit::share};
// The GPU decoder: GPU time per image, the augmentation kernels' part of it.
inline constexpr MetricDecl kGpuTimePerImage{"gpu_time_per_image", Unit::ms, Better::lower};
inline constexpr MetricDecl kAugmentGpuTimePerImage{"augment_gpu_time_per_image", Unit::ms, Better::lower};

}  // namespace nb::input
