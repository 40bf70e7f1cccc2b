// The float64 batch-norm reference and its tolerances (see bn_reference.hpp).
#include "bn_reference.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace nb::test {

namespace {
// splitmix64: a reproducible stream of 64-bit values.
struct Rng {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return (double(next() >> 11) + 0.5) / 9007199254740992.0; }  // (0, 1)
  double normal() { return std::sqrt(-2.0 * std::log(uniform())) * std::cos(6.283185307179586 * uniform()); }
};
}  // namespace

BnRefInputs bn_ref_inputs(const BnRefShape& s, uint64_t seed) {
  Rng rng{seed};
  BnRefInputs in;
  const auto C = size_t(s.c);
  std::vector<double> mu(C), sigma(C);
  for (size_t c = 0; c < C; ++c) {
    sigma[c] = std::pow(10.0, -3.0 + 3.5 * double((c * 7) % C) / double(C));
    mu[c] = sigma[c] * (double((c * 5) % 9) - 4.0) / 2.0;
    in.gamma.push_back((c % 5 == 3 ? -1.0 : 1.0) * (0.4 + double((c * 3) % 7) / 7.0));
    in.beta.push_back(double((c * 11) % 9) / 8.0 - 0.5);
    in.run_mean.push_back(double(c % 4) * 0.1);
    in.run_var.push_back(0.5 + double(c % 3) * 0.25);
  }
  in.x.resize(s.size()), in.residual.resize(s.size()), in.dy.resize(s.size());
  for (int64_t i = 0; i < s.n; ++i)
    for (int64_t ch = 0; ch < s.c; ++ch)
      for (int64_t p = 0; p < s.hw; ++p) {
        const size_t k = s.at(i, ch, p);
        in.x[k] = mu[size_t(ch)] + sigma[size_t(ch)] * rng.normal();
        in.residual[k] = 0.8 * rng.normal();
        in.dy[k] = rng.normal();
      }
  return in;
}

double round_to_half(double v) {
  if (v == 0 || !std::isfinite(v)) return v;
  int e = 0;
  std::frexp(v, &e);  // |v| in [2^(e-1), 2^e)
  const double spacing = std::ldexp(1.0, std::max(e, -13) - 11);  // 11 significant bits; 2^-24 below 2^-14
  return std::nearbyint(v / spacing) * spacing;
}

void round_to_storage(BnRefInputs& in, bool half) {
  for (auto* v : {&in.x, &in.residual, &in.dy})
    for (double& e : *v) e = half ? round_to_half(e) : double(float(e));
  for (auto* v : {&in.gamma, &in.beta, &in.run_mean, &in.run_var})
    for (double& e : *v) e = double(float(e));
}

BnRefForward bn_ref_forward(const BnRefShape& s, const std::vector<double>& x, const std::vector<double>* residual,
                            bool relu, const std::vector<double>& gamma, const std::vector<double>& beta,
                            const std::vector<double>& run_mean0, const std::vector<double>& run_var0, double eps,
                            double factor) {
  const auto C = size_t(s.c);
  const double M = double(s.count());
  BnRefForward f;
  f.mean.assign(C, 0), f.var.assign(C, 0), f.inv_std.assign(C, 0), f.mean_abs.assign(C, 0), f.mean_sq.assign(C, 0);
  f.run_mean.assign(C, 0), f.run_var.assign(C, 0);
  f.y.assign(s.size(), 0), f.y_scale.assign(s.size(), 0);
  for (int64_t ch = 0; ch < s.c; ++ch) {
    double sum = 0, sabs = 0, ssq = 0;
    for (int64_t i = 0; i < s.n; ++i)
      for (int64_t p = 0; p < s.hw; ++p) {
        const double v = x[s.at(i, ch, p)];
        sum += v, sabs += std::fabs(v), ssq += v * v;
      }
    const double mean = sum / M;
    double m2 = 0;  // two passes: the deviations from the mean, no cancellation
    for (int64_t i = 0; i < s.n; ++i)
      for (int64_t p = 0; p < s.hw; ++p) m2 += (x[s.at(i, ch, p)] - mean) * (x[s.at(i, ch, p)] - mean);
    const auto c = size_t(ch);
    f.mean[c] = mean, f.var[c] = m2 / M, f.inv_std[c] = 1.0 / std::sqrt(m2 / M + eps);
    f.mean_abs[c] = sabs / M, f.mean_sq[c] = ssq / M;
    f.run_mean[c] = (1 - factor) * run_mean0[c] + factor * mean;
    f.run_var[c] = (1 - factor) * run_var0[c] + factor * (M > 1 ? m2 / (M - 1) : m2 / M);
    for (int64_t i = 0; i < s.n; ++i)
      for (int64_t p = 0; p < s.hw; ++p) {
        const size_t k = s.at(i, ch, p);
        const double bn = gamma[c] * (x[k] - mean) * f.inv_std[c] + beta[c];
        const double r = residual ? (*residual)[k] : 0.0;
        f.y[k] = relu ? std::max(bn + r, 0.0) : bn + r;
        f.y_scale[k] = std::fabs(gamma[c] * (x[k] - mean) * f.inv_std[c]) + std::fabs(beta[c]) + std::fabs(r);
      }
  }
  return f;
}

