// Launch functions of the memory family's kernels (plain C++ header, as kernels/common/kernels.cuh).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cuda_runtime_api.h>

namespace nb::kernels {

// ---- Device memory (STREAM-style), 16-byte accesses, grid-stride; n4 = element count / 4 ----
enum class StreamOp : int { copy, scale, add, triad, read };
// copy: b = a; scale: b = s a; add: c = a + b; triad: a = b + s c; read: partial[block] = sum a.
// `partial` must hold `blocks` floats (read only). Grid: blocks x threads.
void launch_stream(cudaStream_t s, StreamOp op, float* a, float* b, float* c, float scalar, size_t n4,
                   float* partial, unsigned blocks, unsigned threads);
// a[i] = (i % 1024) * 0.25 - 128 (exact in float), the pattern verification expects.
void launch_pattern(cudaStream_t s, float* a, size_t n);

}  // namespace nb::kernels
