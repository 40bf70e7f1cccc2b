// Device memory bandwidth: STREAM-style kernels (copy, scale, add, triad, read) with 16-byte
// accesses over arrays at least 8x the L2, and cudaMemcpy device-to-device as a reference.
// Bandwidth counts bytes read plus bytes written. Verified against the known input pattern.
#include <cmath>
#include <optional>
#include <sstream>

#include "bench/benchmark.hpp"
#include "bench/cost.hpp"
#include "base/json_fields.hpp"
#include "base/text.hpp"
#include "bench/validate_values.hpp"
#include "kernels/memory/memory_kernels.cuh"
#include "base/resources.hpp"
#include "base/verify.hpp"
#include "memory_metrics.hpp"

namespace nb {
namespace {

using nlohmann::json;
using kernels::StreamOp;

struct OpInfo {
  const char* name;
  StreamOp op;
  int arrays;        // arrays touched
  int bytes_factor;  // arrays' worth of bytes moved per run (read + written)
};
const OpInfo kOps[] = {
    {"copy", StreamOp::copy, 2, 2}, {"scale", StreamOp::scale, 2, 2}, {"add", StreamOp::add, 3, 3},
    {"triad", StreamOp::triad, 3, 3}, {"read", StreamOp::read, 1, 1},
};

// Array size: the case's bytes, else ("8xL2") max(8 x L2, 256 MiB), rounded to 1 MiB.
size_t array_bytes(std::optional<size_t> bytes, const GpuInfo& g) {
  if (bytes) return *bytes;
  size_t b = std::max<size_t>(8 * g.l2_bytes, size_t(256) << 20);
  return (b + (1 << 20) - 1) / (1 << 20) * (1 << 20);
}

double pattern_at(size_t i) { return double(i % 1024) * 0.25 - 128.0; }

// Checks `n_check` sampled elements of `dev` against expected(i); returns failures text.
std::string check_samples(const float* dev, size_t n, const std::function<double(size_t)>& expected) {
  size_t failures = 0;
  std::ostringstream first;
  const auto pos = sample_positions(int64_t(n), 1, 64, 0xABCDull);
  for (const auto& [i, j] : pos) {
    (void)j;
    float v = 0;
    NB_CUDA(cudaMemcpy(&v, dev + i, sizeof v, cudaMemcpyDeviceToHost));
    if (double(v) != expected(size_t(i))) {
      if (!failures) first << "element " << i << " = " << v << ", expected " << expected(size_t(i));
      ++failures;
    }
  }
  if (!failures) return "";
  std::ostringstream os;
  os << failures << " of " << pos.size() << " sampled elements wrong; first: " << first.str();
  return os.str();
}

// Poisons the kernel's output, runs it once and checks it against the input pattern; the first
// mismatch, or "" when right.
std::string verify_stream(StreamOp op, size_t bytes, size_t n, unsigned blocks, cudaStream_t s,
                          const std::function<void(cudaStream_t)>& launch, float* pa, float* pb, float* pc,
                          DeviceBuffer& partial) {
  std::string err;
  switch (op) {
    case StreamOp::copy:
    case StreamOp::scale: {
      NB_CUDA(cudaMemsetAsync(pb, 0xFF, bytes, s));
      launch(s);
      NB_CUDA(cudaStreamSynchronize(s));
      const double f = op == StreamOp::copy ? 1.0 : 2.0;
      err = check_samples(pb, n, [f](size_t i) { return f * pattern_at(i); });
      break;
    }
    case StreamOp::add:
      NB_CUDA(cudaMemsetAsync(pc, 0xFF, bytes, s));
      launch(s);
      NB_CUDA(cudaStreamSynchronize(s));
      err = check_samples(pc, n, [](size_t i) { return 2.0 * pattern_at(i); });
      break;
    case StreamOp::triad:
      NB_CUDA(cudaMemsetAsync(pa, 0xFF, bytes, s));
      launch(s);
      NB_CUDA(cudaStreamSynchronize(s));
      err = check_samples(pa, n, [](size_t i) { return 3.0 * pattern_at(i); });  // b + 2c
      break;
    case StreamOp::read: {
      NB_CUDA(cudaMemsetAsync(partial.get(), 0xFF, partial.bytes(), s));
      launch(s);
      NB_CUDA(cudaStreamSynchronize(s));
      std::vector<float> h(blocks);
      NB_CUDA(cudaMemcpy(h.data(), partial.get(), partial.bytes(), cudaMemcpyDeviceToHost));
      double got = 0, want = 0;
      for (float v : h) got += v;
      const size_t periods = n / 1024;
      want = -128.0 * double(periods);
      for (size_t i = periods * 1024; i < n; ++i) want += pattern_at(i);
      const double scale = 128.0 * double(n);  // sum of magnitudes bounds the rounding
      if (!std::isfinite(got) || std::fabs(got - want) > 1e-6 * scale) {
        std::ostringstream os;
        os << "sum " << got << ", expected " << want;
        err = os.str();
      }
      break;
    }
  }
  return err;
}

void run_stream(CaseContext& ctx, const OpInfo& op, std::optional<size_t> size) {
  const GpuInfo& g = ctx.gpu();
  const size_t bytes = array_bytes(size, g);
  const size_t n = bytes / sizeof(float), n4 = n / 4;
  size_t free_b = 0, total_b = 0;
  NB_CUDA(cudaMemGetInfo(&free_b, &total_b));
  if (double(bytes) * op.arrays > 0.9 * double(free_b))
    ctx.skip("out of memory: does not fit: needs " + std::to_string(bytes * op.arrays) + " bytes, " +
             std::to_string(free_b) + " free", ReasonKind::oom);
  DeviceBuffer a(bytes), b(op.arrays >= 2 ? bytes : 0), c(op.arrays >= 3 ? bytes : 0);
  int max_threads = 0;
  NB_CUDA(cudaDeviceGetAttribute(&max_threads, cudaDevAttrMaxThreadsPerMultiProcessor, g.index));
  const unsigned threads = 256, blocks = unsigned(g.sm_count) * unsigned(std::max(1, max_threads / 256));
  DeviceBuffer partial(blocks * sizeof(float));
  cudaStream_t s = ctx.stream();
  float* pa = a.as<float>();
  float* pb = b.as<float>();
  float* pc = c.as<float>();
  kernels::launch_pattern(s, pa, n);
  if (pb) kernels::launch_pattern(s, pb, n);
  if (pc) kernels::launch_pattern(s, pc, n);
  NB_CUDA_LAUNCH();
  NB_CUDA(cudaStreamSynchronize(s));
  const float scalar = 2.0f;
  auto launch = [&](cudaStream_t st) {
    kernels::launch_stream(st, op.op, pa, pb, pc, scalar, n4, partial.as<float>(), blocks, threads);
  };
  ctx.measure(launch);
  ctx.set_throughput(memory::kGbps, double(bytes) * op.bytes_factor / 1e9, "mem_gbps");
  ctx.details()["array_bytes"] = bytes;
  ctx.details()["bytes_per_run"] = bytes * size_t(op.bytes_factor);
  ctx.details()["grid"] = {{"blocks", blocks}, {"threads", threads}};

  // Verify: poison the output, run once, check against the pattern.
  const std::string err = verify_stream(op.op, bytes, n, blocks, s, launch, pa, pb, pc, partial);
  ctx.details()["verification"] = {{"method", "input pattern (i mod 1024)/4 - 128; sampled outputs compared exactly"},
                                   {"ok", err.empty()}};
  if (!err.empty()) ctx.wrong(err);
}

void run_memcpy(CaseContext& ctx, std::optional<size_t> size) {
  const GpuInfo& g = ctx.gpu();
  const size_t bytes = array_bytes(size, g);
  size_t free_b = 0, total_b = 0;
  NB_CUDA(cudaMemGetInfo(&free_b, &total_b));
  if (double(bytes) * 2 > 0.9 * double(free_b))
    ctx.skip("out of memory: does not fit: needs " + std::to_string(2 * bytes) + " bytes", ReasonKind::oom);
  DeviceBuffer a(bytes), b(bytes);
  cudaStream_t s = ctx.stream();
  const size_t n = bytes / sizeof(float);
  kernels::launch_pattern(s, a.as<float>(), n);
  NB_CUDA_LAUNCH();
  auto launch = [&](cudaStream_t st) { NB_CUDA(cudaMemcpyAsync(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice, st)); };
  ctx.measure(launch);
  ctx.set_throughput(memory::kGbps, 2.0 * double(bytes) / 1e9, "mem_gbps");
  ctx.details()["array_bytes"] = bytes;
  NB_CUDA(cudaMemsetAsync(b.get(), 0xFF, bytes, s));
  launch(s);
  NB_CUDA(cudaStreamSynchronize(s));
  const std::string err = check_samples(b.as<float>(), n, pattern_at);
  ctx.details()["verification"] = {{"method", "sampled elements equal the source pattern"}, {"ok", err.empty()}};
  if (!err.empty()) ctx.wrong(err);
}

// What `nodebench validate` judges of this family: copy and triad at the largest buffer, as a
// percent of the GPU's memory bandwidth.
std::vector<ValidationCheck> memory_checks() {
  static const char* const kFix =
      "Device memory bandwidth is low: check that the memory clock reaches its maximum (application clocks: "
      "nvidia-smi -rac), that no other process uses the GPU, gpu.throttle, and ecc.retired (a GPU with pending "
      "remaps runs degraded).";
  std::vector<ValidationCheck> out;
  for (const std::string k : {"copy", "triad"}) {
    ValidationCheck c = gpu_check("memory." + k, "memory " + k, kFix, 2);
    c.runs_case = [k](const Case& x) { return x.params.value("kernel", "") == k; };
    c.judges = [k](const json& r) { return jf::str_or(jf::at(r, "params"), "kernel") == k; };
    c.value = [](const json& r, const CheckInput& in, std::string& how) -> std::optional<double> {
      if (auto v = percent_of_peak_value(r, how)) return v;
      const json* g = environment_gpu(in.environment, in.gpu);
      const double gbps = memory::kGbps.of(r).value_or(NAN);
      const double peak = g ? jf::num_or(jf::at(jf::at(*g, "peaks"), "mem_gbps"), "value", NAN) : NAN;
      if (!std::isfinite(gbps) || !std::isfinite(peak) || peak <= 0) return std::nullopt;
      how = fmt(gbps, 1) + " GB/s of " + fmt(peak, 0) + " GB/s (mem_gbps)";
      return 100.0 * gbps / peak;
    };
    out.push_back(c);
  }
  return out;
}

class MemoryFamily : public Family {
 public:
  std::string name() const override { return "memory"; }
  std::string description() const override {
    return "Device memory bandwidth: STREAM copy/scale/add/triad/read kernels and cudaMemcpy D2D";
  }
  // Params kernel and size ("8xL2", or "<n>MiB" with bytes); name <kernel>/<size>. The quick
  // suite runs every kernel at 8xL2 and the copies at 4 GiB.
  std::vector<Case> cases(Suite suite) const override {
    std::vector<AxisValue> sizes = {{{{"size", "8xL2"}}, "8xL2"}};
    for (size_t gib : suite == Suite::full ? std::vector<size_t>{1, 4} : std::vector<size_t>{4}) {
      const std::string label = std::to_string(gib << 10) + "MiB";
      sizes.push_back({{{"size", label}, {"bytes", gib << 30}}, label});
    }
    std::vector<std::string> kernels;
    for (const auto& op : kOps) kernels.push_back(op.name);
    kernels.push_back("memcpy_d2d");
    const bool quick = suite == Suite::quick;
    return Axes()
        .add_values("size", sizes)
        .add_string("kernel", kernels)
        .where([quick](const AxisPoint& p) {
          return !quick || p.str("size") == "8xL2" || p.str("kernel") == "copy" || p.str("kernel") == "memcpy_d2d";
        })
        .name("{kernel}/{size}")
        .cases("memory", [](const AxisPoint& p, Case& c) {
          const std::optional<size_t> bytes = p.has("bytes") ? std::optional<size_t>(size_t(p.int64("bytes"))) : std::nullopt;
          const OpInfo* op = nullptr;
          for (const auto& o : kOps)
            if (p.str("kernel") == o.name) op = &o;
          if (op) c.run = [op, bytes](CaseContext& ctx) { run_stream(ctx, *op, bytes); };
          else c.run = [bytes](CaseContext& ctx) { run_memcpy(ctx, bytes); };
          // The cost model (bench/cost.hpp): the arrays filled and checked, then the run sampled,
          // each at the memory bandwidth (8xL2 where no size is given).
          c.cost = [op, bytes](const CostInput& in) {
            const double n = bytes ? double(*bytes) : 8.0 * double(in.gpu.l2_bytes);
            const double moved = n * (op ? op->bytes_factor : 2), touched = n * (op ? op->arrays : 2);
            CaseCost k;
            k.kind = "memory";
            k.setup_s = 2 * op_seconds(in.gpu, "mem_gbps", touched / 1e9);
            k.sample_s = sampling_s(in.cfg, op_seconds(in.gpu, "mem_gbps", moved / 1e9));
            return k;
          };
          c.l2 = L2Mode::hot;  // the arrays are many times the L2: nothing of them stays there
        });
  }
  std::vector<ValidationCheck> validation_checks() const override { return memory_checks(); }
};

const Registrar registrar(std::make_unique<MemoryFamily>());
NB_REGISTER_METRICS("memory", {memory::kGbps});

}  // namespace
}  // namespace nb
