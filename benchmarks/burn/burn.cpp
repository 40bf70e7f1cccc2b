// The burn: every selected GPU under sustained full load at once (one host thread per GPU, as the
// run schedules per-GPU cases), for NODEBENCH_BURN_DURATION seconds: the GPU's fastest dense GEMM
// through cuBLAS, every result compared bit for bit on the GPU with a reference computed once,
// interleaved with a device-memory test (walking ones and zeros, moving inversions, seeded random)
// over nearly all free device memory; a timeline per GPU once a second from NVML. Its records and
// checks: README.md beside this file; what the checks mean and what to do: docs/VALIDATE.md.
#include <cublas_v2.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>

#include "base/cublas_check.hpp"
#include "base/json_fields.hpp"
#include "base/resources.hpp"
#include "base/text.hpp"
#include "bench/benchmark.hpp"
#include "bench/cost.hpp"
#include "burn_metrics.hpp"
#include "burn_rules.hpp"
#include "burn_run.hpp"
#include "kernels/burn/burn_kernels.cuh"

namespace nb {
namespace {

using nlohmann::json;
using burn::Precision;
using burn::Workload;
namespace k = nb::kernels;

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

std::string clock_text(double s) {
  const long long t = std::llround(std::max(0.0, s));
  std::ostringstream os;
  if (t >= 3600) os << t / 3600 << "h" << (t % 3600) / 60 << "m";
  else if (t >= 60) os << t / 60 << "m" << t % 60 << "s";
  else os << t << "s";
  return os.str();
}

std::string peak_key(const Workload& w, const GpuInfo& g) {
  switch (w.precision) {
    case Precision::fp64: return g.peak("fp64_tensor_tflops") ? "fp64_tensor_tflops" : "fp64_tflops";
    case Precision::fp32: return "fp32_tflops";
    case Precision::tf32: return "tf32_tflops";
    case Precision::fp16: return w.tensor_cores ? "fp16_tensor_tflops" : "fp16_tflops";
    case Precision::bf16: return "bf16_tensor_tflops";
  }
  return "fp32_tflops";
}

// The timeline file, shared by the GPUs' threads.
struct TimelineFile {
  std::mutex mu;
  std::ofstream os;
  std::string path, error;
  bool opened = false;
  void write(const json& line) {
    std::lock_guard<std::mutex> lock(mu);
    if (!opened) {
      opened = true;
      os.open(path, std::ios::out | std::ios::trunc);
      if (!os) error = "cannot write the timeline file '" + path + "'";
    }
    if (os) {
      os << line.dump() << "\n";
      os.flush();
    }
  }
};

class CublasHandle {
 public:
  CublasHandle() { NB_CUBLAS(cublasCreate(&h_)); }
  ~CublasHandle() { cublasDestroy(h_); }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  cublasHandle_t get() const { return h_; }

