// The training augmentation of ImageNet data loaders, as torchvision's RandomResizedCrop(224) +
// RandomHorizontalFlip + ToTensor + Normalize(ImageNet mean/std) compute it on a PIL image:
//   - the crop: torchvision's RandomResizedCrop.get_params, scale (0.08, 1), ratio (3/4, 4/3),
//     10 attempts then the central crop;
//   - the resize of the crop to 224x224: PIL's bilinear resampling (a triangle filter whose
//     support grows with the downscale factor, so downscaling is antialiased, as PIL and
//     torchvision's antialias=True do), separable;
//   - the flip, then (x / 255 - mean) / std per channel, written as NCHW or NHWC, FP32 or FP16.
// The host version here; kernels/input/ has the GPU one (same coefficients, computed per pixel).
#pragma once
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "jpeg_codec.hpp"

namespace nb::input {

constexpr int kOut = 224;
constexpr float kMean[3] = {0.485f, 0.456f, 0.406f};
constexpr float kStd[3] = {0.229f, 0.224f, 0.225f};

struct Crop {
  int top = 0, left = 0, height = 0, width = 0;
  bool flip = false;
};

// torchvision's get_params from its random draws, so that a test can feed the draws: `area_u` and
// `ratio_u` hold the 10 attempts' uniform(0,1) draws (scale and log-ratio are interpolated from
// them), `pos_u` the uniform(0,1) draws placing the crop (row, column).
Crop crop_from_draws(int width, int height, const double area_u[10], const double ratio_u[10], double pos_row_u,
                     double pos_col_u);

// Random crops and flips, deterministic by seed.
class CropSampler {
 public:
  explicit CropSampler(uint64_t seed) : rng_(seed) {}
  Crop next(int width, int height);

 private:
  std::mt19937_64 rng_;
};

enum class Layout { nchw, nhwc };
enum class DType { fp32, fp16 };
Layout parse_layout(const std::string& s);  // throws nb::Error
DType parse_dtype(const std::string& s);
size_t element_bytes(DType t);
size_t image_elements();  // 3 x 224 x 224

// PIL's resampling coefficients for one axis: output i reads `count[i]` inputs from `first[i]`
// with weights `weight[i * taps ...]` (summing to 1).
struct Coefficients {
  int taps = 0;
  std::vector<int> first, count;
  std::vector<float> weight;
};
Coefficients resample_coefficients(int in_size, int out_size);

// The 16-bit float bits of `f` (round to nearest even; overflow to infinity).
uint16_t float_to_half(float f);
float half_to_float(uint16_t h);

// Crop, resize, flip and normalise `img` into `out` (image_elements() values of `dtype` in
// `layout`). `scratch` is reused between calls (one per thread).
class Augmenter {
 public:
  void run(const Rgb& img, const Crop& crop, Layout layout, DType dtype, void* out);

 private:
  std::vector<float> rows_;   // one output row's columns pass: the crop's width x 3, padded
  std::vector<float> plane_;  // one output row: 224 x 3 before the layout
  std::vector<float> norm_;   // ... normalised, in the layout
  Coefficients cx_, cy_;
  int cx_in_ = -1, cy_in_ = -1;
};

// One output value computed directly from the definition (a 2-D sum over both axes' weights in
// double precision): what the family checks sampled outputs of the fast path against.
double reference_value(const Rgb& img, const Crop& crop, int channel, int y, int x);
// The value `out` holds at (channel, y, x) for the layout and type.
double output_value(const void* out, Layout layout, DType dtype, int channel, int y, int x);

}  // namespace nb::input
