// Convolution through cuDNN's convolution API (cudnnFind*AlgorithmEx / cudnnConvolution*),
// which every cuDNN 9 release carries, from 9.0..9.10 (the last with Pascal) to today's.
// Forward, backward-data and backward-filter; FP32 (FMA only), TF32 (sm_80+), FP16 with FP32
// accumulate; NCHW and NHWC; the algorithm chosen by measurement (cuDNN's search, then its fastest
// few candidates timed again here), with its workspace.
// Layer cases time one convolution; network cases run every distinct convolution of ResNet-50
// (weighted by how often it occurs) for one batch size, with the memory a training step's
// activations and workspace take, measured. An allocation that fails is a recorded
// "does not fit", and larger batches of the same series are then skipped.
#include <array>
#include <cmath>
#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>

#include "bench/analysis.hpp"
#include "bench/benchmark.hpp"
#include "shared/cudnn/cudnn_conv.hpp"
#include "shared/common/oom_series.hpp"
#include "kernels/common/kernels.cuh"
#include "base/resources.hpp"
#include "base/stats.hpp"
#include "base/text.hpp"
#include "base/verify.hpp"

namespace nb {
namespace {

using nlohmann::json;
using namespace cudnn;

struct Layer {
  const char* name;
  int c, k, hw, r, stride, pad, groups, count;  // square input hw x hw, filter r x r
  int out_hw() const { return (hw + 2 * pad - r) / stride + 1; }
};

// Every distinct convolution of ResNet-50 (v1.5: stride on the 3x3), 224x224 input, with how
// often it occurs (53 in all), and one MobileNetV2 depthwise layer for a different regime.
const std::vector<Layer>& resnet50_layers() {
  static const std::vector<Layer> l = {
      {"conv1_7x7_3_64_s2", 3, 64, 224, 7, 2, 3, 1, 1},
      {"l1_1x1_64_64", 64, 64, 56, 1, 1, 0, 1, 1},
      {"l1_3x3_64_64", 64, 64, 56, 3, 1, 1, 1, 3},
      {"l1_1x1_64_256", 64, 256, 56, 1, 1, 0, 1, 4},
      {"l1_1x1_256_64", 256, 64, 56, 1, 1, 0, 1, 2},
      {"l2_1x1_256_128", 256, 128, 56, 1, 1, 0, 1, 1},
      {"l2_3x3_128_128_s2", 128, 128, 56, 3, 2, 1, 1, 1},
      {"l2_1x1_128_512", 128, 512, 28, 1, 1, 0, 1, 4},
      {"l2_1x1_256_512_s2", 256, 512, 56, 1, 2, 0, 1, 1},
      {"l2_1x1_512_128", 512, 128, 28, 1, 1, 0, 1, 3},
      {"l2_3x3_128_128", 128, 128, 28, 3, 1, 1, 1, 3},
      {"l3_1x1_512_256", 512, 256, 28, 1, 1, 0, 1, 1},
      {"l3_3x3_256_256_s2", 256, 256, 28, 3, 2, 1, 1, 1},
      {"l3_1x1_256_1024", 256, 1024, 14, 1, 1, 0, 1, 6},
      {"l3_1x1_512_1024_s2", 512, 1024, 28, 1, 2, 0, 1, 1},
      {"l3_1x1_1024_256", 1024, 256, 14, 1, 1, 0, 1, 5},
      {"l3_3x3_256_256", 256, 256, 14, 3, 1, 1, 1, 5},
      {"l4_1x1_1024_512", 1024, 512, 14, 1, 1, 0, 1, 1},
      {"l4_3x3_512_512_s2", 512, 512, 14, 3, 2, 1, 1, 1},
      {"l4_1x1_512_2048", 512, 2048, 7, 1, 1, 0, 1, 3},
      {"l4_1x1_1024_2048_s2", 1024, 2048, 14, 1, 2, 0, 1, 1},
      {"l4_1x1_2048_512", 2048, 512, 7, 1, 1, 0, 1, 2},
      {"l4_3x3_512_512", 512, 512, 7, 3, 1, 1, 1, 2},
  };
  return l;
}
const Layer kDepthwise = {"mbv2_dw3x3_144", 144, 144, 56, 3, 1, 1, 144, 1};

const Layer* find_layer(const std::string& name) {
  for (const auto& l : resnet50_layers())
    if (name == l.name) return &l;
  if (name == kDepthwise.name) return &kDepthwise;
  return nullptr;
}

// A device allocation that turns "out of memory" into a recorded "does not fit".
DeviceBuffer alloc_or_skip(CaseContext& ctx, size_t bytes, const std::string& what) {
  try {
    return DeviceBuffer(bytes);
  } catch (const CudaError& e) {
    if (!e.out_of_memory()) throw;
    size_t free_b = 0, total_b = 0;
    (void)cudaMemGetInfo(&free_b, &total_b);
    ctx.skip("out of memory: does not fit: asked for " + std::to_string(bytes) + " bytes for " + what + ", " +
             std::to_string(free_b) + " bytes free");
  }
}

// The smallest batch of each (GPU, precision, layout) series that did not fit.
OomSeries& oom_series() {
  static OomSeries o;
  return o;
}

// Descriptors and buffers of one convolution of a square layer at one batch size.
struct Conv {
  const Layer& L;
  const Prec& P;
  int64_t n;
  ConvDesc d;
  int p = 0;  // output height = width
  DeviceBuffer bx, by, bw, bdy, bdx, bdw;
  static ConvShape shape_of(const Layer& l, int64_t batch) {
    ConvShape s;
    s.n = batch;
    s.c = l.c;
    s.h = s.w = l.hw;
    s.k = l.k;
    s.r = s.s = l.r;
    s.stride = l.stride;
    s.pad = l.pad;
    s.groups = l.groups;
    return s;
  }
  Conv(const Layer& l, const Prec& pr, bool nhwc, int64_t batch)
      : L(l), P(pr), n(batch), d(shape_of(l, batch), pr, nhwc), p(d.out_h()) {}
  size_t x_elems() const { return d.x_elems(); }
  size_t y_elems() const { return d.y_elems(); }
  size_t w_elems() const { return d.w_elems(); }
  double flops() const { return d.flops(); }
  ConvBuffers buffers() const { return {bx.get(), bw.get(), by.get(), bdy.get(), bdx.get(), bdw.get()}; }
  // Element offsets in the chosen layout.
  size_t xi(size_t in, size_t c, size_t h, size_t wd) const {
    return !d.nhwc() ? ((in * L.c + c) * L.hw + h) * L.hw + wd : ((in * L.hw + h) * L.hw + wd) * L.c + c;
  }
  size_t yi(size_t in, size_t k, size_t h, size_t wd) const {
    return !d.nhwc() ? ((in * L.k + k) * p + h) * p + wd : ((in * p + h) * p + wd) * L.k + k;
  }
  size_t wi(size_t k, size_t c, size_t r, size_t s) const {
    const size_t cg = size_t(L.c / L.groups);
    return !d.nhwc() ? ((k * cg + c) * L.r + r) * L.r + s : ((k * L.r + r) * L.r + s) * cg + c;
  }
  void allocate(CaseContext& ctx, bool backward) {
    bx = alloc_or_skip(ctx, x_elems() * P.elem, "the input");
    by = alloc_or_skip(ctx, y_elems() * P.elem, "the output");
    bw = alloc_or_skip(ctx, w_elems() * P.elem, "the filter");
    if (backward) {
      bdy = alloc_or_skip(ctx, y_elems() * P.elem, "the output gradient");
      bdx = alloc_or_skip(ctx, x_elems() * P.elem, "the input gradient");
      bdw = alloc_or_skip(ctx, w_elems() * P.elem, "the filter gradient");
    }
    cudaStream_t s = ctx.stream();
    kernels::launch_fill_random(s, bx.get(), x_elems(), P.fill, 0xC0 + uint64_t(L.c));
    kernels::launch_fill_random(s, bw.get(), w_elems(), P.fill, 0xC1 + uint64_t(L.k));
    if (backward) kernels::launch_fill_random(s, bdy.get(), y_elems(), P.fill, 0xC2 + uint64_t(L.k));
    NB_CUDA_LAUNCH();
    NB_CUDA(cudaStreamSynchronize(s));
  }
  AlgoChoice choose(cudnnHandle_t h, Pass pass, DeviceBuffer& ws, cudaStream_t s, const GpuInfo& g) {
    return choose_algo(h, d, pass, buffers(), ws, s, g.name);
  }
  void run(cudnnHandle_t h, Pass pass, const AlgoChoice& ch, void* ws, cudaStream_t s) {
    run_pass(h, d, pass, ch, buffers(), ws, s);
  }
};

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

// Checks `samples` sampled outputs of a pass against float64 sums over the stored inputs.
// Returns the summary; sets failures.
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

void run_layer_case(CaseContext& ctx, const Layer& L, const Prec& P, bool nhwc, int64_t batch, Pass pass) {
  cudnnHandle_t h = handle_for(ctx.gpu().index);
  Conv c(L, P, nhwc, batch);
  c.allocate(ctx, pass != Pass::fwd);
  DeviceBuffer find_ws = alloc_or_skip(ctx, find_workspace_limit(), "the algorithm search workspace");
  const size_t search_limit = find_ws.bytes();
  const AlgoChoice ch = c.choose(h, pass, find_ws, ctx.stream(), ctx.gpu());
  find_ws.reset();
  DeviceBuffer ws = alloc_or_skip(ctx, ch.workspace, "the workspace");
  ctx.measure([&](cudaStream_t s) { c.run(h, pass, ch, ws.get(), s); });
  // FP16 convolutions accumulate in FP32 (FLOAT compute type): below 7.0 they run on the FP32 units.
  const std::string data = P.data == CUDNN_DATA_HALF ? "fp16" : P.math == CUDNN_FMA_MATH ? "fp32" : "tf32";
  ctx.set_throughput("tflops", c.flops() / 1e12, peak_key_for(data, data == "tf32" ? "tf32" : "fp32", ctx.gpu().cc()));
  const Stats st = compute_stats(ctx.output().measurement->samples_s);
  ctx.metrics()["images_per_s"] = double(batch) / st.median;
  ctx.metrics()["workspace_bytes"] = double(ch.workspace);
  ctx.details()["algorithm"] = {{"algo", ch.algo}, {"workspace_bytes", ch.workspace},
                                {"math_type", int(ch.math)}, {"candidates", ch.candidates},
                                {"cudnn_find_ms", ch.find_ms}, {"trial_us", ch.trial_us},
                                {"api", "cudnnFind*AlgorithmEx, every candidate timed again"},
                                {"trials", ch.trials}, {"search_workspace_limit_bytes", search_limit},
                                {"from_cache", ch.from_cache}, {"source", ch.source}, {"rounds", ch.rounds}};
  size_t failures = 0;
  std::string worst;
  json v = verify_pass(c, pass, 16, failures, worst);
  v["reference"] = "float64 direct convolution of the stored inputs on the host";
  ctx.details()["verification"] = v;
  if (failures) ctx.wrong(std::to_string(failures) + " sampled outputs outside the bound; first: " + worst);
}

void run_network_case(CaseContext& ctx, const Prec& P, bool nhwc, int64_t batch) {
  const GpuInfo& g = ctx.gpu();
  const std::string series = std::to_string(g.index) + "/" + P.name + "/" + (nhwc ? "nhwc" : "nchw");
  oom_series().skip_if_larger_than_failed(ctx, series, batch);
  cudnnHandle_t h = handle_for(g.index);
  size_t free0 = 0, total = 0;
  NB_CUDA(cudaMemGetInfo(&free0, &total));
  try {
    std::vector<std::unique_ptr<Conv>> convs;
    std::vector<DeviceBuffer> saved;  // activations a training step keeps for backward
    for (const auto& L : resnet50_layers()) {
      convs.push_back(std::make_unique<Conv>(L, P, nhwc, batch));
      Conv& c = *convs.back();
      c.allocate(ctx, true);
      for (int i = 1; i < L.count; ++i)
        saved.push_back(alloc_or_skip(ctx, (c.x_elems() + c.y_elems()) * P.elem, "saved activations"));
    }
    DeviceBuffer find_ws = alloc_or_skip(ctx, find_workspace_limit(), "the algorithm search workspace");
    ctx.details()["search_workspace_limit_bytes"] = find_ws.bytes();
    std::vector<std::array<AlgoChoice, 3>> chosen;
    size_t max_ws = 0;
    for (auto& c : convs) {
      std::array<AlgoChoice, 3> a;
      for (int p = 0; p < 3; ++p) {
        a[size_t(p)] = c->choose(h, Pass(p), find_ws, ctx.stream(), g);
        max_ws = std::max(max_ws, a[size_t(p)].workspace);
      }
      chosen.push_back(a);
    }
    find_ws.reset();
    DeviceBuffer ws = alloc_or_skip(ctx, max_ws, "the workspace");
    size_t free_peak = 0;
    NB_CUDA(cudaMemGetInfo(&free_peak, &total));
    const double peak_bytes = double(free0) - double(free_peak);

    MeasureConfig sub = ctx.config();
    sub.fixed_samples = 10;
    sub.warmup_s = 0;
    std::vector<double> net(sub.fixed_samples, 0.0), fwd_only(sub.fixed_samples, 0.0);
    json layers = json::array();
    for (size_t i = 0; i < convs.size(); ++i) {
      Conv& c = *convs[i];
      json lj = {{"layer", c.L.name}, {"count", c.L.count}};
      for (int p = 0; p < 3; ++p) {
        const AlgoChoice& ch = chosen[i][size_t(p)];
        const Measurement m = ctx.measure_sub([&](cudaStream_t s) { c.run(h, Pass(p), ch, ws.get(), s); }, sub);
        for (size_t j = 0; j < net.size() && j < m.samples_s.size(); ++j) {
          net[j] += c.L.count * m.samples_s[j];
          if (p == 0) fwd_only[j] += c.L.count * m.samples_s[j];
        }
        const double med = compute_stats(m.samples_s).median;
        lj[std::string(pass_name(Pass(p))) + "_us"] = med * 1e6;
        lj[std::string(pass_name(Pass(p))) + "_algo"] = ch.algo;
        lj[std::string(pass_name(Pass(p))) + "_algo_source"] = ch.source;
        lj[std::string(pass_name(Pass(p))) + "_math_type"] = int(ch.math);
        // What the choice timed, compactly: one [algo, math type, median us, samples] per candidate.
        json tried = json::array();
        for (const json& t : ch.trials)
          if (t.contains("median_us"))
            tried.push_back({t.value("algo", -1), t.value("math_type", -1), t["median_us"], t.value("samples", 0)});
        if (!tried.empty()) lj[std::string(pass_name(Pass(p))) + "_choice"] = tried;
      }
      // Forward verified on every layer (the backward passes in the layer cases).
      size_t failures = 0;
      std::string worst;
      c.run(h, Pass::fwd, chosen[i][0], ws.get(), ctx.stream());
      NB_CUDA(cudaStreamSynchronize(ctx.stream()));
      lj["verification"] = verify_pass(c, Pass::fwd, 8, failures, worst);
      if (failures) ctx.wrong(std::string(c.L.name) + ": " + worst);
      layers.push_back(lj);
    }
    Measurement total_m;
    total_m.samples_s = net;
    total_m.stop = StopReason::fixed;
    total_m.batch = 1;
    ctx.set_measurement(total_m);
    double flops = 0;
    for (auto& c : convs) flops += 3.0 * c->flops() * c->L.count;
    ctx.set_throughput("tflops", flops / 1e12, "");
    const double med = compute_stats(net).median, fmed = compute_stats(fwd_only).median;
    ctx.metrics()["train_images_per_s"] = double(batch) / med;
    ctx.metrics()["fwd_images_per_s"] = double(batch) / fmed;
    ctx.metrics()["fwd_time_us"] = fmed * 1e6;
    ctx.metrics()["peak_memory_bytes"] = peak_bytes;
    ctx.metrics()["memory_fraction_x"] = peak_bytes / double(g.memory_bytes);
    ctx.metrics()["workspace_bytes"] = double(max_ws);
    ctx.details()["layers"] = layers;
    ctx.details()["memory_model"] =
        "measured with cudaMemGetInfo: every convolution's input, output and gradients for all 53 "
        "convolutions of ResNet-50 (inputs and outputs kept for backward), the filters and their "
        "gradients, and the largest workspace; other layers (batch norm, ReLU, pooling) are not included";
    ctx.details()["flops_note"] = "forward + backward-data + backward-filter, each 2 N K P Q C R S, weighted by occurrence";
  } catch (const SkipCase& s) {
    if (s.kind == ReasonKind::oom) oom_series().failed(series, batch);
    throw;
  }
}

class ConvFamily : public Family {
 public:
  std::string name() const override { return "conv"; }
  std::string description() const override {
    return "cuDNN convolution: ResNet-50 layers fwd/bwd-data/bwd-filter, FP32/TF32/FP16, NCHW/NHWC, batch sweep";
  }
  std::vector<Case> cases(Suite suite) const override {
    std::vector<Case> out;
    auto layer_case = [&](const Layer& L, const Prec& P, bool nhwc, int64_t batch, Pass pass) {
      Case c;
      c.family = "conv";
      c.name = std::string("layer/") + L.name + "/" + P.name + "/" + (nhwc ? "nhwc" : "nchw") + "/" + pass_name(pass) +
               "/b" + std::to_string(batch);
      c.params = {{"layer", L.name}, {"precision", P.name}, {"layout", nhwc ? "nhwc" : "nchw"}, {"pass", pass_name(pass)},
                  {"batch", batch}, {"c", L.c}, {"k", L.k}, {"hw", L.hw}, {"r", L.r}, {"stride", L.stride},
                  {"groups", L.groups}};
      const Prec* pp = &P;
      const Layer* lp = &L;
      c.available = [pp](const GpuInfo& g) { return prec_available(*pp, g); };
      c.run = [lp, pp, nhwc, batch, pass](CaseContext& ctx) { run_layer_case(ctx, *lp, *pp, nhwc, batch, pass); };
      out.push_back(std::move(c));
    };
    auto net_case = [&](const Prec& P, bool nhwc, int64_t batch) {
      Case c;
      c.family = "conv";
      c.name = std::string("resnet50/") + P.name + "/" + (nhwc ? "nhwc" : "nchw") + "/b" + std::to_string(batch);
      c.params = {{"layer", "resnet50_total"}, {"network", "resnet50"}, {"precision", P.name},
                  {"layout", nhwc ? "nhwc" : "nchw"}, {"pass", "train"}, {"batch", batch}};
      const Prec* pp = &P;
      c.available = [pp](const GpuInfo& g) { return prec_available(*pp, g); };
      c.run = [pp, nhwc, batch](CaseContext& ctx) { run_network_case(ctx, *pp, nhwc, batch); };
      out.push_back(std::move(c));
    };
    const Layer& l3x3 = *find_layer("l1_3x3_64_64");
    if (suite == Suite::quick) {
      layer_case(l3x3, prec_by_name("fp16"), false, 64, Pass::fwd);
      layer_case(l3x3, prec_by_name("tf32"), false, 64, Pass::fwd);
      layer_case(l3x3, prec_by_name("fp16"), false, 32, Pass::bwd_data);
      layer_case(l3x3, prec_by_name("fp16"), false, 32, Pass::bwd_filter);
      net_case(prec_by_name("fp16"), false, 32);
      return out;
    }
    for (const Prec* P : all_precs())
      for (bool nhwc : {false, true})
        for (int64_t b = 1; b <= 1024; b *= 2) net_case(*P, nhwc, b);
    for (const Prec* P : all_precs())
      for (bool nhwc : {false, true}) {
        for (int64_t b : {32, 64, 128, 256})
          for (Pass pass : {Pass::fwd, Pass::bwd_data, Pass::bwd_filter}) layer_case(l3x3, *P, nhwc, b, pass);
        layer_case(kDepthwise, *P, nhwc, 64, Pass::fwd);
      }
    return out;
  }
};

const Registrar registrar(std::make_unique<ConvFamily>());

// The batch-size recommendation over the network cases of a sweep.
const AnalysisRegistrar batch_analysis({
    "batch_recommendation",
    [](const json& records) {
      for (const auto& r : records)
        if (r.value("family", "") == "conv" && r["params"].value("layer", "") == "resnet50_total") return true;
      return false;
    },
    [](const json& records, const AnalysisContext& ctx) { return batch_recommendation(records, ctx.memory_fraction); },
    [](const json& a) { return batch_recommendation_lines(a); }});

}  // namespace

// The ResNet-50 convolution list, for tests.
std::vector<std::pair<std::string, int>> resnet50_conv_counts() {
  std::vector<std::pair<std::string, int>> out;
  for (const auto& l : resnet50_layers()) out.emplace_back(l.name, l.count);
  return out;
}

}  // namespace nb
