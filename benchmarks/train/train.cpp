// Family train: a framework-free ResNet-50 v1.5 training step (train_step.cpp) per precision
// (fp32, tf32, fp16 = mixed precision), layout (nchw, nhwc) and batch. The step is verified
// (sampled points of the first convolution and the FC; the loss finite and falling over 20 steps
// on the fixed batch), timed whole as one CUDA graph, then profiled by layer kind, and issued call
// by call (host_issue_ms, eager_step_ms: the host's cost a loop without graphs pays); its memory is the arena's
// high-water mark and cudaMemGetInfo's total - free. The full suite sweeps batch 1, 2, 4, ...
// until a batch does not fit (recorded as skipped, reason_kind oom; larger ones smaller_oom).
#include <array>
#include <climits>
#include <functional>
#include <cmath>
#include <map>
#include <mutex>

#include "shared/common/oom_series.hpp"
#include "shared/common/plateau_series.hpp"
#include "bench/benchmark.hpp"
#include "bench/settings.hpp"
#include "base/stats.hpp"
#include "base/text.hpp"
#include "node/power_meter.hpp"
#include "train_analysis.hpp"
#include "train_metrics.hpp"
#include "kernels/train/train_kernels.cuh"
#include "shared/resnet50/step_cost.hpp"
#include "shared/resnet50/train_step.hpp"

