// Tensor-core peak kernels for Hopper: warpgroup MMA (wgmma.mma_async), the instruction through
// which compute capability 9.0 reaches its dense tensor rate (warp-level mma.sync reaches about
// half to two thirds of it there). wgmma exists only in the arch-specific target sm_90a, so this
// file is compiled for sm_90a alone (NB_PEAK_WGMMA_SM90A, kernels/CMakeLists.txt) when the build
// lists architecture 90; otherwise only the host functions below exist, and say so.
//
// Each block is one warpgroup. It copies an A tile (64 x 32 bytes) and a B tile (256 x 32 bytes)
// into shared memory once, then issues kWgmmaPerIter wgmma m64n256 per iteration into one
// accumulator of 128 registers per thread: chained wgmma of one shape on the same accumulator
// are ordered by the hardware (PTX ISA, wgmma.fence), so no wait is needed between them, and the
// tensor cores, not memory, set the pace (the operands stay in shared memory). Several blocks
// run on each SM (as many as fit).
#include "kernels/peak/peak_clock.cuh"
#include "kernels/peak/peak_kernels.cuh"

namespace nb::kernels {

// Per unit: the K of its m64n256 shape, the instruction's type suffix, and the immediate operands
// that type takes after scale-d (scale-a, scale-b; for f16/bf16 also trans-a, trans-b: K-major).
#define NB_WGMMA_UNITS(X)                          \
  X(mma_fp16, 16, "f32.f16.f16", ", 1, 1, 0, 0")   \
  X(mma_bf16, 16, "f32.bf16.bf16", ", 1, 1, 0, 0") \
  X(mma_tf32, 8, "f32.tf32.tf32", ", 1, 1")        \
  X(mma_int8, 32, "s32.s8.s8", "")                 \
  X(mma_fp8, 32, "f32.e4m3.e4m3", ", 1, 1")
#define NB_WGMMA_OPCODE(kk, types) "wgmma.mma_async.sync.aligned.m64n256k" #kk "." types

#if defined(NB_PEAK_WGMMA_SM90A)
namespace {

using Acc = uint32_t[kWgmmaAccRegs];

// The accumulator operands of one wgmma m64n256: "{%0, ..., %127}" and 128 "+r" bindings. The
// registers hold f32 (or s32 for INT8) bits; the kernel never does arithmetic on them.
#define NB_ACC_TEXT                                                                              \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                      \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "             \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "             \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "             \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "             \
  "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "             \
  "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
  "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"
#define NB_R4(i) "+r"(d[i]), "+r"(d[i + 1]), "+r"(d[i + 2]), "+r"(d[i + 3])
#define NB_R16(i) NB_R4(i), NB_R4(i + 4), NB_R4(i + 8), NB_R4(i + 12)
#define NB_R64(i) NB_R16(i), NB_R16(i + 16), NB_R16(i + 32), NB_R16(i + 48)

// One wgmma with A and B from shared memory (descriptors %128, %129), scale-d = 1 (accumulate).
template <PeakUnit U>
__device__ __forceinline__ void wgmma_ss(Acc& d, uint64_t da, uint64_t db);
#define NB_WGMMA_SS(unit, kk, types, tail)                                                        \
  template <>                                                                                    \
  __device__ __forceinline__ void wgmma_ss<PeakUnit::unit>(Acc & d, uint64_t da, uint64_t db) { \
    static_assert(wgmma_peak_shape(PeakUnit::unit).k == kk, "shape table and instruction differ"); \
    asm volatile(NB_WGMMA_OPCODE(kk, types) " " NB_ACC_TEXT ", %128, %129, 1" tail ";\n"         \
                 : NB_R64(0), NB_R64(64)                                                         \
                 : "l"(da), "l"(db));                                                            \
  }
NB_WGMMA_UNITS(NB_WGMMA_SS)
#undef NB_WGMMA_SS

template <PeakUnit U>
__device__ __forceinline__ void wgmma_peak(int iters, const uint4* tiles, uint32_t* acc_out,
                                           unsigned long long* clocks) {
  __shared__ __align__(128) uint4 smem[kWgmmaTileBytes / 16];
  for (unsigned i = threadIdx.x; i < kWgmmaTileBytes / 16; i += blockDim.x) smem[i] = tiles[i];
  // Stores through the generic proxy become visible to wgmma (the async proxy) only after this.
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();
  BlockClock bc;
  bc.start();
  const uint32_t base = uint32_t(__cvta_generic_to_shared(smem));
  const uint64_t da = wgmma_smem_desc(base, kWgmmaCoreK, kWgmmaCoreMN);
  const uint64_t db = wgmma_smem_desc(base + kWgmmaTileABytes, kWgmmaCoreK, kWgmmaCoreMN);
  Acc d;
#pragma unroll
  for (int r = 0; r < kWgmmaAccRegs; ++r) d[r] = 0;
  for (int i = 0; i < iters; ++i) {
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int u = 0; u < kWgmmaPerIter; ++u) wgmma_ss<U>(d, da, db);
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    // At most this iteration's group in flight behind the previous one's: the queue stays full.
    asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
#pragma unroll
  for (int r = 0; r < kWgmmaAccRegs; ++r) asm volatile("" : "+r"(d[r])::"memory");  // read after the wait
  if (blockIdx.x == 0) {
#pragma unroll
    for (int r = 0; r < kWgmmaAccRegs; ++r) acc_out[r * kWgmmaThreads + threadIdx.x] = d[r];
  }
  bc.stop(clocks);
}

// One named kernel per unit, so the machine-code check (scripts/dev/checks/check_peak_sass.py) finds
// each by name.
#define NB_WGMMA_KERNEL(name, unit)                                                                            \
  __global__ void __launch_bounds__(kWgmmaThreads) name(int iters, const uint4* tiles, uint32_t* acc_out,      \
                                                        unsigned long long* clocks) {                          \
    wgmma_peak<PeakUnit::unit>(iters, tiles, acc_out, clocks);                                                 \
  }
NB_WGMMA_KERNEL(wgmma_fp16_kernel, mma_fp16)
NB_WGMMA_KERNEL(wgmma_bf16_kernel, mma_bf16)
NB_WGMMA_KERNEL(wgmma_tf32_kernel, mma_tf32)
NB_WGMMA_KERNEL(wgmma_int8_kernel, mma_int8)
NB_WGMMA_KERNEL(wgmma_fp8_kernel, mma_fp8)
#undef NB_WGMMA_KERNEL

using Kernel = void (*)(int, const uint4*, uint32_t*, unsigned long long*);
Kernel kernel_for(PeakUnit u) {
  switch (u) {
    case PeakUnit::mma_fp16: return wgmma_fp16_kernel;
    case PeakUnit::mma_bf16: return wgmma_bf16_kernel;
    case PeakUnit::mma_tf32: return wgmma_tf32_kernel;
    case PeakUnit::mma_int8: return wgmma_int8_kernel;
    case PeakUnit::mma_fp8: return wgmma_fp8_kernel;
    default: return nullptr;
  }
}

}  // namespace

const char* wgmma_peak_unbuilt_reason() { return nullptr; }

bool wgmma_peak_runnable(PeakUnit u) {
  const Kernel k = kernel_for(u);
  if (!k) return false;
  cudaFuncAttributes a{};
  const bool ok = cudaFuncGetAttributes(&a, k) == cudaSuccess;
  if (!ok) (void)cudaGetLastError();  // no image for this device: not an error of the caller's next call
  return ok;
}

cudaError_t wgmma_peak_blocks_per_sm(PeakUnit u, int* blocks) {
  const Kernel k = kernel_for(u);
  if (!k) return cudaErrorInvalidValue;
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, k, int(kWgmmaThreads), 0);
}