BnRefBackward bn_ref_backward(const BnRefShape& s, const std::vector<double>& x, const std::vector<double>* y,
                              const std::vector<double>& dy, const std::vector<double>& gamma, double eps) {
  const auto C = size_t(s.c);
  const double M = double(s.count());
  BnRefBackward b;
  b.dx.assign(s.size(), 0), b.dz.assign(s.size(), 0), b.dx_scale.assign(s.size(), 0);
  b.dgamma.assign(C, 0), b.dbeta.assign(C, 0), b.sum_abs_g.assign(C, 0), b.sum_abs_gx.assign(C, 0);
  for (int64_t ch = 0; ch < s.c; ++ch) {
    const auto c = size_t(ch);
    double sum = 0;
    for (int64_t i = 0; i < s.n; ++i)
      for (int64_t p = 0; p < s.hw; ++p) sum += x[s.at(i, ch, p)];
    const double mean = sum / M;
    double m2 = 0;
    for (int64_t i = 0; i < s.n; ++i)
      for (int64_t p = 0; p < s.hw; ++p) m2 += (x[s.at(i, ch, p)] - mean) * (x[s.at(i, ch, p)] - mean);
    const double inv = 1.0 / std::sqrt(m2 / M + eps);
    auto g_at = [&](size_t k) { return y && !((*y)[k] > 0.0) ? 0.0 : dy[k]; };
    double sg = 0, sgx = 0, sag = 0, sagx = 0;
    for (int64_t i = 0; i < s.n; ++i)
      for (int64_t p = 0; p < s.hw; ++p) {
        const size_t k = s.at(i, ch, p);
        const double g = g_at(k), xh = (x[k] - mean) * inv;
        sg += g, sgx += g * xh, sag += std::fabs(g), sagx += std::fabs(g * xh);
        b.dz[k] = g;
      }
    b.dbeta[c] = sg, b.dgamma[c] = sgx, b.sum_abs_g[c] = sag, b.sum_abs_gx[c] = sagx;
    const double a = gamma[c] * inv;
    for (int64_t i = 0; i < s.n; ++i)
      for (int64_t p = 0; p < s.hw; ++p) {
        const size_t k = s.at(i, ch, p);
        const double g = g_at(k), xh = (x[k] - mean) * inv;
        b.dx[k] = a * (g - sg / M - xh * sgx / M);
        b.dx_scale[k] = std::fabs(a) * (std::fabs(g) + sag / M + std::fabs(xh) * sagx / M);
      }
  }
  return b;
}

BnTolerance BnTolerance::for_storage(bool half) {
  BnTolerance t;
  if (half) {
    t.u_store = 1.0 / 2048.0;          // 11 significant bits
    t.abs_store = 1.0 / 33554432.0;    // half the subnormal spacing 2^-24
  }
  return t;
}

double BnTolerance::k_sum(int64_t m) const { return 32.0 + std::sqrt(double(m)); }

BnCheck bn_check(const std::vector<double>& got, const std::vector<double>& ref, const std::vector<double>& tol) {
  BnCheck c;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(got[i])) {
      if (!c.unwritten++) c.at = i, c.got = got[i], c.ref = ref[i], c.tol = tol[i];
      continue;
    }
    const double d = std::fabs(got[i] - ref[i]);
    const double r = tol[i] > 0 ? d / tol[i] : (d > 0 ? INFINITY : 0.0);
    if (r > c.worst && !c.unwritten) c.worst = r, c.at = i, c.got = got[i], c.ref = ref[i], c.tol = tol[i];
    else if (r > c.worst) c.worst = r;
  }
  return c;
}

