// The input pipeline's augmentation on the GPU: crop, resize to 224x224 (PIL's bilinear
// resampling: a triangle filter whose support grows with the downscale factor), horizontal
// flip and ImageNet normalisation of a batch of decoded RGB images, into the training layout.
// The same arithmetic as the host version (benchmarks/input/augment.hpp), each output pixel
// computed from its own taps. CUDA headers only.
#pragma once
#include <cstdint>

#include <cuda_runtime_api.h>

namespace nb::kernels {

// One image of the batch: interleaved RGB in device memory and its crop.
struct CropJob {
  const uint8_t* src;
  int pitch;          // bytes per row
  int width, height;  // of the decoded image
  int top, left, crop_height, crop_width;
  int flip;           // 1: mirror left-right
};

// `jobs`: `batch` entries in device memory. `out`: batch x 3 x 224 x 224 (NCHW) or
// batch x 224 x 224 x 3 (NHWC), float or half (`fp16`).
void launch_resized_crop(cudaStream_t s, const CropJob* jobs, int batch, void* out, bool nhwc, bool fp16);

}  // namespace nb::kernels
