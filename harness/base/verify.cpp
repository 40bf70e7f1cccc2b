#include "base/verify.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <sstream>

#include "base/error.hpp"

namespace nb {

double half_to_double(uint16_t h) {
  const int sign = (h >> 15) & 1;
  const int exp = (h >> 10) & 0x1f;
  const int man = h & 0x3ff;
  double v;
  if (exp == 0) v = std::ldexp(double(man), -24);                       // subnormal
  else if (exp == 31) v = man ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  else v = std::ldexp(double(man | 0x400), exp - 25);
  return sign ? -v : v;
}

double bf16_to_double(uint16_t b) {
  const uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return double(f);
}

double fp8_e4m3_to_double(uint8_t x) {
  const int sign = (x >> 7) & 1;
  const int exp = (x >> 3) & 0xf;
  const int man = x & 0x7;
  double v;
  if (exp == 15 && man == 7) return std::numeric_limits<double>::quiet_NaN();
  if (exp == 0) v = std::ldexp(double(man), -9);  // subnormal: man * 2^-3 * 2^(1-7)
  else v = std::ldexp(double(man | 0x8), exp - 10);
  return sign ? -v : v;
}

GemmTolerance gemm_tolerance(const std::string& p) {
  const double u64 = std::ldexp(1.0, -53), u32 = std::ldexp(1.0, -24), u16 = std::ldexp(1.0, -11),
               ubf = std::ldexp(1.0, -8);
  if (p == "fp64") return {0, u64, u64, false};
  if (p == "fp32") return {0, u32, u32, false};
  if (p == "tf32") return {std::ldexp(1.0, -10), u32, u32, false};  // 10 mantissa bits; truncation allowed
  if (p == "fp16") return {0, u32, u16, false};
  if (p == "fp16acc16") return {0, u16, u16, false};
  if (p == "bf16") return {0, u32, ubf, false};
  if (p == "fp8") return {0, std::ldexp(1.0, -14), ubf, false};  // FP8 tensor-core accumulation is narrower than FP32
  if (p == "int8") return {0, 0, 0, true};
  // Convolution: cuDNN may pick transform algorithms (Winograd, FFT) whose rounding grows with
  // the transform, about two decimal digits beyond a direct sum; the input term allows it.
  if (p == "conv_fp32") return {std::ldexp(1.0, -16), u32, u32, false};
  if (p == "conv_tf32") return {std::ldexp(1.0, -9), u32, u32, false};
  if (p == "conv_fp16") return {std::ldexp(1.0, -8), u32, u16, false};
  throw Error("no tolerance for precision '" + p + "'");
}

DotCheck check_dot(const std::vector<double>& a, const std::vector<double>& b, double got, const GemmTolerance& t) {
  if (a.size() != b.size()) throw Error("check_dot: operand lengths differ");
  DotCheck c;
  double ss = 0;
  for (size_t k = 0; k < a.size(); ++k) {
    c.ref += a[k] * b[k];
    ss += (a[k] * b[k]) * (a[k] * b[k]);
  }
  const double s = std::sqrt(ss);
  c.got = got;
  c.error = std::fabs(got - c.ref);
  if (t.exact) {
    c.bound = 0;
    c.ok = got == c.ref;
    c.ratio = c.ok ? 0 : std::numeric_limits<double>::infinity();
    return c;
  }
  c.bound = t.u_out * std::fabs(c.ref) + 8 * t.u_in * s + 8 * t.u_acc * std::sqrt(double(a.size())) * s +
            std::numeric_limits<double>::min();
  c.ratio = c.error / c.bound;
  c.ok = std::isfinite(got) && c.error <= c.bound;
  if (!c.ok && !std::isfinite(c.ratio)) c.ratio = std::numeric_limits<double>::infinity();
  return c;
}

std::vector<std::pair<int64_t, int64_t>> sample_positions(int64_t m, int64_t n, size_t count, uint64_t seed) {
  std::set<std::pair<int64_t, int64_t>> s;
  s.insert({0, 0});
  s.insert({m - 1, n - 1});
  s.insert({0, n - 1});
  s.insert({m - 1, 0});
  const size_t want = std::min<size_t>(count, size_t(m) * size_t(n));
  std::mt19937_64 g(seed);
  while (s.size() < want) s.insert({int64_t(g() % uint64_t(m)), int64_t(g() % uint64_t(n))});
  return {s.begin(), s.end()};
}

std::string compare_sampled_words(int64_t words, uint64_t seed, const std::function<uint32_t(int64_t)>& expected,
                                  const std::function<uint32_t(int64_t)>& actual, const std::string& wrong_what) {
  const auto pos = sample_positions(words, 1, 64, seed);
  size_t bad = 0;
  std::ostringstream first;
  for (const auto& [i, j] : pos) {
    (void)j;
    const uint32_t want = expected(i);
    const uint32_t got = actual(i);
    if (got != want) {
      if (!bad) first << "word " << i << " = " << got << ", expected " << want;
      ++bad;
    }
  }
  if (!bad) return "";
  std::ostringstream os;
  os << bad << " of " << pos.size() << " sampled words " << wrong_what << "; first: " << first.str();
  return os.str();
}

}  // namespace nb
