#include "augment.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "base/error.hpp"

namespace nb::input {

namespace {

constexpr double kScaleMin = 0.08, kScaleMax = 1.0;
constexpr double kRatioMin = 3.0 / 4.0, kRatioMax = 4.0 / 3.0;

// Python's round(): halves to even (std::nearbyint in the default rounding mode).
int py_round(double v) { return int(std::nearbyint(v)); }

// PIL's bilinear filter: a triangle of support 1.
double triangle(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

}  // namespace

Crop crop_from_draws(int width, int height, const double area_u[10], const double ratio_u[10], double pos_row_u,
                     double pos_col_u) {
  const double area = double(width) * double(height);
  const double lr0 = std::log(kRatioMin), lr1 = std::log(kRatioMax);
  for (int a = 0; a < 10; ++a) {
    const double target = area * (kScaleMin + (kScaleMax - kScaleMin) * area_u[a]);
    const double aspect = std::exp(lr0 + (lr1 - lr0) * ratio_u[a]);
    const int w = py_round(std::sqrt(target * aspect));
    const int h = py_round(std::sqrt(target / aspect));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      Crop c;
      c.width = w;
      c.height = h;
      // torch.randint(0, n): uniform over 0..n-1.
      c.top = std::min(height - h, int(pos_row_u * double(height - h + 1)));
      c.left = std::min(width - w, int(pos_col_u * double(width - w + 1)));
      return c;
    }
  }
  // The fallback: the central crop at the nearest allowed ratio.
  Crop c;
  const double in_ratio = double(width) / double(height);
  if (in_ratio < kRatioMin) {
    c.width = width;
    c.height = py_round(double(width) / kRatioMin);
  } else if (in_ratio > kRatioMax) {
    c.height = height;
    c.width = py_round(double(height) * kRatioMax);
  } else {
    c.width = width;
    c.height = height;
  }
  c.top = (height - c.height) / 2;
  c.left = (width - c.width) / 2;
  return c;
}

Crop CropSampler::next(int width, int height) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  double area_u[10], ratio_u[10];
  for (int a = 0; a < 10; ++a) {
    area_u[a] = u(rng_);
    ratio_u[a] = u(rng_);
  }
  const double row = u(rng_), col = u(rng_);
  Crop c = crop_from_draws(width, height, area_u, ratio_u, row, col);
  c.flip = u(rng_) < 0.5;
  return c;
}

Layout parse_layout(const std::string& s) {
  if (s == "nchw") return Layout::nchw;
  if (s == "nhwc") return Layout::nhwc;
  throw Error("unknown layout '" + s + "' (nchw, nhwc)");
}
DType parse_dtype(const std::string& s) {
  if (s == "fp32") return DType::fp32;
  if (s == "fp16") return DType::fp16;
  throw Error("unknown input type '" + s + "' (fp32, fp16)");
}
size_t element_bytes(DType t) { return t == DType::fp32 ? 4 : 2; }
size_t image_elements() { return size_t(3) * kOut * kOut; }

Coefficients resample_coefficients(int in_size, int out_size) {
  Coefficients c;
  const double scale = double(in_size) / double(out_size);
  const double filterscale = std::max(scale, 1.0);
  const double support = filterscale;  // the triangle's support (1) times the filter scale
  c.taps = int(std::ceil(support)) * 2 + 1;
  c.first.resize(size_t(out_size));
  c.count.resize(size_t(out_size));
  c.weight.assign(size_t(out_size) * size_t(c.taps), 0.0f);
  for (int i = 0; i < out_size; ++i) {
    const double center = (i + 0.5) * scale;
    // int(): truncation toward zero, as PIL's C code does.
    const int lo = std::max(int(center - support + 0.5), 0);
    const int hi = std::min(int(center + support + 0.5), in_size);
    const int n = std::max(0, std::min(hi - lo, c.taps));
    float* w = c.weight.data() + size_t(i) * size_t(c.taps);
    double sum = 0;
    for (int k = 0; k < n; ++k) sum += triangle((k + lo - center + 0.5) / filterscale);
    for (int k = 0; k < n; ++k) w[k] = float(sum != 0 ? triangle((k + lo - center + 0.5) / filterscale) / sum : 0);
    c.first[size_t(i)] = lo;
    c.count[size_t(i)] = n;
  }
  return c;
}

