// Helpers of the GPU tests (label gpu) that run the training step on device 0.
#pragma once
#include <cuda_runtime_api.h>

#include "base/error.hpp"
#include "bench/algo_choice.hpp"
#include "bench/resources_store.hpp"
#include "bench/settings.hpp"
#include "shared/cudnn/cudnn_conv.hpp"

namespace nb::test {

// Selects device 0 and reads its properties; false when no GPU is visible (the test skips).
inline bool have_gpu(cudaDeviceProp& prop) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) return false;
  NB_CUDA(cudaSetDevice(0));
  NB_CUDA(cudaGetDeviceProperties(&prop, 0));
  return true;
}

// What a Session lends a training step: the GPU's handles and the algorithm choices. Declare it
// before the steps that use it, so that it is destroyed after them (and before CUDA shuts down).
struct Lent {
  ResourceStore store;
  AlgoCache cache;
  Settings settings;
  cudnn::Libraries libs(int device) { return cudnn::libraries(store, cache, settings, device); }
};

}  // namespace nb::test