namespace nb {
namespace {

using nlohmann::json;
using namespace cudnn;
using train::Kind;
using train::kImagesPerS;
using train::kMemoryFraction;
using train::kPeakMemory;
using train::kStepTime;

// The smallest batch of each (GPU, precision, layout) series that did not fit, kept by the
// Session with the GPU's resources (its own type: the conv family keeps its own series).
struct TrainOomSeries : OomSeries {};
// The throughput of each series' measured batches: the sweep stops at its plateau (bench/sweep.hpp).
struct TrainPlateau : PlateauSeries {};

constexpr int kLossSteps = 20;

// cuDNN's tensor descriptors count elements in 32 bits: a batch whose largest activation has
// 2^31 elements or more cannot be described (FP16 NHWC b4096 failed in cudnnSetTensor4dDescriptor
// with CUDNN_STATUS_NOT_SUPPORTED). Such a batch is skipped before anything is allocated: as out
// of memory when the step's memory plan is over the device's memory, else as unsupported.
void skip_if_undescribable(CaseContext& ctx, const Prec& P, int64_t batch, const std::function<void()>& record_oom) {
  const GpuInfo& g = ctx.gpu();
  const int64_t largest = resnet50::max_activation_elems_per_image(resnet50::net()) * batch;
  if (largest <= int64_t(INT32_MAX)) return;
  const auto plan = resnet50::memory_plan(resnet50::net(), batch, int(P.elem));
  const std::string limit = "its largest activation has " + std::to_string(largest) +
                            " elements, over cuDNN's limit of 2^31 - 1 per tensor";
  if (g.memory_bytes && plan.total() > int64_t(g.memory_bytes)) {
    record_oom();
    ctx.skip("out of memory by the step's memory plan: " + fmt(double(plan.total()) / double(1ull << 30), 1) + " GiB against " +
                 fmt(double(g.memory_bytes) / double(1ull << 30), 1) + " GiB of device memory (not allocated: " + limit + ")",
             ReasonKind::oom);
  }
  ctx.skip("batch " + std::to_string(batch) + " cannot run: " + limit, ReasonKind::unsupported);
}

// Verification: sampled points of the first forward, then the loss over 20 steps of the step as
// one CUDA graph (nothing runs in the capture; the loss steps run the graph, so the check covers
// what is timed). Returns whether the graph was captured (`graph_why`: why not).
bool verify_step(CaseContext& ctx, train::TrainStep& st, std::string& graph_why) {
  cudaStream_t s = ctx.stream();
  st.forward(s);
  size_t failures = 0;
  std::string first;
  json v = st.verify_samples(8, failures, first);
  const bool graph = st.capture_graph(graph_why);
  ctx.details()["cuda_graph"] = graph ? json{{"used", true}} : json{{"used", false}, {"reason", graph_why}};
  std::vector<double> losses;
  for (int i = 0; i < kLossSteps; ++i) {
    st.run(s);
    losses.push_back(st.read_loss());
  }
  bool finite = true;
  for (double l : losses) finite = finite && std::isfinite(l);
  const bool falling = finite && losses.back() < losses.front();
  // fp16: steps skipped for FP16 overflow (their update is not applied). The loss check means
  // something only when most steps were applied.
  const int skipped = st.skipped_steps();
  v["losses"] = losses;
  v["loss_falling"] = falling;
  v["skipped_steps"] = skipped;
  v["loss_scale_final"] = st.loss_scale();
  ctx.details()["verification"] = v;
  if (failures) ctx.wrong(std::to_string(failures) + " sampled layer outputs outside the bound; first: " + first);
  else if (2 * skipped > kLossSteps)
    ctx.wrong(std::to_string(skipped) + " of " + std::to_string(kLossSteps) +
              " steps skipped for non-finite FP16 gradients: the loss check is not meaningful");
  else if (!finite) ctx.wrong("the loss is not finite over " + std::to_string(kLossSteps) + " steps on the fixed batch");
  else if (!falling)
    ctx.wrong("the loss does not fall over " + std::to_string(kLossSteps) + " steps on the fixed batch (" +
              fmt(losses.front(), 4) + " -> " + fmt(losses.back(), 4) + ")");
  return graph;
}

// The time per layer kind (metrics time_<kind>_ms, elementwise_share) and whether it adds up to
// the step of `med` seconds.
void record_profile(CaseContext& ctx, train::TrainStep& st, const std::array<double, train::kKinds>& kinds, double med) {
  double sum = 0;
  for (int k = 0; k < train::kKinds; ++k) {
    ctx.metric(train::kKindTime, train::kind_name(Kind(k)), kinds[size_t(k)]);
    sum += kinds[size_t(k)];
  }
  const double mem_bound = kinds[size_t(Kind::bn)] + kinds[size_t(Kind::elementwise)] + kinds[size_t(Kind::pool)];
  ctx.metric(train::kElementwiseShare, sum > 0 ? mem_bound / sum : 0.0);
  ctx.details()["profile_note"] =
      "time per layer kind: the median over 5 steps queued behind a blocking kernel, with events between the "
      "operations; bn holds the ReLU and the residual add where they are fused into it (details.fusion), "
      "elementwise what runs apart; elementwise_share = (bn + elementwise + pool) / the sum of the kinds";
  ctx.details()["profile_sum_ms"] = sum;
  // The kinds should add up to about the step; when they do not, the split is not to be trusted.
  if (st.profile_host_bound() || sum > 1.15 * med * 1e3 || sum < 0.85 * med * 1e3)
    ctx.details()["profile_warning"] = "the per-kind times add up to " + fmt(sum, 2) + " ms for a " + fmt(med * 1e3, 2) +
                                       " ms step" + (st.profile_host_bound() ? " (the step could not be queued in full "
                                                                                "behind the blocking kernel)" : "") +
                                       ": the split by layer kind is not reliable for this case";
}

// The timed step (the graph, else the eager loop), its call-by-call cost, memory and profile;
// returns the images per second.
double measure_step(CaseContext& ctx, train::TrainStep& st, const train::StepConfig& cfg, bool graph,
                    const std::string& graph_why) {
  const GpuInfo& g = ctx.gpu();
  const int64_t batch = cfg.batch;
  size_t free_b = 0, total_b = 0;
  NB_CUDA(cudaMemGetInfo(&free_b, &total_b));
  const double device_used = double(total_b) - double(free_b);
  // The board's mean power over the timed iterations (NVML's energy counter, else sampled power).
  PowerMeter meter(ctx.nvml(), g.nvml_index);
  meter.start();
  ctx.measure([&](cudaStream_t s) { st.run(s); });
  const auto power = meter.stop();
  const auto kinds = st.profile(5);
  // The same step issued call by call: the host's cost of one step, and what a loop issuing the
  // calls one by one sustains (the host's cost or the GPU's time, whichever is larger).
  const double host_issue = st.host_issue_s(3);
  const double eager = st.eager_step_s(0.3);
  double med = compute_stats(ctx.output().measurement->samples_s).median;
  if (!graph) {
    // Without a graph the measured samples (queued behind a blocking kernel) leave the host's
    // cost out; the step a loop gets is the eager one.
    ctx.details()["step_time_note"] = "no CUDA graph (" + graph_why + "): step_time_ms and images_per_s are the eager "
                                      "loop's; the samples are the GPU's time with the host's cost left out";
    med = std::max(med, eager);
  }
  ctx.set_throughput(train::kTflops, 3.0 * resnet50::net().forward_flops_per_image() * double(batch) / 1e12, "");
  ctx.set_primary_metric(kImagesPerS);
  ctx.metric(kStepTime, med * 1e3);
  ctx.metric(kImagesPerS, double(batch) / med);
  ctx.metric(train::kHostIssue, host_issue * 1e3);
  ctx.metric(train::kEagerStep, eager * 1e3);
  ctx.metric(train::kEagerImagesPerS, double(batch) / eager);
  ctx.metric(kPeakMemory, double(st.peak_bytes()));
  ctx.metric(train::kDeviceUsed, device_used);
  ctx.metric(kMemoryFraction, device_used / double(g.memory_bytes ? g.memory_bytes : total_b));
  ctx.metric(kWorkspaceMetric, double(st.workspace_bytes()));
  // The bytes the memory-bound kinds must move at least (resnet50_net.hpp): against the GPU's
  // memory bandwidth, what a fusing compiler could still save of each kind's time (the report).
  const auto floor = resnet50::memory_bound_floor(resnet50::net(), batch, int(cfg.prec->elem));
  ctx.metric(train::kBnFloor, double(floor.bn));
  ctx.metric(train::kElementwiseFloor, double(floor.elementwise));
  ctx.metric(train::kPoolFloor, double(floor.pool));
  ctx.metric(train::kUpdateFloor, double(floor.update));
  record_profile(ctx, st, kinds, med);
  // What the batch norms on the step's own kernels must move, and, when every batch norm runs
  // them, the bandwidth that makes of the profile's batch-norm time (each reduction's finalize included).
  json traffic = st.bn_traffic();
  const double bn_ms = kinds[size_t(Kind::bn)];
  if (traffic["layers"] == traffic["batch_norm_layers"] && bn_ms > 0)
    traffic["gbps_at_time_bn"] = traffic["total_bytes"].get<double>() / (bn_ms * 1e-3) / 1e9;
  ctx.details()["bn_traffic"] = traffic;
  if (power) {
    ctx.metric(train::kBoardPower, power->mean_power_w);
    ctx.details()["energy"] = {{"method", power->method}, {"energy_j", power->energy_j}, {"seconds", power->seconds},
                               {"samples", power->samples}};
  }
  return double(batch) / med;
}

// What the record says of the step itself: algorithms, loss scale, optimizer, where its memory goes.
void describe_step(CaseContext& ctx, const train::TrainStep& st, const train::StepConfig& cfg) {
  const Prec& P = *cfg.prec;
  ctx.details()["fusion"] = st.fusion_details();
  ctx.details()["conv_layout"] = train::conv_layout_name(cfg);
  ctx.details()["algorithms"] = st.algorithms();
  ctx.details()["loss_scale"] = cfg.loss_scale;
  ctx.details()["optimizer"] = {{"sgd_lr", cfg.lr}, {"momentum", cfg.momentum}, {"weight_decay", cfg.weight_decay}};
  ctx.details()["memory_plan_bytes"] = st.memory_details();
  const std::string note = train::fp16_arithmetic_note(P.data == CUDNN_DATA_HALF, ctx.gpu().cc_major, ctx.gpu().cc_minor);
  if (!note.empty()) ctx.details()["note"] = note;
}

// A batch past the sweep's plateau is not run; its record says what the step's memory plan
// predicts for it (the memory curve the batch rule needs, without running the batch).
void skip_past_plateau(CaseContext& ctx, const std::string& series, const Prec& P, int64_t batch, bool fused,
                       bool convert_images) {
  const auto why = ctx.gpu_resources().get<TrainPlateau>().stop_reason(ctx.settings(), series, batch);
  if (!why) return;
  const auto plan = resnet50::memory_plan(resnet50::net(), batch, int(P.elem), fused, convert_images);
  ctx.details()["memory_plan_total_bytes"] = plan.total();
  if (ctx.gpu().memory_bytes) ctx.details()["memory_plan_fraction"] = double(plan.total()) / double(ctx.gpu().memory_bytes);
  ctx.skip(*why, ReasonKind::plateau);
}

void run_train_case(CaseContext& ctx, const Prec& P, bool nhwc, int64_t batch) {
  const GpuInfo& g = ctx.gpu();
  const std::string series = std::to_string(g.index) + "/" + P.name + "/" + (nhwc ? "nhwc" : "nchw");
  OomSeries& oom = ctx.gpu_resources().get<TrainOomSeries>();
  oom.skip_if_larger_than_failed(ctx, series, batch);
  auto record_oom = [&] { oom.failed(series, batch); };
  skip_if_undescribable(ctx, P, batch, record_oom);
  train::StepConfig cfg;
  cfg.prec = &P;
  // The layout the step runs in: the images' (`nhwc`), or NHWC for NCHW images on tensor cores
  // (NODEBENCH_TRAIN_CONV_LAYOUT, train_fusion.hpp); details.conv_layout says which.
  train::set_layouts(cfg, nhwc, train::step_runs_nhwc(g.cc(), P.name, nhwc, train::conv_layout_setting(ctx.settings())));
  cfg.batch = batch;
  cfg.loss_scale = train::default_loss_scale(P);
  cfg.lr = kernels::sgd_lr_for_batch(cfg.batch);
  cfg.fusion = train::fusion_setting(ctx.settings());
  cfg.bn_grid = train::bn_grid_setting(ctx.settings());
  skip_past_plateau(ctx, series, P, batch, cfg.fusion != train::Fusion::off, cfg.images_nchw);
  try {
    train::TrainStep st(cfg, cudnn::libraries(ctx, g.index), g.index, g.name, ctx.stream());
    st.setup();
    std::string graph_why;
    const bool graph = verify_step(ctx, st, graph_why);
    const double images_per_s = measure_step(ctx, st, cfg, graph, graph_why);
    describe_step(ctx, st, cfg);
    ctx.gpu_resources().get<TrainPlateau>().measured(series, batch, images_per_s);
  } catch (const train::OutOfMemory& e) {
    record_oom();
    ctx.skip(e.message(), ReasonKind::oom);
  } catch (const CudaError& e) {
    if (e.out_of_memory()) record_oom();
    throw;
  }
}

Availability train_available(const Prec& P, const GpuInfo& g) { return prec_available(P, g); }

// The cost model (bench/cost.hpp; the step's in shared/resnet50/step_cost.hpp). Steps outside the
// timed sampling: the first forward of the verification, the 20 loss steps, 5 profiled steps; 3
// issued call by call for the host's cost, and at least 0.3 s of the call-by-call loop.
constexpr double kUntimedSteps = 1 + kLossSteps + 5;
constexpr double kHostIssueSteps = 3;

// `searched`: how the case's convolutions are chosen (cuDNN's whole search, seeded, or none: the
// full suite's conv network cases chose them at this batch before).
enum class Search { full, seeded, none };

CaseCost train_cost(const CostInput& in, const Prec& P, bool nhwc, int64_t batch, Search searched) {
  const GpuInfo& g = in.gpu;
  CaseCost k;
  // A kind per precision and layout: on an H200 the FP16 NCHW steps took 1.3x what the model of
  // the two layouts together predicts and the NHWC ones 0.8x, so the pace of one layout's sweep
  // misled the estimate for the other's (+28% at 80% of two full runs,
  // results/h200/2026-12-02-hostlink-pool/). cuDNN's whole search (a series' first batch) grows
  // with the batch far beyond what its runs of the pass's own time say (the slow algorithms it
  // tries): a kind of its own, fitted apart.
  // The kind's layout is the one the step runs in (NODEBENCH_TRAIN_CONV_LAYOUT's default, auto: an
  // NCHW step on tensor cores runs NHWC and costs as one); the sweep is the images' series.
  const bool runs_nhwc = train::step_runs_nhwc(g.cc(), P.name, nhwc, train::ConvLayoutSetting::automatic);
  k.sweep = std::string("train/") + P.name + "/" + (nhwc ? "nhwc" : "nchw");
  k.kind = std::string("train/") + P.name + "/" + (runs_nhwc ? "nhwc" : "nchw") + (searched == Search::full ? "/full_search" : "");
  k.batch = batch;
  // A batch the memory plan puts over the device, or that cuDNN cannot describe, is skipped
  // before anything is allocated.
  if (train::skipped_unrun(P, g, batch)) return k;
  const double compute = train::step_compute_s(P, g, batch);
  const double step = train::step_s(P, g, batch), eager = train::eager_step_s(P, g, batch);
  // The whole search times the slow algorithms too (at the CUDA cores' pace); a seeded one times a
  // few fast candidates.
  const double search = searched == Search::full     ? kFullSearchRuns * std::max(compute, train::step_compute_cuda_cores_s(g, batch))
                        : searched == Search::seeded ? kSeededSearchRuns * compute
                                                     : 0.0;
  k.setup_s = search + kUntimedSteps * step + kHostIssueSteps * eager + std::max(0.3, eager);
  k.sample_s = sampling_s(in.cfg, step);
  return k;
}

// Params precision, layout, batch; name resnet50/<precision>/<layout>/b<batch>.
Axes train_axes(const std::vector<std::string>& precs, const std::vector<std::string>& layouts,
                const std::vector<int64_t>& batches) {
  return Axes().add_string("precision", precs).add_string("layout", layouts).add_int64("batch", batches, "b").name(
      "resnet50/{precision}/{layout}/{batch}");
}

std::vector<Case> make_cases(Suite suite) {
  const int64_t first = suite == Suite::quick ? 32 : 1;  // each series' first batch: cuDNN's whole search
  auto fill = [first, suite](const AxisPoint& p, Case& c) {
    const Prec* pp = &prec_by_name(p.str("precision"));
    const bool nhwc = p.str("layout") == "nhwc";
    const int64_t batch = p.int64("batch");
    c.available = [pp](const GpuInfo& g) { return train_available(*pp, g); };
    c.run = [pp, nhwc, batch](CaseContext& ctx) { run_train_case(ctx, *pp, nhwc, batch); };
    const Search searched = batch == first                          ? Search::full
                            : suite == Suite::full && network_batch(batch) ? Search::none
                                                                          : Search::seeded;
    c.cost = [pp, nhwc, batch, searched](const CostInput& in) { return train_cost(in, *pp, nhwc, batch, searched); };
  };
  if (suite == Suite::quick) {
    // One small case: mixed precision NHWC where FP16 tensor cores exist (cc >= 7.0), FP32 otherwise.
    std::vector<Case> out = train_axes({"fp16"}, {"nhwc"}, {32}).cases("train", [&](const AxisPoint& p, Case& c) {
      fill(p, c);
      c.available = [](const GpuInfo& g) {
        return g.cc() >= 70 ? Availability::yes() : Availability::no("the quick suite's mixed-precision case needs FP16 tensor cores (compute capability 7.0 or "
                                   "newer); this GPU has " + g.cc_string() + ": the quick suite runs fp32/nchw here");
      };
    });
    append_cases(out, train_axes({"fp32"}, {"nchw"}, {32}).cases("train", [&](const AxisPoint& p, Case& c) {
      fill(p, c);
      c.available = [](const GpuInfo& g) {
        return g.cc() < 70 ? Availability::yes() : Availability::no("the quick suite's fp32/nchw case needs a GPU below compute capability 7.0; this GPU "
                                   "has " + g.cc_string() + ": the quick suite runs fp16/nhwc here");
      };
    }));
    return out;
  }
  std::vector<int64_t> batches;
  for (int64_t b = 1; b <= 4096; b *= 2) batches.push_back(b);
  return train_axes({"fp32", "tf32", "fp16"}, {"nchw", "nhwc"}, batches).cases("train", fill);
}

class TrainFamily : public Family {
 public:
  std::string name() const override { return "train"; }
  std::string description() const override {
    return "ResNet-50 v1.5 training step on cuDNN/cuBLAS: FP32/TF32/mixed FP16, NCHW/NHWC, batch sweep to OOM";
  }
  std::vector<Case> cases(Suite suite) const override { return make_cases(suite); }
};

const Registrar registrar(std::make_unique<TrainFamily>());

const AnalysisRegistrar train_analysis({
    "train_recommendation",
    [](const json& records) {
      for (const auto& r : records)
        if (r.value("family", "") == "train") return true;
      return false;
    },
    [](const json& records, const AnalysisContext& ctx) {
      std::vector<train::GpuCc> gpus;
      for (const GpuInfo* g : ctx.gpus) gpus.push_back({g->index, g->cc()});
      return train::train_recommendation(records, ctx.memory_fraction, ctx.global_batch, gpus);
    },
    [](const json& a) { return train::train_recommendation_lines(a); }});

}  // namespace

std::vector<std::string> train::train_case_ids(bool full) {
  std::vector<std::string> ids;
  for (const auto& c : make_cases(full ? Suite::full : Suite::quick)) ids.push_back(c.id());
  return ids;
}

}  // namespace nb