namespace {
inline uint16_t to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t a = x & 0x7fffffffu;
  if (a >= 0x7f800000u) return uint16_t(sign | (a > 0x7f800000u ? 0x7e00u : 0x7c00u));  // NaN, infinity
  if (a >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // 65520 and above round to infinity
  if (a < 0x38800000u) {                                  // below 2^-14: a subnormal half (or zero)
    if (a < 0x33000000u) return uint16_t(sign);           // at most 2^-25: rounds to zero
    const uint32_t e = a >> 23;
    const uint32_t m = (a & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;
    uint32_t q = m >> shift;
    const uint32_t r = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (r > half || (r == half && (q & 1u))) ++q;
    return uint16_t(sign | q);
  }
  uint32_t q = (((a >> 23) - 112u) << 10) | ((a & 0x7fffffu) >> 13);
  const uint32_t r = a & 0x1fffu;
  if (r > 0x1000u || (r == 0x1000u && (q & 1u))) ++q;  // a carry into the exponent is right
  return uint16_t(sign | q);
}
}  // namespace

uint16_t float_to_half(float f) { return to_half(f); }

float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  float v;
  if (e == 0) v = std::ldexp(float(m), -24);
  else if (e == 31) v = m ? std::nanf("") : INFINITY;
  else v = std::ldexp(float(m | 0x400u), int(e) - 25);
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  bits |= sign;
  std::memcpy(&v, &bits, 4);
  return v;
}

namespace {

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx,f16c"))) void halves_f16c(const float* src, uint16_t* dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; ++i) dst[i] = to_half(src[i]);
}
#endif

// One output row's horizontal pass with a fixed number of taps (the weights are zero-padded, the
// line too), so that the compiler unrolls the tap loop.
template <int K>
void row_pass(const float* line, const Coefficients& cx, float* out) {
  for (int x = 0; x < kOut; ++x) {
    const float* w = cx.weight.data() + size_t(x) * K;
    const float* s = line + size_t(cx.first[size_t(x)]) * 3;
    float a0 = 0, a1 = 0, a2 = 0;
    for (int k = 0; k < K; ++k) {
      a0 += w[k] * s[3 * k];
      a1 += w[k] * s[3 * k + 1];
      a2 += w[k] * s[3 * k + 2];
    }
    out[3 * x] = a0, out[3 * x + 1] = a1, out[3 * x + 2] = a2;
  }
}

void row_pass_any(const float* line, const Coefficients& cx, float* out) {
  switch (cx.taps) {
    case 3: return row_pass<3>(line, cx, out);
    case 5: return row_pass<5>(line, cx, out);
    case 7: return row_pass<7>(line, cx, out);
    case 9: return row_pass<9>(line, cx, out);
    case 11: return row_pass<11>(line, cx, out);
    default:
      for (int x = 0; x < kOut; ++x) {
        const float* w = cx.weight.data() + size_t(x) * size_t(cx.taps);
        const float* s = line + size_t(cx.first[size_t(x)]) * 3;
        float a[3] = {0, 0, 0};
        for (int k = 0; k < cx.taps; ++k)
          for (int c = 0; c < 3; ++c) a[c] += w[k] * s[3 * k + c];
        for (int c = 0; c < 3; ++c) out[3 * x + c] = a[c];
      }
  }
}

void halves(const float* src, uint16_t* dst, size_t n) {
#if defined(__x86_64__) && defined(__GNUC__)
  // F16C's conversion rounds to nearest even as to_half does, 8 at a time.
  static const bool f16c = __builtin_cpu_supports("f16c");
  if (f16c) return halves_f16c(src, dst, n);
#endif
  for (size_t i = 0; i < n; ++i) dst[i] = to_half(src[i]);
}

