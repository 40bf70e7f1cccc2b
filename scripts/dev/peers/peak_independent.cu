// An independent peak-rate kernel, written apart from kernels/peak/peak_kernels.cu, to check the peak
// family against (issue 14): for FP32 FFMA, FP16 HFMA2, BF16 HFMA2 and FP64 DFMA, 8 independent
// chains per thread, 8 blocks of 256 threads per SM, operands passed as kernel parameters (the
// 16-bit ones as full two-half registers), timed with CUDA events over about half a second after
// a warm-up. Prints one line per unit: TFLOPS (2 flops per FMA, 4 per paired 16-bit FMA).
//
// With --wgmma (issue 25): Hopper's warpgroup MMA for FP16, BF16, TF32, INT8 and FP8 E4M3, written
// apart from kernels/peak/peak_wgmma_sm90a.cu and differently: A from registers (not shared memory),
// N = 128 (not 256) with two independent accumulators per warpgroup, B in shared memory in another
// core-matrix layout (the two K halves 2 KiB apart); checked first with A = 2 and B = 1 (every
// accumulator must be 2 x K x the MMAs it received), then timed on patterned operands for
// --seconds of back-to-back launches of about 5 ms (median launch). Prints "<unit> <rate>
// TFLOPS|TOPS (...)" per unit.
// Build: nvcc -O3 -arch=sm_90 -o peak_independent scripts/dev/peers/peak_independent.cu
//        (--wgmma needs: nvcc -O3 -gencode arch=compute_90a,code=sm_90a ...)
// Usage: peak_independent [--wgmma] [--seconds S] [--units wgmma_fp16,wgmma_int8,...]
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

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

// The paired 16-bit chains (FP16 HFMA2, BF16 FMA2): T is __half2 or __nv_bfloat162, and
// pair_of(v, T{}) the pair (v, v) of that type.
__device__ __half2 pair_of(float v, __half2) { return __float2half2_rn(v); }
__device__ __nv_bfloat162 pair_of(float v, __nv_bfloat162) { return __float2bfloat162_rn(v); }

template <class T>
__device__ void paired_chains(int iters, T a, T b, float* sink) {
  T r[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c) r[c] = __hadd2(b, pair_of(0.001f * (threadIdx.x % 5 + c), T{}));
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int c = 0; c < kChains; ++c) r[c] = __hfma2(r[c], a, b);
  }
  float s = 0;
#pragma unroll
  for (int c = 0; c < kChains; ++c) s += __low2float(r[c]) + __high2float(r[c]);
  if (s == -7.0f) sink[threadIdx.x] = s;
}

__global__ void chains_h2(int iters, __half2 a, __half2 b, float* sink) { paired_chains(iters, a, b, sink); }

__global__ void chains_b2(int iters, __nv_bfloat162 a, __nv_bfloat162 b, float* sink) {
#if __CUDA_ARCH__ >= 800
  paired_chains(iters, a, b, sink);
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

// ---- Warpgroup MMA (sm_90a) ----------------------------------------------------------------
enum WgType { kF16, kBF16, kTF32, kS8, kE4M3 };
constexpr int kWgThreads = 128, kWgMmaPerIter = 4, kWgN = 128;
constexpr int kBBytes = 32768;  // B (128 x 32 bytes) read with either offset along K stays inside

#define WG_ACC64                                                                                 \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "  \
  "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "   \
  "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, "   \
  "%56, %57, %58, %59, %60, %61, %62, %63}"
#define WG_C8(i) "+r"(c[i]), "+r"(c[i + 1]), "+r"(c[i + 2]), "+r"(c[i + 3]), "+r"(c[i + 4]), "+r"(c[i + 5]), \
                 "+r"(c[i + 6]), "+r"(c[i + 7])
#define WG_C64 WG_C8(0), WG_C8(8), WG_C8(16), WG_C8(24), WG_C8(32), WG_C8(40), WG_C8(48), WG_C8(56)
#define WG_RS(shape_types, tail)                                                                  \
  asm volatile("wgmma.mma_async.sync.aligned." shape_types " " WG_ACC64 ", {%64, %65, %66, %67}, %68, " tail \
               ";\n"                                                                              \
               : WG_C64                                                                           \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(bdesc))

// One m64n128 wgmma, A (4 registers a thread) from registers, B by descriptor; accumulate.
template <int T>
__device__ __forceinline__ void wg_mma(uint32_t (&c)[64], const uint32_t (&a)[4], uint64_t bdesc) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  if constexpr (T == kF16) WG_RS("m64n128k16.f32.f16.f16", "1, 1, 1, 0");
  if constexpr (T == kBF16) WG_RS("m64n128k16.f32.bf16.bf16", "1, 1, 1, 0");
  if constexpr (T == kTF32) WG_RS("m64n128k8.f32.tf32.tf32", "1, 1, 1");
  if constexpr (T == kS8) WG_RS("m64n128k32.s32.s8.s8", "1");
  if constexpr (T == kE4M3) WG_RS("m64n128k32.f32.e4m3.e4m3", "1, 1, 1");
#endif
}

