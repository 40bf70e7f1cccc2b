#include "step_cost.hpp"

#include <algorithm>
#include <climits>

#include "resnet50_net.hpp"

namespace nb::train {

double step_compute_s(const cudnn::Prec& P, const GpuInfo& g, int64_t batch) {
  return cudnn::conv_op_s(P, g, 3.0 * resnet50::net().forward_flops_per_image() * double(batch));
}

double step_compute_cuda_cores_s(const GpuInfo& g, int64_t batch) {
  return op_seconds(g, "fp32_tflops", 3.0 * resnet50::net().forward_flops_per_image() * double(batch) / 1e12);
}

double step_s(const cudnn::Prec& P, const GpuInfo& g, int64_t batch) {
  return kStepKernels * kKernelFloorS + step_compute_s(P, g, batch);
}

double eager_step_s(const cudnn::Prec& P, const GpuInfo& g, int64_t batch) {
  return std::max(step_s(P, g, batch), kStepKernels * kHostCallS);
}

bool skipped_unrun(const cudnn::Prec& P, const GpuInfo& g, int64_t batch) {
  const auto plan = resnet50::memory_plan(resnet50::net(), batch, int(P.elem));
  return (g.memory_bytes && plan.total() > int64_t(g.memory_bytes)) ||
         resnet50::max_activation_elems_per_image(resnet50::net()) * batch > int64_t(INT32_MAX);
}

}  // namespace nb::train