// Normalises (and flips) one output row of 224 x 3 values and writes it in the layout and type.
void store_row(const float* row, bool flip, const float scale[3], const float shift[3], Layout layout, DType dtype,
               void* out, int y, std::vector<float>& norm) {
  constexpr size_t kRow = size_t(kOut) * 3, plane = size_t(kOut) * kOut;
  norm.resize(kRow);
  float* n = norm.data();
  if (layout == Layout::nchw) {  // planes: n[c * 224 + x]
    for (int x = 0; x < kOut; ++x) {
      const int xs = flip ? kOut - 1 - x : x;
      for (int c = 0; c < 3; ++c) n[size_t(c) * kOut + size_t(x)] = row[xs * 3 + c] * scale[c] + shift[c];
    }
  } else {  // interleaved: n[x * 3 + c]
    for (int x = 0; x < kOut; ++x) {
      const int xs = flip ? kOut - 1 - x : x;
      for (int c = 0; c < 3; ++c) n[size_t(x) * 3 + size_t(c)] = row[xs * 3 + c] * scale[c] + shift[c];
    }
  }
  for (int c = 0; c < (layout == Layout::nchw ? 3 : 1); ++c) {
    const size_t at = layout == Layout::nchw ? size_t(c) * plane + size_t(y) * kOut : size_t(y) * kRow;
    const size_t len = layout == Layout::nchw ? size_t(kOut) : kRow;
    const float* src = n + (layout == Layout::nchw ? size_t(c) * kOut : 0);
    if (dtype == DType::fp32) std::memcpy(static_cast<float*>(out) + at, src, len * 4);
    else halves(src, static_cast<uint16_t*>(out) + at, len);
  }
}

}  // namespace

void Augmenter::run(const Rgb& img, const Crop& crop, Layout layout, DType dtype, void* out) {
  if (crop.width <= 0 || crop.height <= 0 || crop.left < 0 || crop.top < 0 || crop.left + crop.width > img.width ||
      crop.top + crop.height > img.height)
    throw Error("crop outside the image");
  if (cx_in_ != crop.width) cx_ = resample_coefficients(crop.width, kOut), cx_in_ = crop.width;
  if (cy_in_ != crop.height) cy_ = resample_coefficients(crop.height, kOut), cy_in_ = crop.height;
  // Columns first (contiguous: vectorised over the crop's row), then the row, as the separable
  // filter allows; the padded tail lets the fixed-tap row pass read past the crop's edge.
  const size_t n = size_t(crop.width) * 3;
  rows_.assign(n + size_t(cx_.taps) * 3, 0.0f);
  plane_.resize(size_t(kOut) * 3);
  float scale[3], shift[3];
  for (int c = 0; c < 3; ++c) {
    scale[c] = 1.0f / (255.0f * kStd[c]);
    shift[c] = -kMean[c] / kStd[c];
  }
  float* line = rows_.data();
  float* row = plane_.data();
  for (int y = 0; y < kOut; ++y) {
    std::fill(line, line + n, 0.0f);
    const float* w = cy_.weight.data() + size_t(y) * size_t(cy_.taps);
    for (int k = 0; k < cy_.count[size_t(y)]; ++k) {
      const uint8_t* s = img.pixels.data() + (size_t(crop.top + cy_.first[size_t(y)] + k) * size_t(img.width) + size_t(crop.left)) * 3;
      const float wk = w[k];
      for (size_t i = 0; i < n; ++i) line[i] += wk * float(s[i]);
    }
    row_pass_any(line, cx_, row);
    store_row(row, crop.flip, scale, shift, layout, dtype, out, y, norm_);
  }
}

double reference_value(const Rgb& img, const Crop& crop, int channel, int y, int x) {
  const int xs = crop.flip ? kOut - 1 - x : x;
  auto axis = [](int in_size, int o, std::vector<std::pair<int, double>>& taps) {
    const double scale = double(in_size) / kOut, fs = std::max(scale, 1.0);
    const double center = (o + 0.5) * scale;
    double sum = 0;
    for (int i = 0; i < in_size; ++i) {
      const double w = triangle((i + 0.5 - center) / fs);
      if (w > 0) taps.push_back({i, w}), sum += w;
    }
    for (auto& t : taps) t.second /= sum;
  };
  std::vector<std::pair<int, double>> tx, ty;
  axis(crop.width, xs, tx);
  axis(crop.height, y, ty);
  double v = 0;
  for (const auto& [i, wy] : ty)
    for (const auto& [j, wx] : tx) v += wy * wx * double(img.at(crop.left + j, crop.top + i, channel));
  return (v / 255.0 - double(kMean[channel])) / double(kStd[channel]);
}

double output_value(const void* out, Layout layout, DType dtype, int channel, int y, int x) {
  const size_t at = layout == Layout::nchw ? size_t(channel) * kOut * kOut + size_t(y) * kOut + size_t(x)
                                           : (size_t(y) * kOut + size_t(x)) * 3 + size_t(channel);
  return dtype == DType::fp32 ? double(static_cast<const float*>(out)[at])
                              : double(half_to_float(static_cast<const uint16_t*>(out)[at]));
}

}  // namespace nb::input
