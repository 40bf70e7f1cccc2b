// Family train_dp: the ResNet-50 training step (train_step.cpp) data parallel over the selected
// GPUs of one process (train_dp_engine.hpp): every GPU its own batch, the gradients all-reduced
// with NCCL in buckets (NODEBENCH_DP_BUCKET_MIB, default 25 as PyTorch DDP) overlapping
// backward, then the update; gradient accumulation NODEBENCH_DP_ACCUMULATION (k, default 1).
//
// A case is a precision, layout and per-GPU batch; its records are parts, one per GPU count of
// the sweep (1, 2, 4, ... and all, chosen closest-first from the topology as the nccl sweep):
// train_dp/resnet50/<precision>/<layout>/b<batch>/g<gpus>. Each part measures the step with the
// all-reduce, then the same GPUs with the all-reduce skipped (exposed_comm_ms = the difference);
// the case measures the first GPU alone once (compute only), the 1-GPU figure of
// scaling_efficiency_ratio. Verification on every part of two GPUs or more (after the first GPU's
// optimizer state is broadcast to the others, since compute-only steps let them drift apart):
// each GPU's own gradient of
// one micro-step (different images, identical initial weights), then the same micro-step with
// the bucketed all-reduce: the sampled parameters' reduced gradients equal the mean of the own
// ones within a bound and are bit-identical across GPUs; after the update, and again after the
// timed steps, sampled parameters are identical on every GPU. One rank per GPU under MPI is not
// yet supported (skipped, saying so).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

#include "bench/benchmark.hpp"
#include "bench/cost.hpp"
#include "shared/nccl/collectives.hpp"
#include "cluster/mpi.hpp"
#include "bench/settings.hpp"
#include "base/stats.hpp"
#include "base/text.hpp"
#include "node/topology.hpp"
#include "train_dp_engine.hpp"
#include "train_dp_plan.hpp"
#include "train_dp_metrics.hpp"
#include "kernels/train/train_kernels.cuh"
#include "shared/resnet50/step_cost.hpp"
#include "shared/resnet50/train_step.hpp"
#include "shared/resnet50/resnet50_net.hpp"

#include "shared/nccl/nccl_team.hpp"

namespace nb {
namespace {


using nlohmann::json;
using train_dp::Point;
using train_dp::kBucketBytes;
using train_dp::kBucketCount;
using train_dp::kComputeStep;
using train_dp::kExposedComm;
using train_dp::kGradientBytes;
using train_dp::kImagesPerS;
using train_dp::kOneGpuImagesPerS;
using train_dp::kOneGpuStep;
using train_dp::kScalingEfficiency;
using train_dp::kStepTime;

constexpr int kStepsPerSample = 2;

#if NB_HAVE_NCCL

double median_s(const Measurement& m) { return compute_stats(m.samples_s).median; }

void fill_part(CasePart& part, const Point& pt, int n, int k, const Measurement& step, double compute_s, double one_s,
               const train_dp::Engine& eng, size_t bucket_bytes) {
  const double step_s = median_s(step);
  const double ips = train_dp::images_per_s(n, pt.batch, k, step_s);
  const double one_ips = train_dp::images_per_s(1, pt.batch, k, one_s);
  auto& m = part.out.typed_metrics;
  m.push_back(kStepTime.with(step_s * 1e3));
  m.push_back(kImagesPerS.with(ips));
  m.push_back(kComputeStep.with(compute_s * 1e3));
  m.push_back(kExposedComm.with((step_s - compute_s) * 1e3));
  m.push_back(kOneGpuStep.with(one_s * 1e3));
  m.push_back(kOneGpuImagesPerS.with(one_ips));
  const double eff = train_dp::scaling_efficiency(ips, n, one_ips);
  if (std::isfinite(eff)) m.push_back(kScalingEfficiency.with(eff));
  m.push_back(kBucketBytes.with(double(bucket_bytes)));
  m.push_back(kBucketCount.with(double(eng.buckets().size())));
  m.push_back(kGradientBytes.with(double(eng.gradient_bytes())));
  part.out.measurement = step;
  part.out.primary_metric = kImagesPerS.name();
  part.out.primary_higher = true;
}

json nccl_facts() {
  return {{"nccl_env", nccl::nccl_env()}, {"nccl_version", nccl::nccl_version()}};
}

// One case's run: the engine over every GPU of the case, the 1-GPU figure, one part per GPU
// count of the sweep.
class DpRun {
 public:
  DpRun(CaseContext& ctx, const Point& pt)
      : ctx_(ctx), pt_(pt), P_(cudnn::prec_by_name(pt.precision)), teams_(nccl::teams(ctx)),
        k_(int(ctx.settings().integer("NODEBENCH_DP_ACCUMULATION"))),
        bucket_bytes_(size_t(ctx.settings().number("NODEBENCH_DP_BUCKET_MIB") * 1048576.0)) {
    for (const GpuInfo* g : ctx.gpus()) devices_.push_back(g->index);
  }
  // The engine set up on every GPU (out of memory: the case is skipped), then the first GPU alone.
  void start();
  // The part of one step of the sweep, measured and verified.
  void part(const topo::SweepStep& step);

