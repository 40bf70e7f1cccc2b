// The float64 batch-norm reference of the layer GPU test (bn_reference.hpp), without a GPU:
//  - against values worked out by hand and the two layouts against each other;
//  - its backward against central finite differences of its own forward (so the backward's
//    formula, the mask after the add and dz are the derivatives of the forward);
//  - its tolerances: a single-precision implementation (float sums in sequence, as a naive
//    kernel would take them) with its outputs stored in FP32 or FP16 passes; each fault the GPU
//    test must catch (the ReLU mask taken before the residual add, forward or backward; the
//    biased variance in the running average; no epsilon; a wrong or unwritten tail element)
//    fails, in both storage types.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <vector>

#include "bn_reference.hpp"

namespace nb::test {
namespace {

constexpr double kEps = 1e-5, kFactor = 0.1;

TEST(BnReference, MatchesAHandWorkedChannel) {
  const BnRefShape s{1, 1, 4, false};
  const std::vector<double> x = {1, 2, 3, 4}, r = {0, -3, 0, 0};
  const auto f = bn_ref_forward(s, x, &r, true, {2.0}, {0.5}, {1.0}, {1.0}, kEps, kFactor);
  const double inv = 1 / std::sqrt(1.25 + kEps);
  EXPECT_DOUBLE_EQ(f.mean[0], 2.5);
  EXPECT_DOUBLE_EQ(f.var[0], 1.25);
  EXPECT_DOUBLE_EQ(f.inv_std[0], inv);
  EXPECT_DOUBLE_EQ(f.run_mean[0], 0.9 + 0.25);
  EXPECT_DOUBLE_EQ(f.run_var[0], 0.9 + 0.1 * 5.0 / 3.0);  // unbiased: 5 / 3
  EXPECT_DOUBLE_EQ(f.y[0], std::max(2 * -1.5 * inv + 0.5, 0.0));
  EXPECT_DOUBLE_EQ(f.y[1], 0.0);  // 2 (-0.5) inv + 0.5 - 3 < 0: the ReLU after the add
  EXPECT_DOUBLE_EQ(f.y[3], 2 * 1.5 * inv + 0.5);
  const std::vector<double> dy = {1, 1, 1, 1};
  const auto b = bn_ref_backward(s, x, &f.y, dy, {2.0}, kEps);
  EXPECT_DOUBLE_EQ(b.dz[1], 0.0);
  EXPECT_DOUBLE_EQ(b.dbeta[0], 2.0);  // elements 2 and 3 pass (y > 0), 0 and 1 do not
  EXPECT_NEAR(b.dgamma[0], (0.5 + 1.5) * inv, 1e-15);
}

TEST(BnReference, LayoutsGiveTheSameChannels) {
  const BnRefShape a{3, 5, 7, false}, b{3, 5, 7, true};
  const auto in = bn_ref_inputs(a, 1);
  std::vector<double> xb(a.size()), rb(a.size()), dyb(a.size());
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t c = 0; c < 5; ++c)
      for (int64_t p = 0; p < 7; ++p)
        xb[b.at(i, c, p)] = in.x[a.at(i, c, p)], rb[b.at(i, c, p)] = in.residual[a.at(i, c, p)],
                   dyb[b.at(i, c, p)] = in.dy[a.at(i, c, p)];
  const auto fa = bn_ref_forward(a, in.x, &in.residual, true, in.gamma, in.beta, in.run_mean, in.run_var, kEps, kFactor);
  const auto fb = bn_ref_forward(b, xb, &rb, true, in.gamma, in.beta, in.run_mean, in.run_var, kEps, kFactor);
  const auto ba = bn_ref_backward(a, in.x, &fa.y, in.dy, in.gamma, kEps);
  const auto bb = bn_ref_backward(b, xb, &fb.y, dyb, in.gamma, kEps);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t c = 0; c < 5; ++c)
      for (int64_t p = 0; p < 7; ++p) {
        EXPECT_NEAR(fa.y[a.at(i, c, p)], fb.y[b.at(i, c, p)], 1e-12);
        EXPECT_NEAR(ba.dx[a.at(i, c, p)], bb.dx[b.at(i, c, p)], 1e-12);
      }
  for (size_t c = 0; c < 5; ++c) EXPECT_NEAR(ba.dgamma[c], bb.dgamma[c], 1e-12);
}