// a[e] = a_base ^ (pattern & a_mask): a_mask 0 gives a uniform A (the check).
template <int T>
__global__ void __launch_bounds__(kWgThreads) wg_kernel(int iters, uint32_t a_base, uint32_t a_mask,
                                                        const uint4* b_src, uint32_t* dump) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  __shared__ __align__(1024) uint4 bs[kBBytes / 16];
  for (int i = threadIdx.x; i < kBBytes / 16; i += kWgThreads) bs[i] = b_src[i];
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();
  uint32_t a[4];
  for (int e = 0; e < 4; ++e) a[e] = a_base ^ ((threadIdx.x * 2654435761u + e * 40503u) & a_mask);
  // K-major, no swizzle: the two 16-byte K halves of each 8-row core matrix 2048 bytes apart,
  // consecutive 8-row groups of N 128 bytes apart. Bits: address>>4 at 0, K offset>>4 at 16,
  // N offset>>4 at 32, swizzle 0 at 62.
  const uint32_t sa = uint32_t(__cvta_generic_to_shared(bs));
  const uint64_t bdesc = uint64_t((sa & 0x3FFFF) >> 4) | (uint64_t(2048 >> 4) << 16) | (uint64_t(128 >> 4) << 32);
  uint32_t c0[64], c1[64];
  for (int r = 0; r < 64; ++r) c0[r] = c1[r] = 0;
  for (int i = 0; i < iters; ++i) {
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    wg_mma<T>(c0, a, bdesc);
    wg_mma<T>(c1, a, bdesc);
    wg_mma<T>(c0, a, bdesc);
    wg_mma<T>(c1, a, bdesc);
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  for (int r = 0; r < 64; ++r) asm volatile("" : "+r"(c0[r]), "+r"(c1[r])::"memory");
  if (blockIdx.x == 0)
    for (int r = 0; r < 64; ++r) {
      dump[r * kWgThreads + threadIdx.x] = c0[r];
      dump[(64 + r) * kWgThreads + threadIdx.x] = c1[r];
    }
#endif
}

__global__ void wg_probe(int* built) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  *built = 1;
#endif
}

struct WgUnit {
  const char* name;
  int type, k;
  bool integer;
  uint32_t two, one;         // A = 2 and B = 1, as 32-bit words of the type (the check)
  uint32_t base, mask;       // A while timing: base ^ (pattern & mask), finite and non-zero
  int bytes;                 // element size
  void (*kernel)(int, uint32_t, uint32_t, const uint4*, uint32_t*);
};
const WgUnit kWgUnits[] = {
    {"wgmma_fp16", kF16, 16, false, 0x40004000u, 0x3C003C00u, 0x3C003C00u, 0x03FF03FFu, 2, wg_kernel<kF16>},
    {"wgmma_bf16", kBF16, 16, false, 0x40004000u, 0x3F803F80u, 0x3F803F80u, 0x007F007Fu, 2, wg_kernel<kBF16>},
    {"wgmma_tf32", kTF32, 8, false, 0x40000000u, 0x3F800000u, 0x3F800000u, 0x007FE000u, 4, wg_kernel<kTF32>},
    {"wgmma_int8", kS8, 32, true, 0x02020202u, 0x01010101u, 0x01010101u, 0x06060606u, 1, wg_kernel<kS8>},
    {"wgmma_fp8", kE4M3, 32, false, 0x40404040u, 0x38383838u, 0x38383838u, 0x07070707u, 1, wg_kernel<kE4M3>},
};

