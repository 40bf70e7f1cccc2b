// Helpers of the GPU tests (label gpu) that run the training step on device 0.
#pragma once
#include <cuda_runtime_api.h>

#include "base/error.hpp"

namespace nb::test {

// Selects device 0 and reads its properties; false when no GPU is visible (the test skips).
inline bool have_gpu(cudaDeviceProp& prop) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) return false;
  NB_CUDA(cudaSetDevice(0));
  NB_CUDA(cudaGetDeviceProperties(&prop, 0));
  return true;
}

}  // namespace nb::test
