// The SM-driven copy (16-byte words, four loads in flight per thread) that the memory, host-link
// and peer-to-peer families share: either side may be mapped host memory or a peer's memory.
#include "kernels/common/kernels.cuh"

namespace nb::kernels {
namespace {

__global__ void sm_copy_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst, size_t n) {
  const size_t grid = size_t(gridDim.x) * blockDim.x;
  size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + 3 * grid < n; i += 4 * grid) {
    uint4 v0 = src[i], v1 = src[i + grid], v2 = src[i + 2 * grid], v3 = src[i + 3 * grid];
    dst[i] = v0;
    dst[i + grid] = v1;
    dst[i + 2 * grid] = v2;
    dst[i + 3 * grid] = v3;
  }
  for (; i < n; i += grid) dst[i] = src[i];
}

}  // namespace

void launch_sm_copy(cudaStream_t s, const void* src, void* dst, size_t n16, unsigned blocks, unsigned threads) {
  sm_copy_kernel<<<blocks, threads, 0, s>>>(static_cast<const uint4*>(src), static_cast<uint4*>(dst), n16);
}

}  // namespace nb::kernels
