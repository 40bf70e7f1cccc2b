// The input pipeline on the GPU: batched JPEG decode by nvJPEG (nvjpegDecodeBatched, one host
// thread feeding the GPU) and our crop/resize/flip/normalise kernel (kernels/input/), timed per
// batch by the host clock (images/s) and by CUDA events (the GPU's time, what the decode takes
// from training). nvJPEG is optional: found by CMake under the CUDA toolkit, NVJPEG_ROOT or the
// Python site-packages (the nvidia-nvjpeg wheel) and loaded at run time (dlopen), so that a
// binary built with it still starts where it is missing; without it the case is skipped.
#pragma once
#include <string>

#include "augment.hpp"
#include "bench/benchmark.hpp"

namespace nb::input {

// "default", "gpu_hybrid" (Huffman on the GPU for batches above 50), "hardware" (the JPEG
// engine of A100, H100 and newer).
const std::vector<std::string>& gpu_backends();

// Whether this build knows nvJPEG, and why not.
bool nvjpeg_built();
std::string nvjpeg_missing();

void run_gpu_decode(CaseContext& ctx, const std::string& backend, Layout layout, DType dtype, int batch);

}  // namespace nb::input