// L = sum dy y(x, gamma, beta, r): its central differences against the backward.
TEST(BnReference, BackwardIsTheForwardsDerivative) {
  for (bool relu : {false, true})
    for (bool add : {false, true}) {
      if (add && !relu) continue;  // the step's join always ends in a ReLU
      SCOPED_TRACE(std::string(relu ? "relu" : "none") + (add ? "+add" : ""));
      const BnRefShape s{2, 3, 5, true};
      auto in = bn_ref_inputs(s, 7);
      const std::vector<double>* r = add ? &in.residual : nullptr;
      auto loss = [&] {
        const auto f = bn_ref_forward(s, in.x, add ? &in.residual : nullptr, relu, in.gamma, in.beta, in.run_mean,
                                      in.run_var, kEps, kFactor);
        double l = 0;
        for (size_t k = 0; k < s.size(); ++k) l += in.dy[k] * f.y[k];
        return l;
      };
      const auto f = bn_ref_forward(s, in.x, r, relu, in.gamma, in.beta, in.run_mean, in.run_var, kEps, kFactor);
      const auto b = bn_ref_backward(s, in.x, relu ? &f.y : nullptr, in.dy, in.gamma, kEps);
      auto fd = [&](double& v) {
        const double v0 = v, h = 1e-6 * std::max(1e-3, std::fabs(v0));
        v = v0 + h;
        const double lp = loss();
        v = v0 - h;
        const double lm = loss();
        v = v0;
        return (lp - lm) / (2 * h);
      };
      for (size_t k = 0; k < s.size(); ++k) {
        const double sc = std::fabs(b.dx[k]) + 1e-3 * b.dx_scale[k];
        EXPECT_NEAR(fd(in.x[k]), b.dx[k], 2e-4 * sc + 1e-7) << "dx " << k;
        if (add) EXPECT_NEAR(fd(in.residual[k]), b.dz[k], 1e-6) << "dz " << k;
      }
      for (size_t c = 0; c < 3; ++c) {
        EXPECT_NEAR(fd(in.gamma[c]), b.dgamma[c], 1e-6 * (1 + b.sum_abs_gx[c])) << "dgamma " << c;
        EXPECT_NEAR(fd(in.beta[c]), b.dbeta[c], 1e-6 * (1 + b.sum_abs_g[c])) << "dbeta " << c;
      }
    }
}

