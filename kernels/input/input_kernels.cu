#include "input_kernels.cuh"

#include <cuda_fp16.h>

namespace nb::kernels {
namespace {

constexpr int kOut = 224;
__constant__ float kScale[3] = {1.0f / (255.0f * 0.229f), 1.0f / (255.0f * 0.224f), 1.0f / (255.0f * 0.225f)};
__constant__ float kShift[3] = {-0.485f / 0.229f, -0.456f / 0.224f, -0.406f / 0.225f};

// PIL's taps for output `o` of an axis of `in` inputs: [lo, hi) and the weights' sum.
struct Taps {
  int lo, hi;
  float center, fs, inv_sum;
};

__device__ float triangle(float x) {
  x = fabsf(x);
  return x < 1.0f ? 1.0f - x : 0.0f;
}

__device__ Taps taps(int in, int o) {
  Taps t;
  const float scale = float(in) / float(kOut);
  t.fs = fmaxf(scale, 1.0f);
  t.center = (float(o) + 0.5f) * scale;
  t.lo = max(int(t.center - t.fs + 0.5f), 0);  // int(): truncation, as PIL
  t.hi = min(int(t.center + t.fs + 0.5f), in);
  float sum = 0;
  for (int k = t.lo; k < t.hi; ++k) sum += triangle((float(k) - t.center + 0.5f) / t.fs);
  t.inv_sum = sum > 0 ? 1.0f / sum : 0.0f;
  return t;
}

template <bool kNhwc, bool kHalf>
__global__ void resized_crop(const CropJob* jobs, void* out) {
  const int b = blockIdx.y;
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= kOut * kOut) return;
  const int y = p / kOut, x = p % kOut;
  const CropJob j = jobs[b];
  const int xs = j.flip ? kOut - 1 - x : x;
  const Taps tx = taps(j.crop_width, xs), ty = taps(j.crop_height, y);
  float acc[3] = {0, 0, 0};
  for (int r = ty.lo; r < ty.hi; ++r) {
    const float wy = triangle((float(r) - ty.center + 0.5f) / ty.fs) * ty.inv_sum;
    if (wy == 0) continue;
    const uint8_t* row = j.src + size_t(j.top + r) * size_t(j.pitch) + size_t(j.left) * 3;
    float racc[3] = {0, 0, 0};
    for (int c = tx.lo; c < tx.hi; ++c) {
      const float wx = triangle((float(c) - tx.center + 0.5f) / tx.fs) * tx.inv_sum;
      const uint8_t* s = row + c * 3;
      racc[0] += wx * float(s[0]);
      racc[1] += wx * float(s[1]);
      racc[2] += wx * float(s[2]);
    }
    for (int ch = 0; ch < 3; ++ch) acc[ch] += wy * racc[ch];
  }
  const size_t image = size_t(3) * kOut * kOut;
  for (int ch = 0; ch < 3; ++ch) {
    const float v = acc[ch] * kScale[ch] + kShift[ch];
    const size_t at = size_t(b) * image + (kNhwc ? size_t(p) * 3 + ch : size_t(ch) * kOut * kOut + p);
    if (kHalf) static_cast<__half*>(out)[at] = __float2half_rn(v);
    else static_cast<float*>(out)[at] = v;
  }
}

}  // namespace

void launch_resized_crop(cudaStream_t s, const CropJob* jobs, int batch, void* out, bool nhwc, bool fp16) {
  const dim3 block(256), grid((kOut * kOut + 255) / 256, unsigned(batch));
  if (nhwc && fp16) resized_crop<true, true><<<grid, block, 0, s>>>(jobs, out);
  else if (nhwc) resized_crop<true, false><<<grid, block, 0, s>>>(jobs, out);
  else if (fp16) resized_crop<false, true><<<grid, block, 0, s>>>(jobs, out);
  else resized_crop<false, false><<<grid, block, 0, s>>>(jobs, out);
}

}  // namespace nb::kernels
