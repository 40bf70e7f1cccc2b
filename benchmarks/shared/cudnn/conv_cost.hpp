// The cost model of cuDNN convolutions (bench/cost.hpp) shared by the families that run them:
// the time of one pass at the GPU's peak for its precision, and what choosing its algorithm runs.
#pragma once
#include <string>

#include "bench/benchmark.hpp"
#include "bench/cost.hpp"
#include "cudnn_conv.hpp"

namespace nb::cudnn {

// The peak a convolution of precision P runs against on `g` (FP16 accumulates in FP32).
std::string conv_cost_peak(const Prec& P, const GpuInfo& g);
// Model seconds of `flops` of convolution at that peak.
double conv_op_s(const Prec& P, const GpuInfo& g, double flops);
// How many runs of a pass choosing its algorithm costs, in units of the pass's own time: cuDNN's
// whole search runs every algorithm (some several times slower than the best) and then we time the
// live ones in 5-15 interleaved rounds of 1 + 3 runs; a seeded search times two to four candidates.
// Modelling assumptions, fitted per kind (costs.json).
constexpr double kFullSearchRuns = 120;
constexpr double kSeededSearchRuns = 40;
// The harness's cost per pass choice beyond the runs (workspace queries, synchronisations).
constexpr double kSearchOverheadS = 2e-3;

// The batches at which the full suite's conv network cases choose every ResNet-50 convolution in
// every precision and layout (the conv family's cases). They run before the train family's, whose
// steps at these batches find every choice in the session's memo: no search there.
constexpr int64_t kNetworkBatches[] = {32, 256};
inline bool network_batch(int64_t b) {
  for (int64_t n : kNetworkBatches)
    if (n == b) return true;
  return false;
}

}  // namespace nb::cudnn
