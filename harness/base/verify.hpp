// Verification helpers: decoding low-precision numbers on the host, and the error bound a GEMM
// output entry must meet against a float64 reference.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace nb {

double half_to_double(uint16_t bits);      // IEEE binary16
double bf16_to_double(uint16_t bits);      // bfloat16
double fp8_e4m3_to_double(uint8_t bits);   // OCP FP8 E4M3 (no infinities; 0x7F/0xFF are NaN)

// Unit roundoffs of a GEMM precision: inputs as the arithmetic sees them (TF32 rounds FP32
// inputs), the accumulator, and the stored output. `exact`: integer arithmetic, no error.
struct GemmTolerance {
  double u_in = 0, u_acc = 0, u_out = 0;
  bool exact = false;
};
GemmTolerance gemm_tolerance(const std::string& precision);  // throws nb::Error if unknown

struct DotCheck {
  double ref = 0, got = 0, error = 0, bound = 0;
  double ratio = 0;  // error / bound (0 for exact matches); above 1 fails
  bool ok = false;
};

// Checks one output entry: `got` against the float64 dot product of a and b.
// bound = u_out |ref| + 8 u_in s + 8 u_acc sqrt(K) s, with s = sqrt(sum (a_k b_k)^2): the
// rounding of the output, of the inputs, and of a K-term accumulation whose errors add like a
// random walk (with a margin of about 10 over the expected size). NaN never passes.
DotCheck check_dot(const std::vector<double>& a, const std::vector<double>& b, double got, const GemmTolerance& t);

// `count` distinct (row, col) positions in an m x n output, always including the corners,
// drawn from a fixed seed.
std::vector<std::pair<int64_t, int64_t>> sample_positions(int64_t m, int64_t n, size_t count, uint64_t seed);

// 64 sampled 32-bit words of a buffer of `words` (sample_positions, `seed`): `actual(i)` against
// `expected(i)`. "" when all are equal, else "<bad> of 64 sampled words <wrong_what>; first: word i =
// <actual>, expected <expected>".
std::string compare_sampled_words(int64_t words, uint64_t seed, const std::function<uint32_t(int64_t)>& expected,
                                  const std::function<uint32_t(int64_t)>& actual, const std::string& wrong_what);

}  // namespace nb