// A plausible single-precision implementation: float sums in sequence, two passes, outputs stored
// through `store` (FP32 or FP16 rounding). Faults are switched in by name.
struct FloatImpl {
  bool mask_before_add = false, biased_running = false, no_eps = false;
  std::function<double(double)> store;
  std::vector<double> y, mean, inv, run_var, dx, dz, dgamma;
  void run(const BnRefShape& s, const BnRefInputs& in, bool add) {
    const auto C = size_t(s.c);
    y.assign(s.size(), 0), dx.assign(s.size(), 0), dz.assign(s.size(), 0);
    mean.assign(C, 0), inv.assign(C, 0), run_var.assign(C, 0), dgamma.assign(C, 0);
    const float M = float(s.count());
    std::vector<float> pre(s.size());
    for (size_t c = 0; c < C; ++c) {
      float sum = 0, m2 = 0;
      for (int64_t i = 0; i < s.n; ++i)
        for (int64_t p = 0; p < s.hw; ++p) sum += float(in.x[s.at(i, int64_t(c), p)]);
      const float m = sum / M;
      for (int64_t i = 0; i < s.n; ++i)
        for (int64_t p = 0; p < s.hw; ++p) {
          const float d = float(in.x[s.at(i, int64_t(c), p)]) - m;
          m2 += d * d;
        }
      const float iv = 1.f / std::sqrt(m2 / M + (no_eps ? 0.f : float(kEps)));
      mean[c] = m, inv[c] = iv;
      run_var[c] = float((1 - kFactor) * in.run_var[c] + kFactor * (biased_running ? m2 / M : m2 / (M - 1)));
      float sg = 0, sgx = 0;
      for (int64_t i = 0; i < s.n; ++i)
        for (int64_t p = 0; p < s.hw; ++p) {
          const size_t k = s.at(i, int64_t(c), p);
          const float bn = float(in.gamma[c]) * (float(in.x[k]) - m) * iv + float(in.beta[c]);
          const float r = add ? float(in.residual[k]) : 0.f;
          pre[k] = mask_before_add ? bn : bn + r;
          y[k] = store(mask_before_add ? std::max(bn, 0.f) + r : std::max(bn + r, 0.f));
          const float g = pre[k] > 0.f ? float(in.dy[k]) : 0.f;
          dz[k] = store(g);
          sg += g, sgx += g * (float(in.x[k]) - m) * iv;
        }
      dgamma[c] = sgx;
      const float a = float(in.gamma[c]) * iv;
      for (int64_t i = 0; i < s.n; ++i)
        for (int64_t p = 0; p < s.hw; ++p) {
          const size_t k = s.at(i, int64_t(c), p);
          const float g = pre[k] > 0.f ? float(in.dy[k]) : 0.f;
          dx[k] = store(a * (g - sg / M - (float(in.x[k]) - m) * iv * sgx / M));
        }
    }
  }
};

// Each result's worst error / tolerance (<= 1 passes).
struct Judged {
  double y, mean, inv, run_var, dx, dz, dgamma;
  bool ok() const { return std::max({y, mean, inv, run_var, dx, dz, dgamma}) <= 1.0; }
  std::string str() const {
    char b[200];
    std::snprintf(b, sizeof b, "y %.3g mean %.3g inv %.3g run_var %.3g dx %.3g dz %.3g dgamma %.3g", y, mean, inv,
                  run_var, dx, dz, dgamma);
    return b;
  }
};

Judged judge(const FloatImpl& impl, const BnRefShape& s, const BnRefInputs& in, bool half) {
  const auto t = BnTolerance::for_storage(half);
  const auto f = bn_ref_forward(s, in.x, &in.residual, true, in.gamma, in.beta, in.run_mean, in.run_var, kEps, kFactor);
  const auto ft = bn_forward_tol(s, f, in.gamma, kEps, kFactor, t);
  // The backward's mask from the implementation's own stored y, as the GPU test takes it.
  const auto b = bn_ref_backward(s, in.x, &impl.y, in.dy, in.gamma, kEps);
  const auto bt = bn_backward_tol(s, in.x, in.gamma, f, b, kEps, t);
  auto w = [](const BnCheck& c) { return c.unwritten ? INFINITY : c.worst; };
  return {w(bn_check(impl.y, f.y, ft.y)),          w(bn_check(impl.mean, f.mean, ft.mean)),
          w(bn_check(impl.inv, f.inv_std, ft.inv_std)), w(bn_check(impl.run_var, f.run_var, ft.run_var)),
          w(bn_check(impl.dx, b.dx, bt.dx)),       w(bn_check(impl.dz, b.dz, bt.dz)),
          w(bn_check(impl.dgamma, b.dgamma, bt.dgamma))};
}

class BnReferenceTolerance : public ::testing::TestWithParam<bool> {};  // FP16 storage or FP32

