// The input family: can this host feed its GPUs? JPEG decode (libjpeg-turbo) + random-resized
// crop to 224x224 + flip + ImageNet normalisation into the training layout, on 1, 2, 4, ... up to
// every CPU of the process (one pinned worker thread per core, as data-loader workers), on the
// GPU's NUMA node against the other one, and on the GPU (nvJPEG + our kernel). The CPU cases
// are host-only: they run without a GPU. The verdict beside the training step is the analysis
// `input_pipeline` (input_analysis.cpp). docs/SCHEMA.md describes the records; README.md here
// what the figure means.
#include <algorithm>
#include <cmath>

#include "augment.hpp"
#include "bench/benchmark.hpp"
#include "cpu_pool.hpp"
#include "gpu_decode.hpp"
#include "node/host_memory.hpp"
#include "images.hpp"
#include "input_metrics.hpp"
#include "base/stats.hpp"
#include "base/text.hpp"

namespace nb::input {
namespace {

using nlohmann::json;

// Image content varies the time per image: a sample of a few dozen images varies by a few
// percent, so a 1% target would never be met; 3% is what the samples can show.
constexpr double kTargetCv = 0.03;
constexpr int kGpuBatch = 128;
// Workers that ran less of their time than this shared their CPUs with other work (said in details.note).
constexpr double kBusyShare = 0.9;

// Verification of the CPU path on sampled images: TurboJPEG's decode against libjpeg's own API
// (the same settings: must agree), against the image it was made from (generated images: PSNR),
// and the fast augmentation against its definition on sampled outputs.
json verify_cpu(const ImageSet& set, Layout layout, DType dtype, std::string& err) {
  JpegDecoder dec;
  Augmenter aug;
  CropSampler crops(7);
  const size_t n = set.files.size();
  int decode_diff = 0;
  double psnr_min = INFINITY, aug_err = 0;
  std::vector<uint8_t> out(image_elements() * element_bytes(dtype));
  std::vector<size_t> picks{0, n / 3, 2 * n / 3, n - 1};
  picks.erase(std::unique(picks.begin(), picks.end()), picks.end());
  for (size_t i : picks) {
    const JpegFile& f = set.files[i];
    Rgb a;
    dec.decode(f.bytes.data(), f.bytes.size(), a);
    decode_diff = std::max(decode_diff, max_abs_diff(a, decode_libjpeg(f.bytes.data(), f.bytes.size())));
    if (set.generated) psnr_min = std::min(psnr_min, psnr_db(synth_image(a.width, a.height, set.seed, int(i)), a));
    const Crop c = crops.next(a.width, a.height);
    aug.run(a, c, layout, dtype, out.data());
    for (int k = 0; k < 16; ++k) {
      const int ch = k % 3, y = (k * 53 + 11) % kOut, x = (k * 97 + 5) % kOut;
      aug_err = std::max(aug_err, std::fabs(output_value(out.data(), layout, dtype, ch, y, x) - reference_value(a, c, ch, y, x)));
    }
  }
  // FP16 holds about 3 decimal digits of values up to ~2.6; FP32 only sums in another order.
  const double tol = dtype == DType::fp32 ? 2e-4 : 3e-3;
  if (decode_diff > 1) err = "TurboJPEG and libjpeg's API decode differently (largest difference " + std::to_string(decode_diff) + ")";
  else if (set.generated && psnr_min < 30) err = "decoded images are " + fmt(psnr_min, 1) + " dB from their sources (>= 30 expected)";
  else if (!(aug_err <= tol)) err = "crop/resize/normalise differs from its definition by " + fmt(aug_err, 6);
  json v = {{"method", "sampled images: TurboJPEG against libjpeg's jpeg_read_scanlines (same settings), against the "
                       "generated source (PSNR), and 16 outputs of each crop against the definition (double precision)"},
            {"images_checked", picks.size()}, {"decode_max_abs_diff", decode_diff}, {"augment_max_error", aug_err},
            {"augment_tolerance", tol}, {"ok", err.empty()}};
  v["psnr_vs_source_db_min"] = set.generated ? json(psnr_min) : json(nullptr);
  return v;
}

json image_details(const ImageSet& set) {
  json d = {{"source", set.source}, {"count", set.files.size()}, {"mean_file_bytes", set.mean_bytes()},
            {"note", "files read into memory once: the decode is measured, not the disk"}};
  if (!set.kept_in.empty()) d["kept_in"] = set.kept_in;
  if (!set.left_out.empty()) d["left_out"] = set.left_out;
  return d;
}

// The workers' CPUs for a placement; skips the case where the placement cannot be made.
std::vector<int> choose_cpus(CaseContext& ctx, const std::vector<Cpu>& cpus, const std::string& placement, int cores,
                             std::optional<int>& memory_node) {
  if (placement == "spread") {
    std::vector<int> order = pin_order(cpus);
    if (int(order.size()) < cores)
      ctx.skip("needs " + std::to_string(cores) + " CPUs; this process may run on " + std::to_string(order.size()), ReasonKind::unsupported);
    order.resize(size_t(cores));
    return order;
  }
  if (ctx.gpus().empty()) ctx.skip("no GPU: the GPU's NUMA node is unknown", ReasonKind::unsupported);
  const GpuInfo& g = *ctx.gpus().front();
  const auto gpu_node = gpu_numa_node(g.pci_bus_id);
  const NumaChoice choice = numa_node_for(cpus, placement, gpu_node, g.index);
  if (!choice.node) ctx.skip(choice.problem, ReasonKind::unsupported);
  const int node = *choice.node;
  std::vector<int> order = pin_order(cpus, node);
  memory_node = *gpu_node;
  ctx.details()["gpu"] = g.index;
  ctx.details()["gpu_numa_node"] = *gpu_node;
  ctx.details()["numa_node"] = node;
  return order;
}

void run_cpu(CaseContext& ctx, Layout layout, DType dtype, const std::string& placement, int cores) {
  if (!jpeg_built()) ctx.skip("built without libjpeg-turbo (" + jpeg_missing() + ")", ReasonKind::not_built);
  const ImageSet& set = run_images(ctx);
  const std::vector<Cpu> cpus = allowed_cpus();
  PoolConfig pc;
  pc.layout = layout;
  pc.dtype = dtype;
  pc.cpus = choose_cpus(ctx, cpus, placement, cores, pc.memory_node);
  if (placement != "spread") ctx.extra_params()["cores"] = pc.cpus.size();
  MeasureConfig mc = ctx.config();
  mc.target_cv = std::max(mc.target_cv, kTargetCv);
  ctx.mutable_config() = mc;
  const PoolResult r = run_pool(set, pc, mc);
  ctx.set_measurement(r.measurement);
  ctx.set_throughput(input::kImagesPerS, 1.0, "");
  ctx.set_primary_metric(input::kImagesPerS);
  const double ips = 1.0 / compute_stats(r.measurement.samples_s).median;
  const double workers = double(pc.cpus.size());
  ctx.metric(input::kPerCore, ips / workers);
  ctx.metric(input::kCores, workers);
  ctx.metric(input::kDecodePerImage, r.decode_per_image_ms);
  ctx.metric(input::kAugmentPerImage, r.augment_per_image_ms);
  ctx.metric(input::kMeanFile, set.mean_bytes());
  ctx.metric(input::kOutput, double(image_elements() * element_bytes(dtype)));
  ctx.metric(input::kWorkerCpu, r.cpu_share);
  ctx.metric(input::kPerCoreCpuTime, r.images_per_cpu_s);
  json& d = ctx.details();
  d["cpus"] = pc.cpus;
  d["cpus_available"] = cpus.size();
  d["physical_cores"] = physical_core_count(cpus);
  d["numa_nodes"] = nodes_of(cpus);
  std::vector<Cpu> used;
  for (const Cpu& c : cpus)
    if (std::count(pc.cpus.begin(), pc.cpus.end(), c.id)) used.push_back(c);
  d["shares_physical_cores"] = physical_core_count(used) < int(used.size());
  if (pc.memory_node) d["memory_node"] = *pc.memory_node, d["memory_bound"] = r.memory_bound;
  d["images"] = image_details(set);
  d["per_worker_images"] = r.per_worker;
  d["timer"] = "host clock: each sample is the time the workers together take for the next images, per image";
  if (r.cpu_share < kBusyShare)
    d["note"] = "the workers ran " + fmt(100 * r.cpu_share, 0) + "% of their time: other work shared their CPUs, so this "
                "is the rate under that load, below the host's capacity";
  std::string err;
  d["verification"] = verify_cpu(set, layout, dtype, err);
  if (!err.empty()) ctx.wrong(err);
}

int process_cpus() {
  try {
    return std::max(1, int(allowed_cpus().size()));
  } catch (const std::exception&) {
    return 1;
  }
}

// The two series the training steps are fed: FP32 NCHW (fp32 and tf32 steps) and FP16 NHWC.
const std::vector<std::pair<std::string, std::string>>& series() {
  static const std::vector<std::pair<std::string, std::string>> s{{"nchw", "fp32"}, {"nhwc", "fp16"}};
  return s;
}

Case cpu_case(const std::string& layout, const std::string& dtype, const std::string& placement, int cores) {
  Case c;
  c.family = "input";
  c.name = "cpu/" + layout + "/" + dtype + "/" + (placement == "spread" ? "c" + std::to_string(cores) : "numa_" + placement);
  c.params = {{"layout", layout}, {"dtype", dtype}, {"placement", placement}};
  if (placement == "spread") c.params["cores"] = cores;
  c.host_only = true;
  // Known before the run (and so costed at nothing by the estimate of time left).
  c.available = [placement](const GpuInfo& g) {
    if (!jpeg_built()) return Availability::no("built without libjpeg-turbo (" + jpeg_missing() + ")", ReasonKind::not_built);
    if (placement == "spread") return Availability::yes();
    std::vector<Cpu> cpus;
    try {
      cpus = allowed_cpus();
    } catch (const std::exception&) {
      return Availability::yes();  // the case itself reports the host's topology it cannot read
    }
    const NumaChoice choice = numa_node_for(cpus, placement, gpu_numa_node(g.pci_bus_id), g.index);
    return choice.node ? Availability::yes() : Availability::no(choice.problem, ReasonKind::unsupported);
  };
  c.run = [=](CaseContext& ctx) { run_cpu(ctx, parse_layout(layout), parse_dtype(dtype), placement, cores); };
  return c;
}

class InputFamily : public Family {
 public:
  std::string name() const override { return "input"; }
  std::string description() const override {
    return "Input pipeline: JPEG decode + random-resized crop + flip + normalise per CPU core count, NUMA, nvJPEG";
  }
  // The CPU cases load every core and the host's memory.
  bool shares_host() const override { return true; }
  std::vector<Case> cases(Suite suite) const override {
    const int all = process_cpus();
    std::vector<Case> out;
    if (suite == Suite::quick) {
      out.push_back(cpu_case("nchw", "fp32", "spread", all));
      return out;
    }
    for (const auto& [layout, dtype] : series()) {
      for (int n : sweep_counts(all)) out.push_back(cpu_case(layout, dtype, "spread", n));
      for (const char* place : {"gpu_node", "other_node"}) out.push_back(cpu_case(layout, dtype, place, 0));
    }
    for (const auto& [layout, dtype] : series())
      for (const std::string& backend : gpu_backends()) {
        Case c;
        c.family = "input";
        c.name = "gpu/" + backend + "/" + layout + "/" + dtype + "/b" + std::to_string(kGpuBatch);
        c.params = {{"layout", layout}, {"dtype", dtype}, {"backend", backend}, {"batch", kGpuBatch}};
        const std::string l = layout, t = dtype;
        c.run = [=](CaseContext& ctx) { run_gpu_decode(ctx, backend, parse_layout(l), parse_dtype(t), kGpuBatch); };
        // nvJPEG's decoders are the GPU model's (and its host part the host's): one GPU of a node
        // says what each of its GPUs of that model decodes; the others are not run one after another.
        c.first_gpu_only = true;
        out.push_back(std::move(c));
      }
    return out;
  }
};

const Registrar registrar(std::make_unique<InputFamily>());
NB_REGISTER_METRICS("input", {input::kImagesPerS, input::kPerCore, input::kPerCoreCpuTime, input::kCores,
                              input::kDecodePerImage, input::kAugmentPerImage, input::kMeanFile, input::kOutput,
                              input::kWorkerCpu, input::kGpuTimePerImage, input::kAugmentGpuTimePerImage});

}  // namespace
}  // namespace nb::input
