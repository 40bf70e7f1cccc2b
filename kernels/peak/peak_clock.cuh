// The SM clock inside a peak kernel: each block records its run's clock64 cycles and
// %globaltimer nanoseconds, so the host can compute the clock the unit really ran at. Shared by
// the peak kernel translation units (CUDA only; included by .cu files).
#pragma once

namespace nb::kernels {

__device__ __forceinline__ unsigned long long peak_gtimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

struct BlockClock {
  unsigned long long c0 = 0, t0 = 0;
  __device__ void start() {
    if (threadIdx.x == 0) {
      t0 = peak_gtimer();
      c0 = clock64();
    }
  }
  // clocks: per block, cycles then nanoseconds.
  __device__ void stop(unsigned long long* clocks) {
    __syncthreads();
    if (threadIdx.x == 0) {
      const unsigned long long c1 = clock64(), t1 = peak_gtimer();
      clocks[2 * blockIdx.x] = c1 - c0;
      clocks[2 * blockIdx.x + 1] = t1 - t0;
    }
  }
};

}  // namespace nb::kernels
