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

#include "bench/benchmark.hpp"
#include "conv_metrics.hpp"
#include "conv_layer.hpp"
#include "shared/cudnn/conv_cost.hpp"
#include "shared/cudnn/cudnn_conv.hpp"
#include "shared/common/oom_series.hpp"
#include "kernels/common/kernels.cuh"
#include "base/resources.hpp"
#include "base/stats.hpp"
#include "base/text.hpp"
#include "base/verify.hpp"

namespace nb {

// The peak a convolution of this data type is judged against: FP16 convolutions accumulate in
// FP32 (FLOAT compute type), so below 7.0 they run on the FP32 units (the FP32 peak); from 7.0 on
// the tensor cores. Pure (tests/test_p40.cpp).
std::string conv_peak_key(const std::string& data, int cc) {
  return peak_key_for(data, data == "tf32" ? "tf32" : "fp32", cc);
}

}  // namespace nb

namespace nb::conv {
namespace {

using nlohmann::json;

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

// The smallest batch of each (GPU, precision, layout) series that did not fit, kept by the
// Session with the GPU's resources (its own type: the train family keeps its own series).
struct ConvOomSeries : OomSeries {};
OomSeries& oom_series(CaseContext& ctx) { return ctx.gpu_resources().get<ConvOomSeries>(); }

void run_layer_case(CaseContext& ctx, const Layer& L, const Prec& P, bool nhwc, int64_t batch, Pass pass) {
  const Libraries libs = libraries(ctx, ctx.gpu().index);
  const cudnnHandle_t h = libs.cudnn();
  Conv c(L, P, nhwc, batch);
  c.allocate(ctx, pass != Pass::fwd);
  DeviceBuffer find_ws = alloc_or_skip(ctx, find_workspace_limit(libs), "the algorithm search workspace");
  const size_t search_limit = find_ws.bytes();
  const AlgoChoice ch = c.choose(libs, pass, find_ws, ctx.stream(), ctx.gpu());
  find_ws.reset();
  DeviceBuffer ws = alloc_or_skip(ctx, ch.workspace, "the workspace");
  ctx.measure([&](cudaStream_t s) { c.run(h, pass, ch, ws.get(), s); });
  const std::string data = P.data == CUDNN_DATA_HALF ? "fp16" : P.math == CUDNN_FMA_MATH ? "fp32" : "tf32";
  // An FFT or Winograd algorithm does fewer multiplications than the direct convolution the rate
  // counts: on an H200 FP32 FFT tiling read 108% of the FMA peak at batch 256. Its rate is an
  // effective one and is not judged against the peak (the above-peak guard would call it wrong).
  const bool transformed = transforms_arithmetic(pass, ch.algo);
  ctx.set_throughput(conv::kTflops, c.flops() / 1e12, transformed ? "" : conv_peak_key(data, ctx.gpu().cc()));
  if (transformed)
    ctx.details()["work_note"] = "the algorithm (FFT or Winograd) does fewer multiplications than a direct convolution: "
                                 "tflops counts the direct convolution's work (an effective rate) and has no percent of peak";
  const Stats st = compute_stats(ctx.output().measurement->samples_s);
  ctx.metric(conv::kImagesPerS, double(batch) / st.median);
  ctx.metric(kWorkspaceMetric, double(ch.workspace));
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

// Every distinct convolution of ResNet-50 at one batch, with its buffers and the activations a
// training step keeps for backward, its three passes' algorithms and the largest workspace.
struct Network {
  std::vector<std::unique_ptr<Conv>> convs;
  std::vector<DeviceBuffer> saved;  // activations a training step keeps for backward
  std::vector<std::array<AlgoChoice, 3>> chosen;
  size_t max_ws = 0;
  DeviceBuffer ws;
};

void build_network(CaseContext& ctx, const Libraries& libs, const Prec& P, bool nhwc, int64_t batch, Network& net) {
  for (const auto& L : resnet50_layers()) {
    net.convs.push_back(std::make_unique<Conv>(L, P, nhwc, batch));
    Conv& c = *net.convs.back();
    c.allocate(ctx, true);
    for (int i = 1; i < L.count; ++i)
      net.saved.push_back(alloc_or_skip(ctx, (c.x_elems() + c.y_elems()) * P.elem, "saved activations"));
  }
  DeviceBuffer find_ws = alloc_or_skip(ctx, find_workspace_limit(libs), "the algorithm search workspace");
  ctx.details()["search_workspace_limit_bytes"] = find_ws.bytes();
  for (auto& c : net.convs) {
    std::array<AlgoChoice, 3> a;
    for (int p = 0; p < 3; ++p) {
      a[size_t(p)] = c->choose(libs, Pass(p), find_ws, ctx.stream(), ctx.gpu());
      net.max_ws = std::max(net.max_ws, a[size_t(p)].workspace);
    }
    net.chosen.push_back(a);
  }
  find_ws.reset();
  net.ws = alloc_or_skip(ctx, net.max_ws, "the workspace");
}

// Each pass of one layer timed (10 samples), added `count` times into the network's samples
// (`fwd` the forward ones); the layer's entry of details.layers.
json time_layer(CaseContext& ctx, cudnnHandle_t h, Conv& c, const std::array<AlgoChoice, 3>& chosen, void* ws,
                std::vector<double>& net, std::vector<double>& fwd) {
  MeasureConfig sub = ctx.config();
  sub.fixed_samples = net.size();
  sub.warmup_s = 0;
  json lj = {{"layer", c.L.name}, {"count", c.L.count}};
  for (int p = 0; p < 3; ++p) {
    const AlgoChoice& ch = chosen[size_t(p)];
    const Measurement m = ctx.measure_sub([&](cudaStream_t s) { c.run(h, Pass(p), ch, ws, s); }, sub);
    for (size_t j = 0; j < net.size() && j < m.samples_s.size(); ++j) {
      net[j] += c.L.count * m.samples_s[j];
      if (p == 0) fwd[j] += c.L.count * m.samples_s[j];
    }
    const std::string pass = pass_name(Pass(p));
    lj[pass + "_us"] = compute_stats(m.samples_s).median * 1e6;
    lj[pass + "_algo"] = ch.algo;
    lj[pass + "_algo_source"] = ch.source;
    lj[pass + "_math_type"] = int(ch.math);
    // What the choice timed, compactly: one [algo, math type, median us, samples] per candidate.
    json tried = json::array();
    for (const json& t : ch.trials)
      if (t.contains("median_us"))
        tried.push_back({t.value("algo", -1), t.value("math_type", -1), t["median_us"], t.value("samples", 0)});
    if (!tried.empty()) lj[pass + "_choice"] = tried;
  }
  // Forward verified on every layer (the backward passes in the layer cases).
  size_t failures = 0;
  std::string worst;
  c.run(h, Pass::fwd, chosen[0], ws, ctx.stream());
  NB_CUDA(cudaStreamSynchronize(ctx.stream()));
  lj["verification"] = verify_pass(c, Pass::fwd, 8, failures, worst);
  if (failures) ctx.wrong(std::string(c.L.name) + ": " + worst);
  return lj;
}

void run_network_case(CaseContext& ctx, const Prec& P, bool nhwc, int64_t batch) {
  const GpuInfo& g = ctx.gpu();
  const std::string series = std::to_string(g.index) + "/" + P.name + "/" + (nhwc ? "nhwc" : "nchw");
  OomSeries& oom = oom_series(ctx);
  oom.skip_if_larger_than_failed(ctx, series, batch);
  const Libraries libs = libraries(ctx, g.index);
  size_t free0 = 0, total = 0;
  NB_CUDA(cudaMemGetInfo(&free0, &total));
  try {
    Network net;
    build_network(ctx, libs, P, nhwc, batch, net);
    size_t free_peak = 0;
    NB_CUDA(cudaMemGetInfo(&free_peak, &total));
    const double peak_bytes = double(free0) - double(free_peak);
    std::vector<double> all(10, 0.0), fwd_only(10, 0.0);
    json layers = json::array();
    for (size_t i = 0; i < net.convs.size(); ++i)
      layers.push_back(time_layer(ctx, libs.cudnn(), *net.convs[i], net.chosen[i], net.ws.get(), all, fwd_only));
    Measurement total_m;
    total_m.samples_s = all;
    total_m.stop = StopReason::fixed;
    total_m.batch = 1;
    ctx.set_measurement(total_m);
    double flops = 0;
    for (auto& c : net.convs) flops += 3.0 * c->flops() * c->L.count;
    ctx.set_throughput(conv::kTflops, flops / 1e12, "");
    const double med = compute_stats(all).median, fmed = compute_stats(fwd_only).median;
    ctx.metric(conv::kTrainImagesPerS, double(batch) / med);
    ctx.metric(conv::kFwdImagesPerS, double(batch) / fmed);
    ctx.metric(conv::kFwdTime, fmed * 1e6);
    ctx.metric(conv::kPeakMemory, peak_bytes);
    ctx.metric(conv::kMemoryFraction, peak_bytes / double(g.memory_bytes));
    ctx.metric(kWorkspaceMetric, double(net.max_ws));
    ctx.details()["layers"] = layers;
    ctx.details()["memory_model"] =
        "measured with cudaMemGetInfo: every convolution's input, output and gradients for all 53 "
        "convolutions of ResNet-50 (inputs and outputs kept for backward), the filters and their "
        "gradients, and the largest workspace; other layers (batch norm, ReLU, pooling) are not included";
    ctx.details()["flops_note"] = "forward + backward-data + backward-filter, each 2 N K P Q C R S, weighted by occurrence";
  } catch (const SkipCase& s) {
    if (s.kind == ReasonKind::oom) oom.failed(series, batch);
    throw;
  }
}

// The cases' axes. A layer case: params layer, precision, layout, pass, batch and the layer's
// shape (c, k, hw, r, stride, groups); name layer/<layer>/<precision>/<layout>/<pass>/b<batch>.
// A network case: params layer resnet50_total, network, precision, layout, pass train, batch;
// name resnet50/<precision>/<layout>/b<batch>.
AxisValue layer_value(const Layer& L, int64_t batch, Pass pass) {
  return {{{"layer", L.name}, {"pass", pass_name(pass)}, {"batch", batch}, {"c", L.c}, {"k", L.k}, {"hw", L.hw},
           {"r", L.r}, {"stride", L.stride}, {"groups", L.groups}},
          ""};
}

// Every precision and layout of the listed layer runs (the runs vary fastest).
Axes layer_axes(const std::vector<AxisValue>& runs, const std::vector<std::string>& precs, const std::vector<std::string>& layouts) {
  Axes a;
  a.add_string("precision", precs).add_string("layout", layouts).add_values("run", runs);
  return a.name("layer/{layer}/{precision}/{layout}/{pass}/b{batch}");
}

Axes network_axes(const std::vector<std::string>& precs, const std::vector<std::string>& layouts,
                  const std::vector<int64_t>& batches) {
  Axes a;
  a.set("layer", "resnet50_total").set("network", "resnet50").add_string("precision", precs).add_string("layout", layouts);
  return a.set("pass", "train").add_int64("batch", batches, "b").name("resnet50/{precision}/{layout}/{batch}");
}

Pass pass_of(const std::string& name) {
  for (Pass p : {Pass::fwd, Pass::bwd_data, Pass::bwd_filter})
    if (name == pass_name(p)) return p;
  throw Error("unknown convolution pass " + name);
}

// The cost model (bench/cost.hpp): a layer case chooses one pass's algorithm (seeded, or reused
// from the network cases at the same batch) and samples it; it verifies sampled outputs on the host.
double layer_flops(const Layer& L, int64_t batch) {
  return 2.0 * double(batch) * L.k * double(L.out_hw()) * L.out_hw() * (L.c / L.groups) * L.r * L.r;
}

CaseCost layer_cost(const CostInput& in, const Layer& L, const Prec& P, int64_t batch) {
  const double op = conv_op_s(P, in.gpu, layer_flops(L, batch));
  CaseCost k;
  k.kind = "conv_layer";
  k.setup_s = kSeededSearchRuns * op + kSearchOverheadS;
  k.sample_s = sampling_s(in.cfg, op);
  return k;
}

// A network case: every distinct layer's three passes chosen (cuDNN's whole search at the first
// batch of a series, else seeded from the nearest batch) and timed 10 samples each.
CaseCost network_cost(const CostInput& in, const Prec& P, bool nhwc, int64_t batch, bool first) {
  CaseCost k;
  k.kind = std::string("conv_network/") + P.name;
  k.sweep = std::string("conv/") + P.name + "/" + (nhwc ? "nhwc" : "nchw");
  k.batch = batch;
  MeasureConfig sub = in.cfg;
  sub.fixed_samples = 10;
  sub.warmup_s = 0;
  for (const Layer& L : resnet50_layers()) {
    const double op = conv_op_s(P, in.gpu, layer_flops(L, batch));
    k.setup_s += 3 * ((first ? kFullSearchRuns : kSeededSearchRuns) * op + kSearchOverheadS);
    k.sample_s += 3 * sampling_s(sub, op);
  }
  return k;
}

void fill_layer(const AxisPoint& p, Case& c) {
  const Prec* pp = &prec_by_name(p.str("precision"));
  const Layer* lp = find_layer(p.str("layer"));
  const bool nhwc = p.str("layout") == "nhwc";
  const int64_t batch = p.int64("batch");
  const Pass pass = pass_of(p.str("pass"));
  c.available = [pp](const GpuInfo& g) { return prec_available(*pp, g); };
  c.run = [lp, pp, nhwc, batch, pass](CaseContext& ctx) { run_layer_case(ctx, *lp, *pp, nhwc, batch, pass); };
  c.cost = [lp, pp, batch](const CostInput& in) { return layer_cost(in, *lp, *pp, batch); };
}

// The network cases of a suite; `first_batch` is each series' first (its search is cuDNN's whole one).
std::function<void(const AxisPoint&, Case&)> fill_network(int64_t first_batch) {
  return [first_batch](const AxisPoint& p, Case& c) {
    const Prec* pp = &prec_by_name(p.str("precision"));
    const bool nhwc = p.str("layout") == "nhwc";
    const int64_t batch = p.int64("batch");
    c.available = [pp](const GpuInfo& g) { return prec_available(*pp, g); };
    c.run = [pp, nhwc, batch](CaseContext& ctx) { run_network_case(ctx, *pp, nhwc, batch); };
    c.cost = [pp, nhwc, batch, first_batch](const CostInput& in) {
      return network_cost(in, *pp, nhwc, batch, batch == first_batch);
    };
  };
}

class ConvFamily : public Family {
 public:
  std::string name() const override { return "conv"; }
  std::string description() const override {
    return "cuDNN convolution: ResNet-50 layers fwd/bwd-data/bwd-filter, FP32/TF32/FP16, NCHW/NHWC, batch sweep";
  }
  std::vector<Case> cases(Suite suite) const override {
    const Layer& l3x3 = *find_layer("l1_3x3_64_64");
    std::vector<Case> out;
    if (suite == Suite::quick) {
      append_cases(out, layer_axes({layer_value(l3x3, 64, Pass::fwd)}, {"fp16", "tf32"}, {"nchw"}).cases("conv", fill_layer));
      append_cases(out, layer_axes({layer_value(l3x3, 32, Pass::bwd_data), layer_value(l3x3, 32, Pass::bwd_filter)}, {"fp16"},
                                   {"nchw"})
                            .cases("conv", fill_layer));
      append_cases(out, network_axes({"fp16"}, {"nchw"}, {32}).cases("conv", fill_network(32)));
      return out;
    }
    std::vector<std::string> precs;
    for (const Prec* P : all_precs()) precs.push_back(P->name);
    // The network's convolutions at a small and a large batch: their throughput by precision and
    // layout. The batch to train at is the train family's sweep (the whole step).
    const std::vector<int64_t> batches(std::begin(kNetworkBatches), std::end(kNetworkBatches));
    append_cases(out, network_axes(precs, {"nchw", "nhwc"}, batches).cases("conv", fill_network(batches.front())));
    std::vector<AxisValue> layers;
    // The 3x3 layer at the network cases' batches (its algorithm choices are theirs).
    for (int64_t b : batches)
      for (Pass pass : {Pass::fwd, Pass::bwd_data, Pass::bwd_filter}) layers.push_back(layer_value(l3x3, b, pass));
    layers.push_back(layer_value(kDepthwise, 64, Pass::fwd));
    append_cases(out, layer_axes(layers, precs, {"nchw", "nhwc"}).cases("conv", fill_layer));
    return out;
  }
};

const Registrar registrar(std::make_unique<ConvFamily>());

}  // namespace
}  // namespace nb::conv

namespace nb {

// The ResNet-50 convolution list, for tests.
std::vector<std::pair<std::string, int>> resnet50_conv_counts() {
  std::vector<std::pair<std::string, int>> out;
  for (const auto& l : conv::resnet50_layers()) out.emplace_back(l.name, l.count);
  return out;
}

}  // namespace nb
