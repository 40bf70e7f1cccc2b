// Dev experiment, not part of nodebench: which shape of copy kernel comes nearest cudaMemcpy D2D
// on a 4 GiB buffer (bytes read + written). Build and run on a GPU machine:
//   nvcc -arch=sm_90 -O3 -o /tmp/copy_shapes scripts/dev/device/copy_kernel_shapes.cu && /tmp/copy_shapes
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e) { printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)
template <int U, bool CS>
__global__ void interleaved(const float4* __restrict__ a, float4* __restrict__ b, size_t n4) {
  const size_t grid = size_t(gridDim.x) * blockDim.x;
  size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + (U - 1) * grid < n4; i += U * grid) {
    float4 x[U];
#pragma unroll
    for (int u = 0; u < U; ++u) x[u] = CS ? __ldcs(a + i + u * grid) : a[i + u * grid];
#pragma unroll
    for (int u = 0; u < U; ++u) { if (CS) __stcs(b + i + u * grid, x[u]); else b[i + u * grid] = x[u]; }
  }
  for (; i < n4; i += grid) b[i] = a[i];
}
template <int U, bool CS>
__global__ void tiled(const float4* __restrict__ a, float4* __restrict__ b, size_t n4) {
  const size_t tile = size_t(U) * blockDim.x;
  const size_t ntiles = n4 / tile;
  for (size_t t = blockIdx.x; t < ntiles; t += gridDim.x) {
    const size_t base = t * tile + threadIdx.x;
    float4 x[U];
#pragma unroll
    for (int u = 0; u < U; ++u) x[u] = CS ? __ldcs(a + base + u * blockDim.x) : a[base + u * blockDim.x];
#pragma unroll
    for (int u = 0; u < U; ++u) { if (CS) __stcs(b + base + u * blockDim.x, x[u]); else b[base + u * blockDim.x] = x[u]; }
  }
  for (size_t i = ntiles * tile + size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n4; i += size_t(gridDim.x) * blockDim.x) b[i] = a[i];
}
int main() {
  const size_t bytes = size_t(4) << 30, n4 = bytes / 16;
  float4 *a, *b;
  CK(cudaMalloc(&a, bytes)); CK(cudaMalloc(&b, bytes));
  CK(cudaMemset(a, 1, bytes)); CK(cudaMemset(b, 0, bytes));
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  auto time = [&](auto fn) {
    for (int i = 0; i < 3; ++i) fn();
    std::vector<float> t;
    for (int r = 0; r < 30; ++r) { cudaEventRecord(e0); fn(); cudaEventRecord(e1); cudaEventSynchronize(e1); float ms; cudaEventElapsedTime(&ms, e0, e1); t.push_back(ms); }
    std::sort(t.begin(), t.end());
    return 2.0 * bytes / (t[t.size() / 2] * 1e-3) / 1e9;
  };
  printf("%-34s %8.1f GB/s\n", "cudaMemcpyAsync D2D", time([&] { cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice); }));
  for (int bps : {4, 8, 16}) for (int thr : {256, 512}) {
    if (bps * thr > 2048) continue;
    const unsigned g = sms * bps;
#define V(K, NAME) printf("%-20s b/SM %2d thr %3d %8.1f GB/s\n", NAME, bps, thr, time([&] { K<<<g, thr>>>(a, b, n4); }));
    V((interleaved<4, true>), "interleaved4 cs")
    V((interleaved<4, false>), "interleaved4 plain")
    V((interleaved<8, false>), "interleaved8 plain")
    V((tiled<4, true>), "tiled4 cs")
    V((tiled<4, false>), "tiled4 plain")
    V((tiled<8, false>), "tiled8 plain")
    V((tiled<8, true>), "tiled8 cs")
  }
  CK(cudaGetLastError());
  return 0;
}
