#include "conv_cost.hpp"

#include "node/profiles.hpp"

namespace nb::cudnn {

std::string conv_cost_peak(const Prec& P, const GpuInfo& g) {
  return peak_key_for(P.name, std::string(P.name) == "tf32" ? "tf32" : "fp32", g.cc());
}

double conv_op_s(const Prec& P, const GpuInfo& g, double flops) {
  return op_seconds(g, conv_cost_peak(P, g), flops / 1e12, "fp32_tflops");
}

}  // namespace nb::cudnn
