// An independent peak-rate kernel, written apart from kernels/peak_kernels.cu, to check the peak
// family against (issue 14): for FP32 FFMA, FP16 HFMA2, BF16 HFMA2 and FP64 DFMA, 8 independent
// chains per thread, 8 blocks of 256 threads per SM, operands passed as kernel parameters (the
// 16-bit ones as full two-half registers), timed with CUDA events over about half a second after
// a warm-up. Prints one line per unit: TFLOPS (2 flops per FMA, 4 per paired 16-bit FMA).
// Build: nvcc -O3 -arch=sm_90 -o peak_independent scripts/dev/peak_independent.cu
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdio>
#include <cstdlib>

#define CK(x)                                                                 \
  do {                                                                        \
    cudaError_t e_ = (x);                                                     \
    if (e_ != cudaSuccess) {                                                  \
      std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));           \
      std::exit(1);                                                           \
    }                                                                         \
  } while (0)

constexpr int kChains = 8;

template <class T>
__global__ void chains(int iters, T a, T b, float* sink) {
  T r[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c) r[c] = b;
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int c = 0; c < kChains; ++c) r[c] = r[c] * a + b;
  }
  float s = 0;
#pragma unroll
  for (int c = 0; c < kChains; ++c) s += float(r[c]);
  if (s == -7.0f) sink[threadIdx.x] = s;
}

__global__ void chains_h2(int iters, __half2 a, __half2 b, float* sink) {
  __half2 r[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c) r[c] = __hadd2(b, __float2half2_rn(0.001f * (threadIdx.x % 5 + c)));
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int c = 0; c < kChains; ++c) r[c] = __hfma2(r[c], a, b);
  }
  float s = 0;
#pragma unroll
  for (int c = 0; c < kChains; ++c) s += __low2float(r[c]) + __high2float(r[c]);
  if (s == -7.0f) sink[threadIdx.x] = s;
}

__global__ void chains_b2(int iters, __nv_bfloat162 a, __nv_bfloat162 b, float* sink) {
#if __CUDA_ARCH__ >= 800
  __nv_bfloat162 r[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c) r[c] = __hadd2(b, __float2bfloat162_rn(0.001f * (threadIdx.x % 5 + c)));
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int c = 0; c < kChains; ++c) r[c] = __hfma2(r[c], a, b);
  }
  float s = 0;
#pragma unroll
  for (int c = 0; c < kChains; ++c) s += __low2float(r[c]) + __high2float(r[c]);
  if (s == -7.0f) sink[threadIdx.x] = s;
#endif
}

template <class Launch>
double tflops(const char* name, int sms, double flops_per_thread_iter, Launch launch) {
  const int blocks = 8 * sms, threads = 256;
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  int iters = 1 << 12;
  launch(blocks, threads, iters);  // warm-up
  CK(cudaDeviceSynchronize());
  float ms = 0;
  // Grow the loop until one launch lasts at least 100 ms, then time 5 launches.
  while (true) {
    CK(cudaEventRecord(e0));
    launch(blocks, threads, iters);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    CK(cudaEventElapsedTime(&ms, e0, e1));
    if (ms >= 100 || iters >= (1 << 26)) break;
    iters *= 2;
  }
  CK(cudaEventRecord(e0));
  for (int k = 0; k < 5; ++k) launch(blocks, threads, iters);
  CK(cudaEventRecord(e1));
  CK(cudaEventSynchronize(e1));
  CK(cudaEventElapsedTime(&ms, e0, e1));
  CK(cudaGetLastError());
  const double flops = 5.0 * double(blocks) * threads * iters * flops_per_thread_iter;
  const double tf = flops / (ms * 1e-3) / 1e12;
  std::printf("%-6s %8.1f TFLOPS  (%d blocks x %d threads, %d iterations x %d chains, %.1f ms)\n", name, tf, blocks,
              threads, iters, kChains, ms / 5);
  return tf;
}

int main() {
  int dev = 0, sms = 0, cc_major = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CK(cudaDeviceGetAttribute(&cc_major, cudaDevAttrComputeCapabilityMajor, dev));
  float* sink = nullptr;
  CK(cudaMalloc(&sink, 1024 * sizeof(float)));
  tflops("ffma", sms, 2.0 * kChains, [&](int b, int t, int it) { chains<float><<<b, t>>>(it, 0.999f, 0.001f, sink); });
  const __half2 ha = __floats2half2_rn(0.999f, 0.998f), hb = __floats2half2_rn(0.001f, 0.002f);
  tflops("hfma2", sms, 4.0 * kChains, [&](int b, int t, int it) { chains_h2<<<b, t>>>(it, ha, hb, sink); });
  if (cc_major >= 8) {
    const __nv_bfloat162 ba = __floats2bfloat162_rn(0.999f, 0.998f), bb = __floats2bfloat162_rn(0.001f, 0.002f);
    tflops("bf16x2", sms, 4.0 * kChains, [&](int b, int t, int it) { chains_b2<<<b, t>>>(it, ba, bb, sink); });
  }
  tflops("dfma", sms, 2.0 * kChains, [&](int b, int t, int it) { chains<double><<<b, t>>>(it, 0.999, 0.001, sink); });
  CK(cudaFree(sink));
  return 0;
}