// B while timing: per element a fixed exponent near 1 with random sign and mantissa (finite,
// non-zero), or any int8.
std::vector<uint32_t> b_pattern(const WgUnit& u) {
  std::vector<uint32_t> w(kBBytes / 4);
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (auto& v : w) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    const uint32_t r = uint32_t(x >> 16);
    switch (u.type) {
      case kF16: v = 0x38003800u | (r & 0x83FF83FFu); break;
      case kBF16: v = 0x3F003F00u | (r & 0x807F807Fu); break;
      case kTF32: v = 0x3F000000u | (r & 0x807FFFFFu); break;
      case kS8: v = r | 0x01010101u; break;
      default: v = 0x30303030u | (r & 0x87878787u); break;  // E4M3 exponent 6: no NaN code
    }
  }
  return w;
}

// Returns 0 on success, 1 on a failed check.
int wg_run(const WgUnit& u, int sms, double seconds) {
  int per_sm = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, u.kernel, kWgThreads, 0));
  const int blocks = sms * std::max(per_sm, 1);
  uint4* b = nullptr;
  uint32_t* dump = nullptr;
  const size_t dump_words = 128 * kWgThreads;
  CK(cudaMalloc(&b, kBBytes));
  CK(cudaMalloc(&dump, dump_words * 4));
  // Check: A = 2, B = 1; each accumulator receives 2 wgmma per iteration.
  const int check_iters = 6;
  std::vector<uint32_t> ones(kBBytes / 4, u.one), got(dump_words);
  CK(cudaMemcpy(b, ones.data(), kBBytes, cudaMemcpyHostToDevice));
  u.kernel<<<blocks, kWgThreads>>>(check_iters, u.two, 0, b, dump);
  CK(cudaGetLastError());
  CK(cudaMemcpy(got.data(), dump, dump_words * 4, cudaMemcpyDeviceToHost));
  const double want = 2.0 * u.k * 2 * check_iters;
  size_t bad = 0;
  for (uint32_t w : got) {
    float f;
    std::memcpy(&f, &w, 4);
    if ((u.integer ? double(int32_t(w)) : double(f)) != want) ++bad;
  }
  if (bad) std::printf("%-11s CHECK FAILED: %zu of %zu accumulators differ from %.0f\n", u.name, bad, dump_words, want);
  const std::vector<uint32_t> pat = b_pattern(u);
  CK(cudaMemcpy(b, pat.data(), kBBytes, cudaMemcpyHostToDevice));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  // Iterations for about 5 ms a launch.
  int iters = 256;
  float ms = 0;
  for (int round = 0; round < 8; ++round) {
    CK(cudaEventRecord(e0));
    u.kernel<<<blocks, kWgThreads>>>(iters, u.base, u.mask, b, dump);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    CK(cudaEventElapsedTime(&ms, e0, e1));
    if (ms > 4 && ms < 7) break;
    iters = int(std::min(double(1 << 24), std::max(16.0, iters * 5.0 / std::max(ms, 1e-3f))));
  }
  // Back to back for `seconds`, an event after each launch; the median gap is one launch.
  const int n = std::max(20, int(seconds * 1e3 / std::max(ms, 0.1f)));
  std::vector<cudaEvent_t> ev(n + 1);
  for (auto& e : ev) CK(cudaEventCreate(&e));
  CK(cudaEventRecord(ev[0]));
  for (int i = 0; i < n; ++i) {
    u.kernel<<<blocks, kWgThreads>>>(iters, u.base, u.mask, b, dump);
    CK(cudaEventRecord(ev[i + 1]));
  }
  CK(cudaEventSynchronize(ev[n]));
  CK(cudaGetLastError());
  std::vector<float> t(n);
  for (int i = 0; i < n; ++i) CK(cudaEventElapsedTime(&t[i], ev[i], ev[i + 1]));
  float total = 0;
  CK(cudaEventElapsedTime(&total, ev[0], ev[n]));
  std::sort(t.begin(), t.end());
  const double med_s = t[n / 2] * 1e-3;
  const double ops = double(blocks) * iters * kWgMmaPerIter * 2.0 * 64 * kWgN * u.k;
  std::printf("%-11s %8.1f %s  (wgmma m64n%dk%d, A from registers, 2 accumulators; %d blocks x %d threads, %d per SM; "
              "%d iterations; median of %d launches over %.2f s; check %s)\n",
              u.name, ops / med_s / 1e12, u.integer ? "TOPS" : "TFLOPS", kWgN, u.k, blocks, kWgThreads, per_sm, iters, n,
              total * 1e-3, bad ? "FAILED" : "ok");
  for (auto& e : ev) CK(cudaEventDestroy(e));
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  CK(cudaFree(b));
  CK(cudaFree(dump));
  return bad ? 1 : 0;
}