cudaError_t launch_peak_wgmma(cudaStream_t s, PeakUnit u, int iters, const void* tiles, uint32_t* acc_out,
                              unsigned long long* clocks, unsigned blocks) {
  const Kernel k = kernel_for(u);
  if (!k) return cudaErrorInvalidValue;
  k<<<blocks, kWgmmaThreads, 0, s>>>(iters, static_cast<const uint4*>(tiles), acc_out, clocks);
  return cudaGetLastError();
}

#else  // not built for sm_90a: the functions exist and report it

const char* wgmma_peak_unbuilt_reason() {
  return "not built for sm_90a (CMAKE_CUDA_ARCHITECTURES lists no 90, so the wgmma kernels were not compiled)";
}
bool wgmma_peak_runnable(PeakUnit) { return false; }
cudaError_t wgmma_peak_blocks_per_sm(PeakUnit, int*) { return cudaErrorInvalidDeviceFunction; }
cudaError_t launch_peak_wgmma(cudaStream_t, PeakUnit, int, const void*, uint32_t*, unsigned long long*, unsigned) {
  return cudaErrorInvalidDeviceFunction;
}

#endif

const char* wgmma_peak_instruction(PeakUnit u) {
#define NB_WGMMA_NAME(unit, kk, types, tail) \
  case PeakUnit::unit: return NB_WGMMA_OPCODE(kk, types);
  switch (u) {
    NB_WGMMA_UNITS(NB_WGMMA_NAME)
    default: return nullptr;
  }
#undef NB_WGMMA_NAME
}

}  // namespace nb::kernels