TEST_P(BnReferenceTolerance, ASinglePrecisionImplementationPasses) {
  const bool half = GetParam();
  for (const BnRefShape& s : {BnRefShape{4, 16, 49, true}, BnRefShape{4, 8, 3136, false}, BnRefShape{3, 37, 81, true}}) {
    SCOPED_TRACE(std::to_string(s.c) + " channels, " + std::to_string(s.hw) + " positions");
    auto in = bn_ref_inputs(s, 3);
    round_to_storage(in, half);
    FloatImpl impl;
    impl.store = half ? round_to_half : +[](double v) { return double(float(v)); };
    impl.run(s, in, true);
    const Judged j = judge(impl, s, in, half);
    std::printf("  %s c%lld hw%lld single precision: %s\n", half ? "fp16" : "fp32", (long long)s.c, (long long)s.hw,
                j.str().c_str());
    EXPECT_TRUE(j.ok()) << j.str();
  }
}

TEST_P(BnReferenceTolerance, EachFaultFails) {
  const bool half = GetParam();
  const BnRefShape s{4, 24, 49, true};  // M = 196: a biased variance is 1/M = 0.5% off
  auto in = bn_ref_inputs(s, 5);
  round_to_storage(in, half);
  auto run = [&](const std::function<void(FloatImpl&)>& fault) {
    FloatImpl impl;
    impl.store = half ? round_to_half : +[](double v) { return double(float(v)); };
    fault(impl);
    impl.run(s, in, true);
    return impl;
  };
  const Judged before = judge(run([](FloatImpl& f) { f.mask_before_add = true; }), s, in, half);
  const Judged biased = judge(run([](FloatImpl& f) { f.biased_running = true; }), s, in, half);
  const Judged no_eps = judge(run([](FloatImpl& f) { f.no_eps = true; }), s, in, half);
  std::printf("  %s faults: mask before the add: %s\n    biased running variance: %s\n    no epsilon: %s\n",
              half ? "fp16" : "fp32", before.str().c_str(), biased.str().c_str(), no_eps.str().c_str());
  EXPECT_GT(before.y, 1) << "the ReLU before the residual add";
  EXPECT_GT(before.dx, 1) << "the backward's mask before the add";
  EXPECT_GT(biased.run_var, 1) << "biased running variance";
  EXPECT_GT(no_eps.inv, 1) << "no epsilon";
  // One element of a tail wrong (the last one, as a vector tail would miss it) or not written.
  FloatImpl good = run([](FloatImpl&) {});
  const auto f = bn_ref_forward(s, in.x, &in.residual, true, in.gamma, in.beta, in.run_mean, in.run_var, kEps, kFactor);
  const auto ft = bn_forward_tol(s, f, in.gamma, kEps, kFactor, BnTolerance::for_storage(half));
  ASSERT_TRUE(bn_check(good.y, f.y, ft.y).ok());
  size_t last = s.size() - 1;
  while (f.y[last] == 0) --last;  // an element the ReLU passed, so that 0 is wrong
  auto y = good.y;
  y[last] = 0;
  EXPECT_FALSE(bn_check(y, f.y, ft.y).ok()) << "a tail element left at zero";
  y[last] = NAN;
  const BnCheck c = bn_check(y, f.y, ft.y);
  EXPECT_EQ(c.unwritten, 1u);
  EXPECT_FALSE(c.ok()) << c.describe("y");
}

INSTANTIATE_TEST_SUITE_P(Storage, BnReferenceTolerance, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "fp16" : "fp32"; });

TEST(BnReference, RoundToHalf) {
  EXPECT_EQ(round_to_half(1.0), 1.0);
  EXPECT_EQ(round_to_half(1.0 + 1.0 / 4096), 1.0);           // below half a spacing (2^-10)
  EXPECT_EQ(round_to_half(1.0 + 3.0 / 2048), 1.0 + 2.0 / 1024);  // 1.5 spacings: ties to even
  EXPECT_EQ(round_to_half(65504.0), 65504.0);
  EXPECT_EQ(round_to_half(3e-8), 1.0 / 16777216.0);          // subnormal spacing 2^-24
  EXPECT_EQ(round_to_half(-0.1), -0.0999755859375);
}

}  // namespace
}  // namespace nb::test
