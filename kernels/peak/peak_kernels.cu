// Kernels that keep one arithmetic unit busy: kPeakChains independent dependency chains per
// thread (enough to hide the unit's latency), operands the compiler cannot fold, and a guarded
// store so nothing is optimised away. Tensor-core kernels keep fragments in registers and
// issue back-to-back warp-level mma.sync (WMMA; PTX for FP8) on independent accumulators; on
// Hopper the tensor peak cases use warpgroup MMA instead (peak_wgmma_sm90a.cu).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <type_traits>

#include "kernels/peak/peak_clock.cuh"
#include "kernels/peak/peak_kernels.cuh"

namespace nb::kernels {
namespace {

constexpr int C = kPeakChains;
// The loop's own instructions (counter, compare, branch: three) take issue slots from the unit
// under test: unrolled 4 times (the compiler's choice), 8 chains gave 32 FFMA per 35 issued, a
// ceiling of 91%. Unrolled 16 times the ceiling is 128/131 = 97.7%.
constexpr int kLoopUnroll = 16;

__global__ void ffma_kernel(int iters, float* out, unsigned long long* clocks, float a, float b) {
  BlockClock bc;
  bc.start();
  float r[C];
#pragma unroll
  for (int c = 0; c < C; ++c) r[c] = float(threadIdx.x + c);
#pragma unroll kLoopUnroll
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int c = 0; c < C; ++c) r[c] = fmaf(r[c], a, b);
  }
  float s = 0;
#pragma unroll
  for (int c = 0; c < C; ++c) s += r[c];
  if (s == -1.2345f) out[blockIdx.x] = s;
  bc.stop(clocks);
}

// C chains of paired 16-bit FMAs (HFMA2) in the type T2 (__half2 or __nv_bfloat162); `splat`
// makes a T2 with both halves from a float, `pair` one from two floats. The multiplier and addend
// have two different halves: with both halves equal (a broadcast operand) ptxas issues every
// HFMA2 on the FMA pipe only, at half the rate; with distinct halves it splits them between
// HFMA2 and HFMA2.MMA on sm_80/sm_90 (FP16; BF16 on sm_90), which is how the datasheet's
// non-tensor FP16 rate is reached (seen in the SASS: 68 + 68 per 128-FMA loop body on sm_90).
template <class T2, class Splat, class Pair>
__device__ __forceinline__ void fma2_chains(int iters, float* out, float a, float b, Splat splat, Pair pair) {
  const T2 a2 = pair(a, a * 0.999f), b2 = pair(b, b * 0.999f);
  T2 r[C];
#pragma unroll
  for (int c = 0; c < C; ++c) r[c] = splat(float(threadIdx.x % 7 + c) * 0.01f);
#pragma unroll kLoopUnroll
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int c = 0; c < C; ++c) r[c] = __hfma2(r[c], a2, b2);
  }
  float s = 0;
#pragma unroll
  for (int c = 0; c < C; ++c) s += __low2float(r[c]) + __high2float(r[c]);
  if (s == -1.2345f) out[blockIdx.x] = s;
}

__global__ void hfma2_kernel(int iters, float* out, unsigned long long* clocks, float a, float b) {
  BlockClock bc;
  bc.start();
  fma2_chains<__half2>(iters, out, a, b, [](float x) { return __float2half2_rn(x); },
                       [](float x, float y) { return __floats2half2_rn(x, y); });
  bc.stop(clocks);
}

__global__ void bf16fma2_kernel(int iters, float* out, unsigned long long* clocks, float a, float b) {
  BlockClock bc;
  bc.start();
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  fma2_chains<__nv_bfloat162>(iters, out, a, b, [](float x) { return __float2bfloat162_rn(x); },
                              [](float x, float y) { return __floats2bfloat162_rn(x, y); });
#else
  __trap();  // the host never launches this below sm_80
#endif
  bc.stop(clocks);
}

