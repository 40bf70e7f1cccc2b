// The burn family's metrics, declared once (bench/metric.hpp): the case writes them, from the
// run's summary (burn_rules.hpp), through these declarations.
#pragma once
#include "bench/metric.hpp"

namespace nb::burn {

inline constexpr MetricDecl kTflops{"", Unit::tflops, Better::higher};  // one GEMM's rate (the throughput)
inline constexpr MetricDecl kSustainedGemm{"sustained_gemm", Unit::tflops, Better::higher};
inline constexpr MetricDecl kFirstMinuteGemm{"first_minute_gemm", Unit::tflops, Better::higher};
inline constexpr MetricDecl kMeanPower{"mean_power", Unit::w};
inline constexpr MetricDecl kMemoryTest{"memory_test", Unit::gbps, Better::higher};
inline constexpr MetricDecl kFaultyElements{"faulty_elements", Unit::count, Better::lower};
inline constexpr MetricDecl kMemoryErrors{"memory_errors", Unit::count, Better::lower};
inline constexpr MetricDecl kMaxTemperature{"max_temperature", Unit::c, Better::lower};

}  // namespace nb::burn
