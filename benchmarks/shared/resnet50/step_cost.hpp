// The cost model of the ResNet-50 training step (bench/cost.hpp), shared by the train and
// train_dp families: a step is about kStepKernels kernels, each at least kKernelFloorS on the GPU
// and kHostCallS of the host's time when issued call by call, plus its arithmetic at the GPU's
// peak for the precision. Modelling assumptions; the fit per kind (costs.json) scales them.
#pragma once
#include <cstdint>

#include "shared/cudnn/conv_cost.hpp"

namespace nb::train {

constexpr double kStepKernels = 600;
constexpr double kKernelFloorS = 3e-6;
constexpr double kHostCallS = 20e-6;

// The step's arithmetic (forward and backward) at the GPU's peak for P.
double step_compute_s(const cudnn::Prec& P, const GpuInfo& g, int64_t batch);
// The same convolutions at the GPU's FP32 CUDA-core rate: the pace of the slow algorithms cuDNN's
// whole search tries besides the tensor-core ones (the model of that search; fitted per kind).
double step_compute_cuda_cores_s(const GpuInfo& g, int64_t batch);
// The step as one CUDA graph, and issued call by call (the host's cost or the GPU's, the larger).
double step_s(const cudnn::Prec& P, const GpuInfo& g, int64_t batch);
double eager_step_s(const cudnn::Prec& P, const GpuInfo& g, int64_t batch);
// Whether the batch is skipped before anything runs: its memory plan is over the device, or its
// largest activation over cuDNN's 32-bit element count.
bool skipped_unrun(const cudnn::Prec& P, const GpuInfo& g, int64_t batch);

}  // namespace nb::train