// The operands arrive as double kernel parameters: the compiler reads the multiplier from a
// uniform register (DFMA R, R, UR, R), as it does for the float kernels' constant operands.
// Converted from float inside the kernel they sat in two 64-bit vector registers per DFMA, and
// the H200 reached 30.7 of 33.4 TFLOPS (92%) against 33.3 for a kernel with double parameters.
__global__ void dfma_kernel(int iters, float* out, unsigned long long* clocks, double ad, double bd) {
  BlockClock bc;
  bc.start();
  double r[C];
#pragma unroll
  for (int c = 0; c < C; ++c) r[c] = double(threadIdx.x + c);
#pragma unroll kLoopUnroll
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int c = 0; c < C; ++c) r[c] = fma(r[c], ad, bd);
  }
  double s = 0;
#pragma unroll
  for (int c = 0; c < C; ++c) s += r[c];
  if (s == -1.2345) out[blockIdx.x] = float(s);
  bc.stop(clocks);
}

__global__ void dp4a_kernel(int iters, float* out, unsigned long long* clocks, float a, float b) {
  BlockClock bc;
  bc.start();
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 610
  // The chain feeds the packed bytes back as an operand: with both byte operands loop-invariant
  // the compiler could hoist the dot product and close the loop into one multiply.
  const int y = int(b * 1000.f) | 0x02020202;
  int r[C];
#pragma unroll
  for (int c = 0; c < C; ++c) r[c] = int(threadIdx.x) + c + int(a);
#pragma unroll kLoopUnroll
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int c = 0; c < C; ++c) r[c] = __dp4a(r[c], y, r[c]);
  }
  int s = 0;
#pragma unroll
  for (int c = 0; c < C; ++c) s ^= r[c];
  if (s == 0x7fedcba9) out[blockIdx.x] = float(s);
#else
  __trap();
#endif
  bc.stop(clocks);
}

__global__ void imad_kernel(int iters, float* out, unsigned long long* clocks, float a, float b) {
  BlockClock bc;
  bc.start();
  // Unsigned: wrap-around is defined, so the compiler may not reason from "no overflow".
  const unsigned x = unsigned(a * 1000.f) | 1u, y = unsigned(b * 1000.f);
  unsigned r[C];
#pragma unroll
  for (int c = 0; c < C; ++c) r[c] = threadIdx.x + unsigned(c);
#pragma unroll kLoopUnroll
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int c = 0; c < C; ++c) r[c] = r[c] * x + y;
  }
  unsigned s = 0;
#pragma unroll
  for (int c = 0; c < C; ++c) s ^= r[c];
  if (s == 0x7fedcba9u) out[blockIdx.x] = float(s);
  bc.stop(clocks);
}

// Tensor cores through WMMA. The fragment types exist only for the architectures that have
// them (mma.h hides them from older device passes), so each kernel names them inside its guard.
template <class Tin, class Tfrag, class Tacc, int M, int N, int K>
__device__ __forceinline__ void mma_loop(int iters, float* out, float a, float b) {
  using namespace nvcuda;
  wmma::fragment<wmma::matrix_a, M, N, K, Tfrag, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, M, N, K, Tfrag, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, M, N, K, Tacc> acc[4];
  // A 16x16 accumulator is two m16n8 instructions (HMMA/IMMA). When only x[0] of each was
  // summed, the other half was dead code and the compiler issued one instruction where the count
  // assumed two (FP16 came out at 123% of the tensor cores' peak). Every element is used below,
  // and every element starts different and unknown to the compiler, so no half can be folded.
  const int t = int(threadIdx.x);
  using ElemA = std::remove_reference_t<decltype(fa.x[0])>;
  using ElemB = std::remove_reference_t<decltype(fb.x[0])>;
#pragma unroll
  for (int e = 0; e < fa.num_elements; ++e) fa.x[e] = ElemA(Tin(a + float((t + e) % 5) * b));
#pragma unroll
  for (int e = 0; e < fb.num_elements; ++e) fb.x[e] = ElemB(Tin(b + float((t + 2 * e) % 7) * b));
#pragma unroll
  for (int k = 0; k < 4; ++k)
#pragma unroll
    for (int e = 0; e < acc[k].num_elements; ++e) acc[k].x[e] = Tacc(float(k + 4 * e + t % 3) * b);
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int k = 0; k < 4; ++k) wmma::mma_sync(acc[k], fa, fb, acc[k]);
  }
  float s = 0;