 private:
  cublasHandle_t h_ = nullptr;
};

// C = A B, n x n x n, in the workload's precision; the same call every time (one handle, one
// workspace, one stream), so that a healthy GPU gives the same bits every time.
struct Gemm {
  Workload w;
  size_t elems = 0;
  CublasHandle handle;
  DeviceBuffer a, b, c, ref, workspace;
  Gemm(const Workload& wl, cudaStream_t s) : w(wl), elems(size_t(wl.n) * size_t(wl.n)) {
    a = DeviceBuffer(elems * size_t(w.in_bytes));
    b = DeviceBuffer(elems * size_t(w.in_bytes));
    c = DeviceBuffer(elems * size_t(w.out_bytes));
    ref = DeviceBuffer(elems * size_t(w.out_bytes));
    workspace = DeviceBuffer(size_t(32) << 20);
    NB_CUBLAS(cublasSetStream(handle.get(), s));
    NB_CUBLAS(cublasSetWorkspace(handle.get(), workspace.get(), workspace.bytes()));
    NB_CUBLAS(cublasSetMathMode(handle.get(), w.precision == Precision::tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
    const k::BurnElem et = w.in_bytes == 8 ? k::BurnElem::f64 : w.in_bytes == 4 ? k::BurnElem::f32 : k::BurnElem::f16;
    if (w.precision == Precision::bf16) {
      // BF16 inputs: the FP16 fill's bits read as BF16 (deterministic, finite, small: any such
      // values load the GPU alike).
      k::launch_burn_fill(s, a.get(), k::BurnElem::f16, elems, 1);
      k::launch_burn_fill(s, b.get(), k::BurnElem::f16, elems, 2);
    } else {
      k::launch_burn_fill(s, a.get(), et, elems, 1);
      k::launch_burn_fill(s, b.get(), et, elems, 2);
    }
    NB_CUDA(cudaGetLastError());
  }
  void run(void* out) {
    const int n = w.n;
    if (w.precision == Precision::fp64) {
      const double one = 1, zero = 0;
      NB_CUBLAS(cublasDgemm(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, static_cast<const double*>(a.get()), n,
                            static_cast<const double*>(b.get()), n, &zero, static_cast<double*>(out), n));
      return;
    }
    const float one = 1, zero = 0;
    cudaDataType_t t = CUDA_R_32F;
    cublasComputeType_t ct = CUBLAS_COMPUTE_32F;
    if (w.precision == Precision::tf32) ct = CUBLAS_COMPUTE_32F_FAST_TF32;
    if (w.precision == Precision::fp16) t = CUDA_R_16F;
    if (w.precision == Precision::bf16) t = CUDA_R_16BF;
    NB_CUBLAS(cublasGemmEx(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a.get(), t, n, b.get(), t, n, &zero, out, t,
                           n, ct, CUBLAS_GEMM_DEFAULT));
  }
  double tflop() const { return 2.0 * double(w.n) * double(w.n) * double(w.n) / 1e12; }
};

// The memory test over one buffer of 32-bit words: a full pass of every pattern at the start, then
// during the burn one chunk a second, the patterns taking turns over the whole buffer.
struct MemTest {
  DeviceBuffer buf;
  size_t words = 0;
  DeviceBuffer err_dev{sizeof(k::MemErrors)};
  k::MemErrors found{};  // the first error kept
  unsigned long long errors = 0;
  std::string first_error;
  size_t cursor = 0;
  uint32_t pass = 0;
  int pattern = 0;
  uint32_t seed = 0x5eed;
  double bytes_moved = 0;
  std::optional<burn::Fault> fault;  // a planted bit flip not yet made

  static const char* name(int p) {
    static const char* const n[] = {"walking_ones", "walking_zeros", "moving_inversions", "random"};
    return n[p & 3];
  }
  uint32_t* w() { return static_cast<uint32_t*>(buf.get()); }

  // Writes, checks and inverts, checks the inversion: [lo, hi) of the buffer, pattern p.
  void sweep(cudaStream_t s, size_t lo, size_t hi, int p, const std::string& when) {
    const size_t n = hi - lo;
    if (n == 0) return;
    NB_CUDA(cudaMemsetAsync(err_dev.get(), 0, sizeof(k::MemErrors), s));
    const auto mp = k::MemPattern(p);
    k::launch_mem_write(s, w() + lo, n, lo, mp, pass, seed, false);
    if (fault && fault->word >= lo && fault->word < hi) {
      // The planted fault: one bit of the written pattern flipped before the check reads it.
      uint32_t v = 0;
      NB_CUDA(cudaMemcpyAsync(&v, w() + fault->word, 4, cudaMemcpyDeviceToHost, s));
      NB_CUDA(cudaStreamSynchronize(s));
      v ^= 1u << fault->bit;
      NB_CUDA(cudaMemcpyAsync(w() + fault->word, &v, 4, cudaMemcpyHostToDevice, s));
      NB_CUDA(cudaStreamSynchronize(s));
      fault.reset();
    }
    k::launch_mem_check(s, w() + lo, n, lo, mp, pass, seed, false, true, static_cast<k::MemErrors*>(err_dev.get()));
    k::launch_mem_check(s, w() + lo, n, lo, mp, pass, seed, true, false, static_cast<k::MemErrors*>(err_dev.get()));
    NB_CUDA(cudaGetLastError());
    k::MemErrors e{};
    NB_CUDA(cudaMemcpyAsync(&e, err_dev.get(), sizeof e, cudaMemcpyDeviceToHost, s));
    NB_CUDA(cudaStreamSynchronize(s));
    bytes_moved += 5.0 * 4.0 * double(n);
    if (e.count) {
      if (!errors) {
        found = e;
        const uint32_t diff = e.got ^ e.want;
        std::vector<std::string> bits;
        for (int b = 0; b < 32; ++b)
          if (diff >> b & 1u) bits.push_back(std::to_string(b));
        std::ostringstream os;
        os << "memory test (" << name(p) << ", " << when << "): word " << e.first_word << " (address 0x" << std::hex
           << reinterpret_cast<uintptr_t>(w() + e.first_word) << std::dec << ", byte offset " << e.first_word * 4
           << " of the tested buffer) read 0x" << std::hex << e.got << " for 0x" << e.want << std::dec << ": bit"
           << (bits.size() > 1 ? "s " : " ") << join(bits, ",") << " wrong";
        first_error = os.str();
      }
      errors += e.count;
    }
  }
  void full_pass(cudaStream_t s, const std::function<bool()>& stop) {
    for (int p = 0; p < 4 && !stop(); ++p) sweep(s, 0, words, p, "initial pass");
    ++pass;
  }
  void step(cudaStream_t s, size_t chunk_words, double t_s) {
    const size_t hi = std::min(words, cursor + chunk_words);
    sweep(s, cursor, hi, pattern, "at t=" + fmt(t_s, 0) + " s");
    cursor = hi;
    if (cursor >= words) {
      cursor = 0;
      pattern = (pattern + 1) % 4;
      ++pass;
    }
  }
};

burn::Sample read_nvml(const Nvml& nvml, std::optional<int> h, void* xid_set) {
  burn::Sample x;
  if (!h) return x;
  const ClockSnapshot c = nvml.snapshot(*h);
  x.sm_mhz = c.sm_mhz;
  x.mem_mhz = c.mem_mhz;
  x.temperature_c = c.temperature_c;
  x.power_w = c.power_w;
  x.throttle_mask = c.throttle_mask;
  x.power_limit_w = nvml.power_limit_w(*h);
  const EccCounters e = nvml.ecc_counters(*h);
  x.ecc_corrected = e.volatile_corrected;
  x.ecc_uncorrected = e.volatile_uncorrected;
  x.pcie_replays = nvml.pcie_replay_counter(*h);
  const PcieLink l = nvml.pcie(*h);
  x.link_gen = l.gen_current;
  x.link_width = l.width_current;
  if (xid_set) x.xids = nvml.xid_events_poll(xid_set);
  return x;
}

}  // namespace

void burn::run_burn(CaseContext& ctx) {
  const GpuInfo& g = ctx.gpu();
  const Settings& st = ctx.settings();
  const double duration = st.number("NODEBENCH_BURN_DURATION");
  std::string why_not;
  const auto wl = burn::choose_workload(g.cc(), burn::parse_precision(st.choice("NODEBENCH_BURN_PRECISION")), why_not);
  if (!wl) ctx.skip(why_not, ReasonKind::unsupported);
  burn::Fault fault = burn::parse_fault(st.text("NODEBENCH_BURN_TEST_FAULT"));
  if (fault.gpu != g.index) fault = burn::Fault{};
  const cudaStream_t s = ctx.stream();
  const Nvml& nvml = ctx.nvml();
  const std::optional<int> h = g.nvml_index;
  const std::string tag = "burn: GPU " + std::to_string(g.index);

  // The GEMM and its reference, computed twice: a healthy GPU repeats the same call bit for bit.
  Gemm gemm(*wl, s);
  DeviceBuffer cmp(sizeof(k::BurnCompare) * 1024);
  // The first call may differ from the later ones (cuBLAS's first choice of kernel): when the
  // second result differs from the first, the second becomes the reference and a third must
  // repeat it bit for bit.
  auto compare_once = [&]() {
    NB_CUDA(cudaMemsetAsync(cmp.get(), 0, sizeof(k::BurnCompare), s));
    k::launch_burn_compare(s, gemm.c.get(), gemm.ref.get(), gemm.elems, wl->out_bytes,
                           static_cast<k::BurnCompare*>(cmp.get()));
    k::BurnCompare r{};
    NB_CUDA(cudaMemcpyAsync(&r, cmp.get(), sizeof r, cudaMemcpyDeviceToHost, s));
    NB_CUDA(cudaStreamSynchronize(s));
    return r;
  };
  gemm.run(gemm.ref.get());
  NB_CUDA(cudaStreamSynchronize(s));
  const double g0 = now_s();
  gemm.run(gemm.c.get());
  k::BurnCompare first = compare_once();
  const double one_gemm_s = std::max(1e-5, now_s() - g0);
  std::string reference_note = "the second call repeated the first bit for bit";
  if (first.faulty) {
    NB_CUDA(cudaMemcpyAsync(gemm.ref.get(), gemm.c.get(), gemm.elems * size_t(wl->out_bytes), cudaMemcpyDeviceToDevice, s));
    gemm.run(gemm.c.get());
    const k::BurnCompare third = compare_once();
    reference_note = "the second call differed from the first in " + std::to_string(first.faulty) +
                     " elements; the third repeated the second " + (third.faulty ? "NOT " : "") + "bit for bit";
    first = third;
  }
  json& d = ctx.details();
  d["precision"] = burn::to_string(wl->precision);
  d["workload"] = {{"gemm", "cuBLAS " + std::string(wl->precision == Precision::fp64 ? "DGEMM" : "GemmEx") + " n=" +
                                std::to_string(wl->n)},
                   {"n", wl->n},
                   {"input_bytes", wl->in_bytes},
                   {"accumulate", wl->accumulate},
                   {"tensor_cores", wl->tensor_cores},
                   {"why", wl->why},
                   {"check", "every result compared bit for bit with the reference"}};
  std::string ref_problem;
  if (first.faulty)
    ref_problem = "before the burn, the same GEMM gave different bits on repeated calls (" + reference_note + ", " +
                  std::to_string(first.faulty) + " elements differ): the GPU does not repeat its own result";
  d["reference_repeated"] = first.faulty == 0;
  d["reference_note"] = reference_note;

  // The memory test: nearly all free memory, a full pass first.
  MemTest mem;
  if (fault.kind == burn::Fault::Kind::mem) mem.fault = fault;
  {
    size_t free_b = 0, total_b = 0;
    NB_CUDA(cudaMemGetInfo(&free_b, &total_b));
    const size_t reserve = std::max<size_t>(size_t(512) << 20, total_b / 50);
    size_t bytes = free_b > reserve ? (free_b - reserve) / (size_t(2) << 20) * (size_t(2) << 20) : 0;
    while (bytes >= (size_t(64) << 20)) {
      void* p = nullptr;
      if (cudaMalloc(&p, bytes) == cudaSuccess) {
        cudaFree(p);
        break;
      }
      (void)cudaGetLastError();
      bytes = bytes / 10 * 9 / (size_t(2) << 20) * (size_t(2) << 20);
    }
    mem.buf = DeviceBuffer(bytes);
    mem.words = bytes / 4;
    if (mem.fault && mem.fault->word >= mem.words) mem.fault->word = mem.words / 2;
    d["memory_test"] = {{"bytes", bytes}, {"free_bytes_before", free_b}, {"total_bytes", total_b},
                        {"patterns", {"walking_ones", "walking_zeros", "moving_inversions", "random"}}};
    const double m0 = now_s();
    mem.full_pass(s, [&] { return ctx.stop_requested(); });
    d["memory_test"]["initial_pass_s"] = now_s() - m0;
  }

  burn::GpuFacts facts;
  void* xid_set = nullptr;
  // Closes the Xid event set however the case ends.
  struct XidGuard {
    const Nvml& nvml;
    void*& set;
    ~XidGuard() {
      if (set) nvml.xid_events_close(set);
    }
  } xid_guard{nvml, xid_set};
  if (h) {
    facts.slowdown_c = nvml.slowdown_temperature_c(*h);
    const PcieLink l = nvml.pcie(*h);
    facts.link_gen_max = l.gen_max;
    facts.link_width_max = l.width_max;
    if (auto x = nvml.xid_events_open(*h)) xid_set = *x;
  }
  d["gpu_facts"] = {{"slowdown_temperature_c", facts.slowdown_c ? json(*facts.slowdown_c) : json(nullptr)},
                    {"shutdown_temperature_c", h && nvml.shutdown_temperature_c(*h) ? json(*nvml.shutdown_temperature_c(*h)) : json(nullptr)},
                    {"pcie_gen_max", facts.link_gen_max ? json(*facts.link_gen_max) : json(nullptr)},
                    {"pcie_width_max", facts.link_width_max ? json(*facts.link_width_max) : json(nullptr)},
                    {"xid_events", xid_set ? "NVML event set" : "unavailable"}};

  TimelineFile* tfile = nullptr;
  if (const std::string path = st.text("NODEBENCH_BURN_TIMELINE"); !path.empty()) {
    tfile = &ctx.session_resources().get<TimelineFile>();
    std::lock_guard<std::mutex> lock(tfile->mu);
    tfile->path = path;
  }

  // The burn: batches of GEMMs (each checked) of about 0.1 s, a memory-test chunk a second.
  const int batch = int(std::clamp(0.1 / one_gemm_s, 1.0, 1024.0));
  const size_t chunk_words = std::min(mem.words, (size_t(512) << 20) / 4);
  std::vector<k::BurnCompare> got(static_cast<size_t>(batch));
  std::vector<burn::Sample> timeline;
  std::vector<double> per_gemm_s;
  json faulty = json::array();
  unsigned long long faulty_total = 0;
  long long iteration = 0;
  std::string first_fault;
  const double t0 = now_s(), deadline = t0 + duration;
  double last_print = t0;
  bool cut_short = false;
  std::cerr << tag << ": " << burn::to_string(wl->precision) << " GEMM n=" << wl->n << " and a memory test over "
            << fmt(double(mem.words) * 4 / double(1ull << 30), 1) << " GiB for " << clock_text(duration) << std::endl;
  for (double w0 = t0; w0 < deadline;) {
    if (ctx.stop_requested()) {
      cut_short = true;
      break;
    }
    const double w_end = std::min(w0 + 1.0, deadline);
    long long iters = 0;
    while (now_s() < w_end && !ctx.stop_requested()) {
      NB_CUDA(cudaMemsetAsync(cmp.get(), 0, sizeof(k::BurnCompare) * size_t(batch), s));
      for (int i = 0; i < batch; ++i) {
        gemm.run(gemm.c.get());
        if (fault.kind == burn::Fault::Kind::gemm && iteration + i == fault.iteration) {
          // The planted fault: elements of this result overwritten before the check.
          const size_t at = gemm.elems / 2;
          NB_CUDA(cudaMemsetAsync(static_cast<char*>(gemm.c.get()) + at * size_t(wl->out_bytes), 0x5A,
                                  size_t(fault.elements) * size_t(wl->out_bytes), s));
        }
        k::launch_burn_compare(s, gemm.c.get(), gemm.ref.get(), gemm.elems, wl->out_bytes,
                               static_cast<k::BurnCompare*>(cmp.get()) + i);
      }
      NB_CUDA(cudaGetLastError());
      NB_CUDA(cudaMemcpyAsync(got.data(), cmp.get(), sizeof(k::BurnCompare) * size_t(batch), cudaMemcpyDeviceToHost, s));
      NB_CUDA(cudaStreamSynchronize(s));
      for (int i = 0; i < batch; ++i)
        if (got[size_t(i)].faulty) {
          faulty_total += got[size_t(i)].faulty;
          const long long it = iteration + i;
          if (faulty.size() < 100)
            faulty.push_back({{"iteration", it}, {"t_s", now_s() - t0}, {"faulty_elements", got[size_t(i)].faulty},
                              {"first_index", got[size_t(i)].first_index}});
          if (first_fault.empty()) {
            std::ostringstream os;
            os << "GEMM iteration " << it << " at t=" << fmt(now_s() - t0, 0) << " s: " << got[size_t(i)].faulty
               << " faulty element(s) of " << gemm.elems << ", first at index " << got[size_t(i)].first_index
               << " (row " << got[size_t(i)].first_index % size_t(wl->n) << ", column "
               << got[size_t(i)].first_index / size_t(wl->n) << ") bits 0x" << std::hex << got[size_t(i)].got_bits
               << " for 0x" << got[size_t(i)].want_bits << std::dec;
            first_fault = os.str();
          }
        }
      iteration += batch;
      iters += batch;
    }
    // A memory-test chunk, then the second's sample.
    const double before_mem = mem.bytes_moved;
    if (mem.words) mem.step(s, chunk_words, now_s() - t0);
    const double w1 = now_s();
    burn::Sample x = read_nvml(nvml, h, xid_set);
    x.t_s = w1 - t0;
    const double span = std::max(1e-6, w1 - w0);
    x.gemm_iterations = iters;
    x.gemm_tflops = double(iters) * gemm.tflop() / span;
    x.mem_gbps = (mem.bytes_moved - before_mem) / 1e9 / span;
    if (iters) per_gemm_s.push_back(span / double(iters));
    timeline.push_back(x);
    if (tfile) {
      json line = burn::to_json(x);
      line["gpu"] = g.index;
      line["faulty_elements"] = faulty_total;
      line["memory_errors"] = mem.errors;
      tfile->write(line);
    }
    if (w1 - last_print >= 10 || w1 >= deadline) {
      last_print = w1;
      std::cerr << tag << ": " << clock_text(deadline - w1) << " left, " << fmt(x.gemm_tflops, 1) << " TFLOPS "
                << burn::to_string(wl->precision) << ", " << (x.power_w ? fmt(*x.power_w, 0) + " W" : std::string("? W"))
                << (x.power_limit_w ? " of " + fmt(*x.power_limit_w, 0) + " W" : std::string()) << ", "
                << (x.temperature_c ? fmt(*x.temperature_c, 0) + " C" : std::string("? C")) << ", "
                << (x.sm_mhz ? fmt(*x.sm_mhz, 0) + " MHz" : std::string("? MHz")) << ", faulty elements " << faulty_total
                << ", memory errors " << mem.errors << std::endl;
    }
    w0 = w1;
  }
  if (ctx.stop_requested()) cut_short = true;

  const burn::Summary sum = burn::summarize(timeline, facts);
  d["cut_short"] = cut_short;
  d["planned_duration_s"] = duration;
  d["gemm_iterations"] = iteration;
  d["faulty_elements"] = faulty_total;
  d["faulty_iterations"] = faulty;
  d["memory_test"]["errors"] = mem.errors;
  d["memory_test"]["first_error"] = mem.first_error.empty() ? json(nullptr) : json(mem.first_error);
  d["memory_test"]["passes"] = mem.pass;
  d["summary"] = burn::to_json(sum);
  json tl = json::array();
  for (const auto& x : timeline) tl.push_back(burn::to_json(x));
  d["timeline"] = tl;
  if (tfile && !tfile->error.empty()) d["timeline_file_error"] = tfile->error;
  if (cut_short) ctx.output().flags.push_back("cut_short");
  if (fault.kind != burn::Fault::Kind::none) ctx.output().flags.push_back("planted_fault");

  ctx.metric(burn::kSustainedGemm, sum.sustained_tflops);
  ctx.metric(burn::kFirstMinuteGemm, sum.first_minute_tflops);
  ctx.metric(burn::kMeanPower, sum.mean_power_w);
  ctx.metric(burn::kMemoryTest, sum.mean_mem_gbps);
  ctx.metric(burn::kFaultyElements, double(faulty_total));
  ctx.metric(burn::kMemoryErrors, double(mem.errors));
  if (sum.max_temperature_c) ctx.metric(burn::kMaxTemperature, *sum.max_temperature_c);
  if (!per_gemm_s.empty()) {
    Measurement m;
    m.samples_s = per_gemm_s;
    ctx.set_measurement(m);
    ctx.set_throughput(burn::kTflops, gemm.tflop(), peak_key(*wl, g));
  }
  std::vector<std::string> wrongs;
  if (!ref_problem.empty()) wrongs.push_back(ref_problem);
  if (faulty_total) wrongs.push_back(std::to_string(faulty_total) + " faulty GEMM element(s); first: " + first_fault);
  if (mem.errors) wrongs.push_back(std::to_string(mem.errors) + " memory error(s); first: " + mem.first_error);
  if (!wrongs.empty()) ctx.wrong("GPU " + std::to_string(g.index) + ": " + join(wrongs, "; "));
  std::cerr << tag << ": " << (cut_short ? "cut short after " : "done after ") << clock_text(now_s() - t0) << ", sustained "
            << fmt(sum.sustained_tflops, 1) << " TFLOPS, mean " << fmt(sum.mean_power_w, 0) << " W, faulty elements "
            << faulty_total << ", memory errors " << mem.errors << std::endl;
}

}  // namespace nb