std::string BnCheck::describe(const std::string& what) const {
  std::ostringstream os;
  os.precision(9);
  os << what << ": worst |got - ref| / tol " << worst << " at " << at << " (got " << got << ", float64 " << ref
     << ", tol " << tol << ")";
  if (unwritten) os << "; " << unwritten << " not written or not finite";
  return os.str();
}

BnForwardTol bn_forward_tol(const BnRefShape& s, const BnRefForward& f, const std::vector<double>& gamma, double eps,
                            double factor, const BnTolerance& t) {
  const auto C = size_t(s.c);
  const double M = double(s.count()), k = t.k_sum(s.count()) * t.u_arith, R = t.store_roundings;
  BnForwardTol o;
  o.mean.resize(C), o.inv_std.resize(C), o.run_mean.resize(C), o.run_var.resize(C), o.y.resize(s.size());
  for (size_t c = 0; c < C; ++c) {
    o.mean[c] = k * f.mean_abs[c];
    // The variance's absolute error is that of sums of x^2-sized terms; inv_std's relative error
    // is at most the relative error of var + eps (half of it, through the square root).
    const double var_abs = k * f.mean_sq[c], inv_rel = var_abs / (f.var[c] + eps);
    o.inv_std[c] = inv_rel * f.inv_std[c] + 4 * t.u_arith * f.inv_std[c];
    o.run_mean[c] = factor * o.mean[c] + 4 * t.u_arith * std::fabs(f.run_mean[c]);
    o.run_var[c] = factor * var_abs * (M > 1 ? M / (M - 1) : 1.0) + 4 * t.u_arith * std::fabs(f.run_var[c]);
    for (int64_t i = 0; i < s.n; ++i)
      for (int64_t p = 0; p < s.hw; ++p) {
        const size_t e = s.at(i, int64_t(c), p);
        o.y[e] = std::fabs(gamma[c]) * f.inv_std[c] * o.mean[c] + f.y_scale[e] * (inv_rel + 8 * t.u_arith + R * t.u_store) +
                 R * t.abs_store;
      }
  }
  return o;
}

BnBackwardTol bn_backward_tol(const BnRefShape& s, const std::vector<double>& x, const std::vector<double>& gamma,
                              const BnRefForward& f, const BnRefBackward& b, double eps, const BnTolerance& t) {
  const auto C = size_t(s.c);
  const double M = double(s.count()), k = t.k_sum(s.count()) * t.u_arith;
  BnBackwardTol o;
  o.dgamma.resize(C), o.dbeta.resize(C), o.dx.resize(s.size()), o.dz.resize(s.size());
  for (size_t c = 0; c < C; ++c) {
    const double tol_mean = k * f.mean_abs[c], inv_rel = k * f.mean_sq[c] / (f.var[c] + eps) + 4 * t.u_arith;
    const double inv = f.inv_std[c], a = std::fabs(gamma[c]) * inv;
    // The implementation's xhat comes from its saved mean and inv_std: off by inv tol_mean
    // absolutely and inv_rel relatively.
    o.dbeta[c] = k * b.sum_abs_g[c];
    o.dgamma[c] = (k + inv_rel) * b.sum_abs_gx[c] + inv * tol_mean * b.sum_abs_g[c];
    for (int64_t i = 0; i < s.n; ++i)
      for (int64_t p = 0; p < s.hw; ++p) {
        const size_t e = s.at(i, int64_t(c), p);
        const double xh = std::fabs(x[e] - f.mean[c]) * inv;
        o.dx[e] = b.dx_scale[e] * (k + 2 * inv_rel + t.store_roundings * t.u_store) +
                  a * inv * tol_mean * (b.sum_abs_gx[c] / M + xh * b.sum_abs_g[c] / M) + t.store_roundings * t.abs_store;
        o.dz[e] = t.u_store * std::fabs(b.dz[e]) + t.abs_store;
      }
  }
  return o;
}

}  // namespace nb::test