#pragma unroll
  for (int k = 0; k < 4; ++k)
#pragma unroll
    for (int e = 0; e < acc[k].num_elements; ++e) s += float(acc[k].x[e]);  // all used: none is dead code
  if (s == -1.2345f) out[blockIdx.x] = s;
}

__global__ void mma_fp16_kernel(int iters, float* out, unsigned long long* clocks, float a, float b) {
  BlockClock bc;
  bc.start();
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 700
  mma_loop<__half, __half, float, 16, 16, 16>(iters, out, a, b);
#else
  __trap();  // the host never launches this below sm_70
#endif
  bc.stop(clocks);
}

__global__ void mma_int8_kernel(int iters, float* out, unsigned long long* clocks, float a, float b) {
  BlockClock bc;
  bc.start();
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 720
  mma_loop<signed char, signed char, int, 16, 16, 16>(iters, out, a * 100.f, b * 100.f);
#else
  __trap();
#endif
  bc.stop(clocks);
}

__global__ void mma_bf16_kernel(int iters, float* out, unsigned long long* clocks, float a, float b) {
  BlockClock bc;
  bc.start();
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  mma_loop<__nv_bfloat16, __nv_bfloat16, float, 16, 16, 16>(iters, out, a, b);
#else
  __trap();
#endif
  bc.stop(clocks);
}

__global__ void mma_tf32_kernel(int iters, float* out, unsigned long long* clocks, float a, float b) {
  BlockClock bc;
  bc.start();
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  mma_loop<float, nvcuda::wmma::precision::tf32, float, 16, 16, 8>(iters, out, a, b);
#else
  __trap();
#endif
  bc.stop(clocks);
}

// FP8 (E4M3) has no WMMA form: warp-level mma.sync m16n8k32 (sm_89 and newer) on kFp8Accs
// independent accumulators, written in PTX. Operand bytes are E4M3 values from 0.5 to 1.875
// (0x30-0x3F), finite and non-zero, different per lane and unknown to the compiler.
constexpr int kFp8Accs = 8;
__global__ void mma_fp8_kernel(int iters, float* out, unsigned long long* clocks, float a, float b) {
  BlockClock bc;
  bc.start();
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 890
  const unsigned t = threadIdx.x + unsigned(b * 1000.f);
  auto bytes = [](unsigned x) {
    return 0x30303030u | (x & 0xFu) | ((x + 3) & 0xFu) << 8 | ((x + 5) & 0xFu) << 16 | ((x + 9) & 0xFu) << 24;
  };
  uint32_t fa[4], fb[2];
#pragma unroll
  for (int e = 0; e < 4; ++e) fa[e] = bytes(t + unsigned(e));
#pragma unroll
  for (int e = 0; e < 2; ++e) fb[e] = bytes(t * 3 + unsigned(e));
  float acc[kFp8Accs][4];
#pragma unroll
  for (int k = 0; k < kFp8Accs; ++k)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[k][e] = float(k + 4 * e + int(t % 3)) * a;
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int k = 0; k < kFp8Accs; ++k)
      asm volatile(
          "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
          "{%0, %1, %2, %3};\n"
          : "+f"(acc[k][0]), "+f"(acc[k][1]), "+f"(acc[k][2]), "+f"(acc[k][3])
          : "r"(fa[0]), "r"(fa[1]), "r"(fa[2]), "r"(fa[3]), "r"(fb[0]), "r"(fb[1]));
  }
  float s = 0;
