// The conv family's check of a pass against float64 direct convolution (conv_layer.hpp).
#include "conv_layer.hpp"

#include <cmath>
#include <map>
#include <sstream>
#include <vector>

#include "base/resources.hpp"
#include "base/verify.hpp"

namespace nb::conv {

using nlohmann::json;

DeviceBuffer alloc_or_skip(CaseContext& ctx, size_t bytes, const std::string& what) {
  try {
    return DeviceBuffer(bytes);
  } catch (const CudaError& e) {
    if (!e.out_of_memory()) throw;
    size_t free_b = 0, total_b = 0;
    (void)cudaMemGetInfo(&free_b, &total_b);
    ctx.skip("out of memory: does not fit: asked for " + std::to_string(bytes) + " bytes for " + what + ", " +
                 std::to_string(free_b) + " bytes free",
             ReasonKind::oom);
  }
}

namespace {

std::vector<double> to_doubles(const DeviceBuffer& b, size_t offset, size_t n, const Prec& p) {
  std::vector<double> out(n);
  const auto* src = static_cast<const unsigned char*>(b.get()) + offset * p.elem;
  if (p.elem == 4) {
    std::vector<float> h(n);
    NB_CUDA(cudaMemcpy(h.data(), src, n * 4, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; ++i) out[i] = h[i];
  } else {
    std::vector<uint16_t> h(n);
    NB_CUDA(cudaMemcpy(h.data(), src, n * 2, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; ++i) out[i] = half_to_double(h[i]);
  }
  return out;
}

// A device tensor read on the host one image (batch entry) at a time, on first use: the batch
// index is outermost in both layouts, so a sampled point needs only its own image.
class HostTensor {
 public:
  HostTensor(const DeviceBuffer& b, size_t per_image, const Prec& p) : b_(b), per_(per_image), p_(p) {}
  double at(size_t index) {
    auto& img = images_[index / per_];
    if (img.empty()) img = to_doubles(b_, index / per_ * per_, per_, p_);
    return img[index % per_];
  }

 private:
  const DeviceBuffer& b_;
  size_t per_;
  const Prec& p_;
  std::map<size_t, std::vector<double>> images_;
};

}  // namespace

json verify_pass(Conv& c, Pass pass, size_t samples, size_t& failures, std::string& worst) {
  const Layer& L = c.L;
  const GemmTolerance tol = gemm_tolerance("conv_" + std::string(c.P.name));
  const size_t cg = size_t(L.c / L.groups), kg = size_t(L.k / L.groups);
  const size_t x_img = c.x_elems() / size_t(c.n), y_img = c.y_elems() / size_t(c.n);
  HostTensor X(c.bx, x_img, c.P), W(c.bw, c.w_elems(), c.P), DY(c.bdy, y_img, c.P);
  HostTensor OUT(pass == Pass::fwd ? c.by : pass == Pass::bwd_data ? c.bdx : c.bdw,
                 pass == Pass::fwd ? y_img : pass == Pass::bwd_data ? x_img : c.w_elems(), c.P);
  const size_t total = pass == Pass::fwd ? c.y_elems() : pass == Pass::bwd_data ? c.x_elems() : c.w_elems();
  const auto pos = sample_positions(int64_t(total), 1, samples, 0xD00Dull);
  double max_ratio = 0;
  for (const auto& [flat, unused] : pos) {
    (void)unused;
    std::vector<double> a, b;
    size_t out_index = 0;
    if (pass == Pass::fwd) {
      // Decompose a flat (n, k, p, q) index in NCHW order, then address in the layout.
      size_t t = size_t(flat);
      const size_t q = t % c.p; t /= c.p;
      const size_t pp = t % c.p; t /= c.p;
      const size_t k = t % L.k; const size_t in = t / L.k;
      out_index = c.yi(in, k, pp, q);
      const size_t g = k / kg;
      for (size_t ci = 0; ci < cg; ++ci)
        for (int r = 0; r < L.r; ++r)
          for (int s = 0; s < L.r; ++s) {
            const long h = long(pp) * L.stride - L.pad + r, w = long(q) * L.stride - L.pad + s;
            if (h < 0 || w < 0 || h >= L.hw || w >= L.hw) continue;
            a.push_back(X.at(c.xi(in, g * cg + ci, size_t(h), size_t(w))));
            b.push_back(W.at(c.wi(k, ci, size_t(r), size_t(s))));
          }
    } else if (pass == Pass::bwd_data) {
      size_t t = size_t(flat);
      const size_t w = t % L.hw; t /= L.hw;
      const size_t h = t % L.hw; t /= L.hw;
      const size_t ch = t % L.c; const size_t in = t / L.c;
      out_index = c.xi(in, ch, h, w);
      const size_t g = ch / cg, ci = ch % cg;
      for (size_t kk = 0; kk < kg; ++kk)
        for (int r = 0; r < L.r; ++r)
          for (int s = 0; s < L.r; ++s) {
            const long ph = long(h) + L.pad - r, pw = long(w) + L.pad - s;
            if (ph < 0 || pw < 0 || ph % L.stride || pw % L.stride) continue;
            const long p = ph / L.stride, q = pw / L.stride;
            if (p >= c.p || q >= c.p) continue;
            const size_t k = g * kg + kk;
            a.push_back(DY.at(c.yi(in, k, size_t(p), size_t(q))));
            b.push_back(W.at(c.wi(k, ci, size_t(r), size_t(s))));
          }
    } else {
      size_t t = size_t(flat);
      const size_t s = t % L.r; t /= L.r;
      const size_t r = t % L.r; t /= L.r;
      const size_t ci = t % cg; const size_t k = t / cg;
      out_index = c.wi(k, ci, r, s);
      const size_t g = k / kg;
      for (int64_t in = 0; in < c.n; ++in)
        for (int p = 0; p < c.p; ++p)
          for (int q = 0; q < c.p; ++q) {
            const long h = long(p) * L.stride - L.pad + long(r), w = long(q) * L.stride - L.pad + long(s);
            if (h < 0 || w < 0 || h >= L.hw || w >= L.hw) continue;
            a.push_back(DY.at(c.yi(size_t(in), k, size_t(p), size_t(q))));
            b.push_back(X.at(c.xi(size_t(in), g * cg + ci, size_t(h), size_t(w))));
          }
    }
    const DotCheck d = check_dot(a, b, OUT.at(out_index), tol);
    if (!d.ok) {
      if (!failures) {
        std::ostringstream os;
        os << pass_name(pass) << " element " << flat << " = " << d.got << ", float64 " << d.ref << ", bound " << d.bound;
        worst = os.str();
      }
      ++failures;
    }
    if (std::isfinite(d.ratio)) max_ratio = std::max(max_ratio, d.ratio);
  }
  return {{"samples", pos.size()}, {"failures", failures}, {"max_error_ratio", max_ratio}};
}

}  // namespace nb::conv
