// Tensor-core instruction shapes and the wgmma shared-memory matrix descriptor, as plain C++
// (constexpr, host and device) so the unit tests check them without a GPU.
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define NB_HOST_DEVICE __host__ __device__
#else
#define NB_HOST_DEVICE
#endif

namespace nb::kernels {

// One MMA instruction's M x N x K; it does M*N*K multiply-adds, counted as 2*M*N*K operations
// (the dense rate: no structured sparsity).
struct MmaShape {
  int m = 0, n = 0, k = 0;
};
NB_HOST_DEVICE constexpr double mma_ops(MmaShape s) { return 2.0 * s.m * s.n * s.k; }

// wgmma (PTX ISA, "Matrix Descriptor Format"): a 64-bit word naming a matrix in shared memory.
//   bits  0-13  start address >> 4 (of the shared-window address: 18 bits, 16-byte aligned)
//   bits 16-29  leading dimension byte offset >> 4
//   bits 32-45  stride dimension byte offset >> 4
//   bits 49-51  matrix base offset (swizzled layouts only)
//   bits 62-63  swizzle mode: 0 none (interleave), 1 128-byte, 2 64-byte, 3 32-byte
// With no swizzle and K-major operands, the matrix is made of "core matrices" of 8 rows x 16
// bytes stored contiguously (128 bytes); the leading offset steps between core matrices along K,
// the stride offset between core matrices along M (or N).
NB_HOST_DEVICE constexpr uint64_t wgmma_desc_field(uint32_t bytes) { return (bytes & 0x3FFFFu) >> 4; }
NB_HOST_DEVICE constexpr uint64_t wgmma_smem_desc(uint32_t smem_addr, uint32_t leading_bytes, uint32_t stride_bytes,
                                                  unsigned swizzle = 0, unsigned base_offset = 0) {
  return wgmma_desc_field(smem_addr) | (wgmma_desc_field(leading_bytes) << 16) |
         (wgmma_desc_field(stride_bytes) << 32) | (uint64_t(base_offset & 7u) << 49) |
         (uint64_t(swizzle & 3u) << 62);
}

// The operand tiles the wgmma peak kernels keep resident in shared memory: A is 64 rows x 32
// bytes (k16 of FP16/BF16, k8 of TF32, k32 of INT8/FP8), B is 256 rows x 32 bytes; both K-major
// without swizzle, core matrices 128 bytes apart along K and 256 bytes apart along M/N, so each
// tile is exactly its rows x 32 bytes (and stays inside it whichever of the two offsets the
// hardware steps along K).
constexpr uint32_t kWgmmaCoreK = 128, kWgmmaCoreMN = 256;
constexpr uint32_t kWgmmaTileABytes = 64 * 32, kWgmmaTileBBytes = 256 * 32;
constexpr uint32_t kWgmmaTileBytes = kWgmmaTileABytes + kWgmmaTileBBytes;

}  // namespace nb::kernels