#pragma unroll
  for (int k = 0; k < kFp8Accs; ++k)
#pragma unroll
    for (int e = 0; e < 4; ++e) s += acc[k][e];
  if (s == -1.2345f) out[blockIdx.x] = s;
#else
  __trap();
#endif
  bc.stop(clocks);
}

}  // namespace

double peak_ops_per_thread_iter(PeakUnit u) {
  switch (u) {
    case PeakUnit::ffma: return 2.0 * C;
    case PeakUnit::hfma2: return 4.0 * C;
    case PeakUnit::bf16fma2: return 4.0 * C;
    case PeakUnit::dfma: return 2.0 * C;
    case PeakUnit::dp4a: return 8.0 * C;
    case PeakUnit::imad: return 2.0 * C;
    case PeakUnit::mma_fp16:
    case PeakUnit::mma_bf16:
    case PeakUnit::mma_int8: return 4.0 * 2 * 16 * 16 * 16 / 32;  // 4 accumulators, m16n16k16 per warp
    case PeakUnit::mma_tf32: return 4.0 * 2 * 16 * 16 * 8 / 32;   // m16n16k8
    case PeakUnit::mma_fp8: return kFp8Accs * mma_ops({16, 8, 32}) / 32;  // m16n8k32 per warp
  }
  return 0;
}

int peak_min_cc(PeakUnit u) {
  switch (u) {
    case PeakUnit::ffma:
    case PeakUnit::dfma:
    case PeakUnit::imad: return 0;
    case PeakUnit::hfma2: return 53;
    case PeakUnit::dp4a: return 61;
    case PeakUnit::mma_fp16: return 70;
    case PeakUnit::mma_int8: return 72;
    case PeakUnit::bf16fma2:
    case PeakUnit::mma_bf16:
    case PeakUnit::mma_tf32: return 80;
    case PeakUnit::mma_fp8: return 89;
  }
  return 1000;
}

void launch_peak(cudaStream_t s, PeakUnit u, int iters, float* out, unsigned long long* clocks, unsigned blocks,
                 unsigned threads) {
  const float a = 0.999f, b = 0.001f;
  switch (u) {
    case PeakUnit::ffma: ffma_kernel<<<blocks, threads, 0, s>>>(iters, out, clocks, a, b); break;
    case PeakUnit::hfma2: hfma2_kernel<<<blocks, threads, 0, s>>>(iters, out, clocks, a, b); break;
    case PeakUnit::bf16fma2: bf16fma2_kernel<<<blocks, threads, 0, s>>>(iters, out, clocks, a, b); break;
    case PeakUnit::dfma: dfma_kernel<<<blocks, threads, 0, s>>>(iters, out, clocks, double(a), double(b)); break;
    case PeakUnit::dp4a: dp4a_kernel<<<blocks, threads, 0, s>>>(iters, out, clocks, a, b); break;
    case PeakUnit::imad: imad_kernel<<<blocks, threads, 0, s>>>(iters, out, clocks, a, b); break;
    case PeakUnit::mma_fp16: mma_fp16_kernel<<<blocks, threads, 0, s>>>(iters, out, clocks, a, b); break;
    case PeakUnit::mma_bf16: mma_bf16_kernel<<<blocks, threads, 0, s>>>(iters, out, clocks, a, b); break;
    case PeakUnit::mma_tf32: mma_tf32_kernel<<<blocks, threads, 0, s>>>(iters, out, clocks, a, b); break;
    case PeakUnit::mma_int8: mma_int8_kernel<<<blocks, threads, 0, s>>>(iters, out, clocks, a, b); break;
    case PeakUnit::mma_fp8: mma_fp8_kernel<<<blocks, threads, 0, s>>>(iters, out, clocks, a, b); break;
  }
}

}  // namespace nb::kernels
