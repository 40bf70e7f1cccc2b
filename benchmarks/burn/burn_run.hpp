// The burn's one case (burn.cpp), run by the family's declaration (burn_family.cpp).
#pragma once
#include "bench/benchmark.hpp"

namespace nb::burn {

// Every GPU of the run under the GEMM and the memory test for NODEBENCH_BURN_DURATION seconds.
void run_burn(CaseContext& ctx);

}  // namespace nb::burn