int wg_main(int sms, int cc, double seconds, const std::string& units) {
  int* built = nullptr;
  int h = 0;
  CK(cudaMalloc(&built, sizeof(int)));
  CK(cudaMemset(built, 0, sizeof(int)));
  if (cc == 90) {
    wg_probe<<<1, 1>>>(built);
    CK(cudaGetLastError());
    CK(cudaMemcpy(&h, built, sizeof(int), cudaMemcpyDeviceToHost));
  }
  CK(cudaFree(built));
  if (!h) {
    std::fprintf(stderr, "peak_independent: --wgmma needs compute capability 9.0 (this GPU: %d.%d) and a build for "
                 "sm_90a (nvcc -gencode arch=compute_90a,code=sm_90a)\n", cc / 10, cc % 10);
    return 2;
  }
  int rc = 0, ran = 0;
  for (const WgUnit& u : kWgUnits)
    if (units.empty() || ("," + units + ",").find("," + std::string(u.name) + ",") != std::string::npos) {
      rc |= wg_run(u, sms, seconds);
      ++ran;
    }
  if (!ran) {
    std::fprintf(stderr, "peak_independent: --units names no unit (wgmma_fp16, wgmma_bf16, wgmma_tf32, wgmma_int8, wgmma_fp8)\n");
    return 2;
  }
  return rc;
}

int main(int argc, char** argv) {
  bool wgmma = false;
  double seconds = 1.5;
  std::string units;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--wgmma") {
      wgmma = true;
    } else if (a == "--seconds" && i + 1 < argc) {
      char* end = nullptr;
      seconds = std::strtod(argv[++i], &end);
      if (!end || *end || !(seconds > 0 && seconds <= 600)) {
        std::fprintf(stderr, "peak_independent: --seconds '%s' is not a number of seconds in (0, 600]\n", argv[i]);
        return 2;
      }
    } else if (a == "--units" && i + 1 < argc) {
      units = argv[++i];
    } else {
      std::fprintf(stderr, "peak_independent: unknown argument '%s'\nusage: peak_independent [--wgmma] [--seconds S] "
                   "[--units wgmma_fp16,...]\n", a.c_str());
      return 2;
    }
  }
  int dev = 0, sms = 0, cc_major = 0, cc_minor = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CK(cudaDeviceGetAttribute(&cc_major, cudaDevAttrComputeCapabilityMajor, dev));
  CK(cudaDeviceGetAttribute(&cc_minor, cudaDevAttrComputeCapabilityMinor, dev));
  if (wgmma) return wg_main(sms, cc_major * 10 + cc_minor, seconds, units);
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
