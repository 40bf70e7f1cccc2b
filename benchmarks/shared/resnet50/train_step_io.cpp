// The training step's read-backs: sampled layer checks, gradients and parameters for the
// finite-difference test, the loss's inputs, the chosen algorithms (see train_step.hpp).
#include <cmath>
#include <map>
#include <sstream>

#include "kernels/train/train_kernels.cuh"
#include "train_step.hpp"
#include "train_step_impl.hpp"
#include "base/verify.hpp"

namespace nb::train {

using nlohmann::json;
using namespace cudnn;

namespace {
std::vector<double> read_doubles(const void* p, size_t offset, size_t n, bool half) {
  std::vector<double> out(n);
  if (!half) {
    std::vector<float> h(n);
    NB_CUDA(cudaMemcpy(h.data(), static_cast<const float*>(p) + offset, n * 4, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; ++i) out[i] = h[i];
  } else {
    std::vector<uint16_t> h(n);
    NB_CUDA(cudaMemcpy(h.data(), static_cast<const uint16_t*>(p) + offset, n * 2, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; ++i) out[i] = half_to_double(h[i]);
  }
  return out;
}
}  // namespace

json TrainStep::verify_samples(size_t samples, size_t& failures, std::string& first) {
  Impl& I = *impl_;
  NB_CUDA(cudaStreamSynchronize(stream_));
  const std::string pn = cfg_.prec->name;
  json out = json::object();
  // The first convolution: y[n][k][p][q] = sum x[n][c][p s - pad + r][q s - pad + t] w[k][c][r][t].
  {
    const Layer& L = I.layers[0];
    const auto& c = *L.spec;
    const int oh = c.out_hw();
    const GemmTolerance tol = gemm_tolerance("conv_" + pn);
    const auto W = read_doubles(L.w, 0, size_t(c.weights()), half_);
    std::map<size_t, std::vector<double>> imgs;
    const bool images_nhwc = cfg_.nhwc && !cfg_.images_nchw;
    double max_ratio = 0;
    size_t fails = 0;
    const auto pos = sample_positions(int64_t(L.d->y_elems()), 1, samples, 0x7A1Aull);
    for (const auto& [flat, unused] : pos) {
      (void)unused;
      size_t t = size_t(flat);
      const size_t q = t % oh; t /= oh;
      const size_t p = t % oh; t /= oh;
      const size_t k = t % c.k;
      const size_t n = t / c.k;
      auto& X = imgs[n];
      if (X.empty()) X = read_doubles(I.image, n * c.in_elems(), size_t(c.in_elems()), half_);
      std::vector<double> a, b;
      for (int ci = 0; ci < c.c; ++ci)
        for (int r = 0; r < c.r; ++r)
          for (int u = 0; u < c.r; ++u) {
            const long h = long(p) * c.stride - c.pad + r, w = long(q) * c.stride - c.pad + u;
            if (h < 0 || w < 0 || h >= c.hw || w >= c.hw) continue;
            // The images as fed (NCHW when the step converts them: the check covers the conversion).
            const size_t xi = images_nhwc ? (size_t(h) * c.hw + size_t(w)) * c.c + ci : (size_t(ci) * c.hw + size_t(h)) * c.hw + size_t(w);
            const size_t wi = cfg_.nhwc ? ((k * c.r + r) * c.r + u) * c.c + ci : ((k * c.c + ci) * c.r + r) * c.r + u;
            a.push_back(X[xi]);
            b.push_back(W[wi]);
          }
      const size_t yi = cfg_.nhwc ? ((n * oh + p) * oh + q) * c.k + k : ((n * c.k + k) * oh + p) * oh + q;
      const DotCheck d = check_dot(a, b, read_doubles(L.y, yi, 1, half_)[0], tol);
      if (!d.ok) {
        if (!failures && !fails) {
          std::ostringstream os;
          os << "conv1 output element " << flat << " = " << d.got << ", float64 " << d.ref << ", bound " << d.bound;
          first = os.str();
        }
        ++fails;
      }
      if (std::isfinite(d.ratio)) max_ratio = std::max(max_ratio, d.ratio);
    }
    failures += fails;
    out["conv1"] = {{"samples", pos.size()}, {"failures", fails}, {"max_error_ratio", max_ratio}};
  }
  // The FC: logits[n][j] = sum_i pooled[n][i] W[j][i] (before the bias).
  {
    const GemmTolerance tol = gemm_tolerance(pn);
    const int64_t N = cfg_.batch;
    const auto pos = sample_positions(N, net_.classes, samples, 0xFCull);
    double max_ratio = 0;
    size_t fails = 0;
    for (const auto& [n, j] : pos) {
      const auto a = read_doubles(I.pooled, size_t(n) * net_.fc_in, size_t(net_.fc_in), half_);
      const auto b = read_doubles(I.compute_a, I.fc_w_off + size_t(j) * net_.fc_in, size_t(net_.fc_in), half_);
      float got = 0;
      NB_CUDA(cudaMemcpy(&got, I.logits + size_t(n) * net_.classes + size_t(j), 4, cudaMemcpyDeviceToHost));
      const DotCheck d = check_dot(a, b, got, tol);
      if (!d.ok) {
        if (!failures && !fails) {
          std::ostringstream os;
          os << "fc logit (" << n << ", " << j << ") = " << d.got << ", float64 " << d.ref << ", bound " << d.bound;
          first = os.str();
        }
        ++fails;
      }
      if (std::isfinite(d.ratio)) max_ratio = std::max(max_ratio, d.ratio);
    }
    failures += fails;
    out["fc"] = {{"samples", pos.size()}, {"failures", fails}, {"max_error_ratio", max_ratio}};
  }
  out["reference"] = "float64 dot products of the stored inputs on the host";
  return out;
}

std::vector<float> TrainStep::gradients(const ParamRef& p) {
  NB_CUDA(cudaStreamSynchronize(stream_));
  std::vector<float> g(p.count);
  if (p.fp32_segment) {
    NB_CUDA(cudaMemcpy(g.data(), impl_->grad_b + p.offset, p.count * 4, cudaMemcpyDeviceToHost));
  } else {
    const auto d = read_doubles(impl_->grad_a, p.offset, p.count, half_);
    for (size_t i = 0; i < p.count; ++i) g[i] = float(d[i]);
  }
  const float scale = loss_scale();  // the scale of the last backward (until update changes it)
  for (auto& v : g) v /= scale;
  return g;
}

float TrainStep::param(const ParamRef& p, size_t i) {
  float v = 0;
  NB_CUDA(cudaStreamSynchronize(stream_));
  NB_CUDA(cudaMemcpy(&v, (p.fp32_segment ? impl_->master_b : impl_->master_a) + p.offset + i, 4, cudaMemcpyDeviceToHost));
  return v;
}

void TrainStep::set_param(const ParamRef& p, size_t i, float v) {
  NB_CUDA(cudaStreamSynchronize(stream_));
  float* m = (p.fp32_segment ? impl_->master_b : impl_->master_a) + p.offset + i;
  NB_CUDA(cudaMemcpy(m, &v, 4, cudaMemcpyHostToDevice));
  if (!p.fp32_segment && half_) {
    kernels::launch_cast_from_float(stream_, m, static_cast<uint16_t*>(impl_->compute_a) + p.offset + i, 1, true);
    NB_CUDA_LAUNCH();
    NB_CUDA(cudaStreamSynchronize(stream_));
  }
}

void TrainStep::map_weights(const std::function<float(float, size_t)>& f) {
  Impl& I = *impl_;
  NB_CUDA(cudaStreamSynchronize(stream_));
  size_t at = 0;
  for (auto [dev, n] : {std::pair<float*, size_t>{I.master_a, I.n_a}, std::pair<float*, size_t>{I.master_b, I.n_b}}) {
    std::vector<float> h(n);
    NB_CUDA(cudaMemcpy(h.data(), dev, n * 4, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; ++i) h[i] = f(h[i], at + i);
    NB_CUDA(cudaMemcpy(dev, h.data(), n * 4, cudaMemcpyHostToDevice));
    at += n;
  }
  if (half_) kernels::launch_cast_from_float(stream_, I.master_a, I.compute_a, I.n_a, true);
  NB_CUDA_LAUNCH();
  NB_CUDA(cudaStreamSynchronize(stream_));
}

void TrainStep::map_images(const std::function<double(double, size_t)>& g) {
  Impl& I = *impl_;
  NB_CUDA(cudaStreamSynchronize(stream_));
  const size_t n = size_t(net_.convs[0].in_elems() * cfg_.batch);
  const auto v = read_doubles(I.image, 0, n, half_);
  std::vector<float> h(n);
  for (size_t i = 0; i < n; ++i) h[i] = float(g(v[i], i));  // an FP16 value is exact in FP32
  DeviceBuffer staged(n * 4);
  NB_CUDA(cudaMemcpy(staged.get(), h.data(), n * 4, cudaMemcpyHostToDevice));
  kernels::launch_cast_from_float(stream_, staged.as<float>(), I.image, n, half_);
  NB_CUDA_LAUNCH();
  NB_CUDA(cudaStreamSynchronize(stream_));
}

TrainStep::LossView TrainStep::loss_view() {
  Impl& I = *impl_;
  LossView v;
  const size_t n = size_t(cfg_.batch), c = size_t(net_.classes);
  v.loss = read_loss();
  v.logits.resize(n * c);
  v.bias.resize(c);
  v.labels.resize(n);
  NB_CUDA(cudaMemcpy(v.logits.data(), I.logits, n * c * 4, cudaMemcpyDeviceToHost));
  NB_CUDA(cudaMemcpy(v.bias.data(), I.master_b + I.fc_b_off, c * 4, cudaMemcpyDeviceToHost));
  NB_CUDA(cudaMemcpy(v.labels.data(), I.labels, n * 4, cudaMemcpyDeviceToHost));
  const auto d = read_doubles(I.dlogits, 0, n * c, half_);
  v.dlogits.assign(d.begin(), d.end());
  return v;
}

std::vector<float> TrainStep::bn_statistics(size_t layer) {
  const Layer& L = impl_->layers.at(layer);
  std::vector<float> v(4 * size_t(L.spec->k));
  NB_CUDA(cudaStreamSynchronize(stream_));
  NB_CUDA(cudaMemcpy(v.data(), L.run_mean, v.size() * 4, cudaMemcpyDeviceToHost));  // run_mean, run_var, save_mean, save_inv
  return v;
}

json TrainStep::algorithms() const {
  json a = json::array();
  for (const auto& L : impl_->layers) {
    json e = {{"layer", L.spec->name}, {"fwd_algo", L.fwd.algo}, {"fwd_source", L.fwd.source},
              {"bwd_filter_algo", L.bwd_filter.algo}, {"bwd_filter_source", L.bwd_filter.source},
              {"bn", bn_act_name(L.act)}, {"bn_path", bn_path_name(L.bn_choice.path)}};
    if (L.data_grad) {
      e["bwd_data_algo"] = L.bwd_data.algo;
      e["bwd_data_source"] = L.bwd_data.source;
    }
    a.push_back(e);
  }
  return a;
}

}  // namespace nb::train