 private:
  CasePart new_part(const topo::SweepStep& step, std::vector<size_t>& members, std::vector<int>& devs) const;
  void measure_reduced(CasePart& part, const std::vector<size_t>& members, const std::vector<int>& devs,
                       std::string& key);
  CaseContext& ctx_;
  const Point& pt_;
  const cudnn::Prec& P_;
  nccl::Teams& teams_;
  int k_;
  size_t bucket_bytes_;
  std::vector<int> devices_;
  std::optional<train_dp::Engine> eng_;
  Measurement one_;
  double one_s_ = 0;
  std::string conv_layout_;  // details.conv_layout: the layout the step runs in
};

void DpRun::start() {
  train::StepConfig cfg;
  cfg.prec = &P_;
  // The layout the step runs in, as the train family's (train_fusion.hpp): the lowest compute
  // capability of the GPUs decides.
  int cc = 1000;
  for (const GpuInfo* g : ctx_.gpus()) cc = std::min(cc, g->cc());
  train::set_layouts(cfg, pt_.layout == "nhwc",
                     train::step_runs_nhwc(cc, P_.name, pt_.layout == "nhwc", train::conv_layout_setting(ctx_.settings())));
  conv_layout_ = train::conv_layout_name(cfg);
  cfg.batch = pt_.batch;
  cfg.loss_scale = train::default_loss_scale(P_);
  cfg.lr = kernels::sgd_lr_for_batch(cfg.batch);
  cfg.fusion = train::fusion_setting(ctx_.settings());  // the same step as the train family's
  cfg.bn_grid = train::bn_grid_setting(ctx_.settings());
  std::vector<train_dp::EngineGpu> gpus;
  for (const GpuInfo* g : ctx_.gpus()) gpus.push_back({g->index, g->name, cudnn::libraries(ctx_, g->index)});
  try {
    eng_.emplace(cfg, gpus, bucket_bytes_, k_, teams_.watchdog());
    eng_->setup();
  } catch (const train::OutOfMemory& e) {
    ctx_.skip(e.message(), ReasonKind::oom);
  } catch (const CudaError& e) {
    if (!e.out_of_memory()) throw;
    (void)cudaGetLastError();
    ctx_.skip(std::string("out of memory: ") + e.what(), ReasonKind::oom);
  }
  // The 1-GPU figure: the first GPU alone, compute only.
  eng_->run({0}, {}, 1);
  one_ = sample_until_stop(ctx_.config(), [&] { return eng_->run({0}, {}, kStepsPerSample); });
  one_s_ = median_s(one_);
  ctx_.extra_params()["accumulation"] = k_;
}

CasePart DpRun::new_part(const topo::SweepStep& step, std::vector<size_t>& members, std::vector<int>& devs) const {
  CasePart part;
  part.name = train_dp::part_name(step.count);
  for (int i : step.members) members.push_back(size_t(i)), devs.push_back(devices_[size_t(i)]);
  part.params = {{"gpus", step.count}, {"members", devs}, {"accumulation", k_}};
  part.gpus = devs;
  part.out.config = ctx_.config();
  part.out.details = nccl_facts();
  part.out.details["mode"] = "single_process";
  part.out.details["conv_layout"] = conv_layout_;
  part.out.details["gradient_dtype"] = {{"weights", P_.data == CUDNN_DATA_HALF ? "half" : "float"},
                                        {"batch_norm_and_bias", "float"}};
  part.out.details["reduction"] = "ncclAvg, in place, one ncclAllReduce per segment per bucket";
  part.out.details["one_gpu_reference"] = {{"gpu", devices_[0]}, {"note", "the first GPU alone, compute only"}};
  part.out.details["exposed_comm_note"] =
      "step_time_ms minus compute_step_ms (the same GPUs, all-reduce skipped); noise can make it slightly negative";
  return part;
}

// Two GPUs or more: the checks, the step with the all-reduce, then the same GPUs compute only.
void DpRun::measure_reduced(CasePart& part, const std::vector<size_t>& members, const std::vector<int>& devs,
                            std::string& key) {
  nccl::Team& team = teams_.local_team(devs);
  key = team.key;
  std::vector<ncclComm_t> comms;
  for (int d : devs)
    for (const auto& mem : team.local)
      if (mem.device == d) comms.push_back(mem.comm);
  if (comms.size() != devs.size()) throw Error("the NCCL team does not hold every GPU of " + nccl::join(devs));
  size_t failures = 0;
  std::string first;
  // Compute-only steps (the 1-GPU figure, earlier parts) moved each GPU on its own: the first
  // GPU's optimizer state to every GPU of the part, then the checks.
  eng_->sync_state(members, comms);
  json v = eng_->verify_gradients(members, comms, failures, first);
  eng_->run(members, comms, 1);  // warm-up
  const Measurement m = sample_until_stop(ctx_.config(), [&] { return eng_->run(members, comms, kStepsPerSample); });
  v["parameters_after_timed_steps"] = eng_->check_identical(members, failures, first);
  const Measurement c = sample_until_stop(ctx_.config(), [&] { return eng_->run(members, {}, kStepsPerSample); });
  fill_part(part, pt_, int(devs.size()), k_, m, median_s(c), one_s_, *eng_, bucket_bytes_);
  part.out.details["verification"] = v;
  part.out.details["members"] = team.members;
  if (failures) {
    part.out.wrong = true;
    part.out.wrong_reason = std::to_string(failures) + " checks failed; first: " + first;
  }
}

void DpRun::part(const topo::SweepStep& step) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<size_t> members;
  std::vector<int> devs;
  CasePart part = new_part(step, members, devs);
  std::string key;
  try {
    if (step.count == 1) {
      // One GPU: nothing to all-reduce; its step is the compute-only step.
      const Measurement m = members == std::vector<size_t>{0}
                                ? one_
                                : sample_until_stop(ctx_.config(), [&] { return eng_->run(members, {}, kStepsPerSample); });
      fill_part(part, pt_, 1, k_, m, median_s(m), one_s_, *eng_, bucket_bytes_);
      part.out.details["note"] = "one GPU: no all-reduce";
    } else {
      measure_reduced(part, members, devs, key);
    }
  } catch (const train::OutOfMemory& e) {
    part.status = Status::skipped;
    part.reason = e.message();
    part.reason_kind = ReasonKind::oom;
  } catch (const std::exception& e) {  // a hung communicator (nccl::Hang) among them
    if (!key.empty()) teams_.drop(key);
    set_outcome(part, e);
  }
  part.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ctx_.add_part(std::move(part));
}

void run_dp_case(CaseContext& ctx, const Point& pt, bool quick) {
  if (mpi::active())
    ctx.skip("train_dp under MPI (one rank per GPU) is not yet supported: run it in one process over the node's GPUs",
             ReasonKind::unsupported);
#if NCCL_VERSION_CODE < NCCL_VERSION(2, 10, 0)
  ctx.skip("train_dp needs NCCL 2.10 or newer (ncclAvg); this build has " + nccl::nccl_version(), ReasonKind::not_built);
#endif
  nccl::prepare_env();
  // The engine makes each GPU current in turn: the case's own GPU is current again at the end.
  struct DeviceGuard {
    int dev = 0;
    DeviceGuard() { (void)cudaGetDevice(&dev); }
    ~DeviceGuard() { (void)cudaSetDevice(dev); }
  } device_guard;
  const cudnn::Prec& P = cudnn::prec_by_name(pt.precision);
  for (const GpuInfo* g : ctx.gpus()) {
    const Availability a = cudnn::prec_available(P, *g);
    if (!a.ok) ctx.skip("GPU " + std::to_string(g->index) + ": " + a.reason, ReasonKind::unsupported);
  }
  const auto steps = topo::sweep_subsets(distance_matrix(ctx.nvml(), ctx.gpus()));
  DpRun run(ctx, pt);
  run.start();
  for (const auto& step : steps)
    if (!quick || step.count == int(ctx.gpus().size())) run.part(step);
}

#endif  // NB_HAVE_NCCL

// The cost model (bench/cost.hpp; the step's in shared/resnet50/step_cost.hpp): the engine set up
// on every GPU (its convolutions' choices reused from the train family's cases), the first GPU
// alone sampled (kStepsPerSample call-by-call steps a sample), then per GPU count of two or more
// the state synchronised and checked, and the step sampled with and without the all-reduce of
// the gradients (at the host link's rate between GPUs: NVLink is faster, the estimate errs long).
CaseCost dp_cost(const CostInput& in, const Point& pt) {
  CaseCost k;
  k.kind = "train_dp";
  const cudnn::Prec& P = cudnn::prec_by_name(pt.precision);
  if (train::skipped_unrun(P, in.gpu, pt.batch)) return k;
  const double eager = train::eager_step_s(P, in.gpu, pt.batch);
  const double grads = double(resnet50::net().parameter_count()) * double(P.elem);
  k.setup_s = cudnn::kSeededSearchRuns * train::step_compute_s(P, in.gpu, pt.batch) + 2 * eager;
  k.sample_s = sampling_s(in.cfg, kStepsPerSample * eager);
  for (int n : topo::sweep_counts(in.gpus)) {
    if (n < 2) continue;
    const double reduce = 2.0 * (n - 1) / n * grads / 1e9 / link_gbps(in.gpu);
    k.setup_s += 4 * (eager + reduce);
    k.sample_s += sampling_s(in.cfg, kStepsPerSample * (eager + reduce)) + sampling_s(in.cfg, kStepsPerSample * eager);
  }
  return k;
}

std::vector<Case> make_cases(Suite suite) {
  // Not in the quick suite (the main job on every node) until the data-parallel step has run on a
  // multi-GPU machine: `run --suite full --family train_dp` runs it. The accumulation is read when
  // the cases are listed, before any case context exists.
  if (suite == Suite::quick) return {};
  const bool quick = false;
  return train_dp::axes(!quick)
      .set("accumulation", current_settings().integer("NODEBENCH_DP_ACCUMULATION"))
      .name("resnet50/{precision}/{layout}/{batch}")
      .cases("train_dp", [quick](const AxisPoint& p, Case& c) {
        c.multi_gpu = true;
        // On one GPU a case measures the engine's compute-only step issued call by call, which the
        // train family's cases give at every batch (eager_step_ms): the full suite keeps that at
        // batch 32 only; the other batches need two GPUs (data parallel is what they are for).
        c.min_gpus = quick || p.int64("batch") != 32 ? 2 : 1;
#if NB_HAVE_NCCL
        c.run = [pt = train_dp::point_of(p), quick](CaseContext& ctx) { run_dp_case(ctx, pt, quick); };
        c.cost = [pt = train_dp::point_of(p), min = c.min_gpus](const CostInput& in) {
          return in.gpus < min ? CaseCost{"train_dp"} : dp_cost(in, pt);
        };
#else
        (void)p;
        nccl::skip_without_nccl(c);
#endif
      });
}

class TrainDpFamily : public Family {
 public:
  std::string name() const override { return "train_dp"; }
  std::string description() const override {
    return "ResNet-50 training step data parallel over the GPUs (NCCL bucketed all-reduce overlapping backward): "
           "images/s, exposed communication, scaling efficiency by GPU count";
  }
  std::vector<Case> cases(Suite suite) const override { return make_cases(suite); }
};

const Registrar registrar(std::make_unique<TrainDpFamily>());

}  // namespace

std::vector<std::string> train_dp::case_ids(bool full) {
  std::vector<std::string> ids;
  for (const auto& c : make_cases(full ? Suite::full : Suite::quick)) ids.push_back(c.id());
  return ids;
}

}  // namespace nb
