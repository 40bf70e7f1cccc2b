// A float64 host reference of one batch norm in training mode with what the training step fuses
// into it (ReLU; residual add + ReLU), forward and backward, and the tolerances a GPU result is
// judged by (used by tests/test_train_bn_layer_gpu.cpp; checked itself, without a GPU, by
// tests/test_bn_reference.cpp). Plain C++: the definitions written out, nothing shared with the
// kernels under test.
//
// Forward, per channel over its M = n hw elements: mean, biased variance var = sum (x - mean)^2 / M,
// inv_std = 1 / sqrt(var + eps), y = act(gamma (x - mean) inv_std + beta [+ r]); the running
// averages run = (1 - f) run + f batch with the unbiased variance M var / (M - 1) (as cuDNN and
// PyTorch keep them). Backward from dy at y: g = dy where y > 0 (the ReLU's output, after the add)
// else 0 (g = dy without a ReLU); dbeta = sum g, dgamma = sum g xhat, dz = g (the residual's
// gradient), dx = gamma inv_std (g - dbeta / M - xhat dgamma / M).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace nb::test {

struct BnRefShape {
  int64_t n = 0, c = 0, hw = 0;
  bool nhwc = false;
  size_t size() const { return size_t(n * c * hw); }
  int64_t count() const { return n * hw; }  // elements per channel
  size_t at(int64_t img, int64_t ch, int64_t pos) const {
    return size_t(nhwc ? (img * hw + pos) * c + ch : (img * c + ch) * hw + pos);
  }
};

// Inputs a test runs a layer on: per channel its own mean and spread (spreads from 1e-3, where
// epsilon matters, to 3; means within two spreads of zero; some gamma negative), a residual and
// an incoming gradient of unit size. Deterministic from the seed.
struct BnRefInputs {
  std::vector<double> x, residual, dy, gamma, beta, run_mean, run_var;
};
BnRefInputs bn_ref_inputs(const BnRefShape& s, uint64_t seed);
// v rounded to the nearest FP16 value (ties to even; subnormals at their 2^-24 spacing).
double round_to_half(double v);
// The inputs as a layer stores them: x, the residual and dy in the storage type (FP16 or FP32),
// the per-channel values in FP32; the reference then computes from exactly what the GPU reads.
void round_to_storage(BnRefInputs& in, bool half);

struct BnRefForward {
  std::vector<double> mean, var, inv_std;  // per channel (var biased)
  std::vector<double> run_mean, run_var;   // after the update
  std::vector<double> y;
  // For the tolerances: per element |gamma xhat| + |beta| + |r| (what y is summed from), per
  // channel the mean of |x| and of x^2 (what the statistics are summed from).
  std::vector<double> y_scale, mean_abs, mean_sq;
};
BnRefForward bn_ref_forward(const BnRefShape& s, const std::vector<double>& x, const std::vector<double>* residual,
                            bool relu, const std::vector<double>& gamma, const std::vector<double>& beta,
                            const std::vector<double>& run_mean0, const std::vector<double>& run_var0, double eps,
                            double factor);

struct BnRefBackward {
  std::vector<double> dx, dz, dgamma, dbeta;
  // For the tolerances: per element |gamma inv| (|g| + mean|g| + |xhat| mean|g xhat|), per channel
  // sum |g| and sum |g xhat|.
  std::vector<double> dx_scale, sum_abs_g, sum_abs_gx;
};
// y: the forward's output as stored (its sign is the ReLU's mask); null without a ReLU.
BnRefBackward bn_ref_backward(const BnRefShape& s, const std::vector<double>& x, const std::vector<double>* y,
                              const std::vector<double>& dy, const std::vector<double>& gamma, double eps);

// The tolerances, from the precision of each step of the computation:
//  - arithmetic is FP32 (u = 2^-24) on every path under test; a per-channel sum of M terms in
//    FP32, in whatever order an implementation takes (sequential runs per thread, then a tree),
//    is taken to err by at most k_sum(M) u times the sum of the terms' magnitudes, k_sum(M) =
//    32 + sqrt(M): rounding errors of a long sum grow like sqrt(M) when they are not correlated,
//    32 covers the few roundings around it (shift, combine, division, square root);
//  - one storage rounding of an output (u_store: 2^-24 FP32, 2^-11 FP16, half an ulp) and room
//    for a second one (the unfused path stores the batch norm's output before the add; an
//    implementation may store an intermediate of dx); an FP16 result below the normal range errs
//    by up to half its spacing (2^-25) absolutely; the gradient dz is g itself (one rounding at most).
// A fault changes a result by far more: a biased variance where an unbiased one belongs (or the
// reverse) moves it by 1/M (5e-3 at M = 196), a missing epsilon changes inv_std of a channel with
// variance 1e-6 threefold, a ReLU mask taken before the residual add changes y and g by O(|r|)
// where the two signs differ, and a missed or doubled tail element changes that element by O(1).
struct BnTolerance {
  double u_arith = 1.0 / 16777216.0;  // FP32 arithmetic
  double u_store = 1.0 / 16777216.0;  // 2^-24 FP32 storage, 2^-11 FP16
  double abs_store = 0;               // FP16: 2^-25 below the normal range
  int store_roundings = 2;
  static BnTolerance for_storage(bool half);
  double k_sum(int64_t m) const;
};

// The worst |got - ref| / tol over a tensor, where it is, and how many elements were not written
// (NaN: the poison) or are not finite.
struct BnCheck {
  double worst = 0;      // <= 1 passes
  size_t at = 0;
  double got = 0, ref = 0, tol = 0;
  size_t unwritten = 0;  // non-finite results
  bool ok() const { return unwritten == 0 && worst <= 1.0; }
  std::string describe(const std::string& what) const;
};
BnCheck bn_check(const std::vector<double>& got, const std::vector<double>& ref, const std::vector<double>& tol);

// The tolerance of each result of a forward (per channel for the statistics, per element for y).
struct BnForwardTol {
  std::vector<double> mean, inv_std, run_mean, run_var, y;
};
BnForwardTol bn_forward_tol(const BnRefShape& s, const BnRefForward& f, const std::vector<double>& gamma, double eps,
                            double factor, const BnTolerance& t);
struct BnBackwardTol {
  std::vector<double> dx, dz, dgamma, dbeta;
};
BnBackwardTol bn_backward_tol(const BnRefShape& s, const std::vector<double>& x, const std::vector<double>& gamma,
                              const BnRefForward& f, const BnRefBackward& b, double eps, const BnTolerance& t);

}  // namespace nb::test
