// The nccl family's shared driver: the collectives' table (CollectiveDef: byte counts, data,
// expected results, bus-bandwidth factors, calls) and the measurement of one collective on a team
// of GPUs, in one process or under MPI, with its check of every output element.
#include "nccl_spec.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>

#include "bench/settings.hpp"
#include "kernels/nccl/collective_kernels.cuh"
#include "shared/nccl/collectives.hpp"
#include "kernels/common/kernels.cuh"
#include "cluster/mpi.hpp"
#include "shared/nccl/nccl_team.hpp"
#include "base/text.hpp"
#include "base/resources.hpp"
#include "base/stats.hpp"
#include "node/topology.hpp"
#include "base/verify.hpp"

#if NB_HAVE_NCCL
#include <nccl.h>
#endif

extern char** environ;

namespace nb::nccl {

#if NB_HAVE_NCCL

using coll::Collective;
using coll::DType;
using nlohmann::json;

namespace {

// ---------------------------------------------------------------- the collectives' table

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::f32: return ncclFloat32;
    case DType::f16: return ncclFloat16;
    case DType::bf16:
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 10, 0)
      return ncclBfloat16;
#else
      throw SkipCase{"this NCCL has no bfloat16 (2.10 or newer needed)"};
#endif
  }
  return ncclFloat32;
}

kernels::CollDType kernel_type(DType t) {
  return t == DType::f32 ? kernels::CollDType::f32 : t == DType::f16 ? kernels::CollDType::f16 : kernels::CollDType::bf16;
}

// A rank's buffers: `a` the send buffer (out of place), `b` the receive buffer; `in`/`out`
// where the collective reads and writes (in place: both inside `b`).
struct Slot {
  Member* member = nullptr;
  DeviceBuffer a, b;
  void* in = nullptr;
  void* out = nullptr;
  std::unique_ptr<Stream> stream;
  std::unique_ptr<Event> e0, e1;
  cudaGraphExec_t graph = nullptr;
  DeviceBuffer counters;  // [0] wrong elements, [1] first wrong index
  PinnedBuffer hold;      // [0] release, [1] timed out: the flag of the kernel that holds the stream
  int32_t* hold_dev = nullptr;
  Slot() = default;
  Slot(Slot&& o) noexcept
      : member(o.member), a(std::move(o.a)), b(std::move(o.b)), in(o.in), out(o.out), stream(std::move(o.stream)),
        e0(std::move(o.e0)), e1(std::move(o.e1)), graph(std::exchange(o.graph, nullptr)), counters(std::move(o.counters)),
        hold(std::move(o.hold)), hold_dev(std::exchange(o.hold_dev, nullptr)) {}
  Slot& operator=(Slot&&) = delete;
  Slot(const Slot&) = delete;
  ~Slot() {
    if (graph) (void)cudaGraphExecDestroy(graph);
  }
};

struct Layout {
  const coll::Counts& k;
  size_t esize;
  int rank, nranks;
  DType dtype;
  bool in_place;
};

void place_same(Slot& s, const Layout& l) {  // all-reduce, broadcast
  s.b = DeviceBuffer(l.k.recv * l.esize);
  if (!l.in_place) s.a = DeviceBuffer(l.k.send * l.esize);
  s.out = s.b.get();
  s.in = l.in_place ? s.b.get() : s.a.get();
}
void place_scatter(Slot& s, const Layout& l) {  // reduce-scatter: in place, the output is the rank's chunk of the input
  if (l.in_place) {
    s.b = DeviceBuffer(l.k.send * l.esize);
    s.in = s.b.get();
    s.out = s.b.as<char>() + size_t(l.rank) * l.k.chunk * l.esize;
  } else {
    s.a = DeviceBuffer(l.k.send * l.esize);
    s.b = DeviceBuffer(l.k.recv * l.esize);
    s.in = s.a.get();
    s.out = s.b.get();
  }
}
void place_gather(Slot& s, const Layout& l) {  // all-gather: in place, the input is the rank's chunk of the output
  s.b = DeviceBuffer(l.k.recv * l.esize);
  s.out = s.b.get();
  if (l.in_place) {
    s.in = s.b.as<char>() + size_t(l.rank) * l.k.chunk * l.esize;
  } else {
    s.a = DeviceBuffer(l.k.send * l.esize);
    s.in = s.a.get();
  }
}

struct CollectiveDef {
  Collective id;
  kernels::CollKind kind;
  coll::Counts (*count)(size_t bytes, size_t esize, int nranks);  // byte count: the buffers
  double (*bus_factor)(int nranks);
  void (*place)(Slot&, const Layout&);
  void (*init)(Slot&, const Layout&, kernels::CollKind, uint64_t seed, cudaStream_t);    // data initialisation
  void (*expect)(Slot&, const Layout&, kernels::CollKind, uint64_t seed, cudaStream_t);  // expected result: counts mismatches
  ncclResult_t (*run)(const Slot&, const Layout&, ncclComm_t, cudaStream_t);
};

void init_input(Slot& s, const Layout& l, kernels::CollKind kind, uint64_t seed, cudaStream_t st) {
  // Everything the collective may write is poisoned first (all-ones bits: NaN in every type),
  // so an element it failed to write is caught.
  if (s.a.get()) NB_CUDA(cudaMemsetAsync(s.a.get(), 0xFF, s.a.bytes(), st));
  NB_CUDA(cudaMemsetAsync(s.b.get(), 0xFF, s.b.bytes(), st));
  kernels::launch_coll_fill(st, s.in, l.k.send, kernel_type(l.dtype), kind, l.rank, seed);
  NB_CUDA_LAUNCH();
}

double tolerance(DType t, int nranks) {
  // Sums of {0, 1} over up to 256 ranks are exact in bfloat16 (2048 in half).
  if (t == DType::bf16 && nranks > 256) return nranks / 64.0;
  if (t == DType::f16 && nranks > 2048) return nranks / 512.0;
  return 0.0;
}

void expect_output(Slot& s, const Layout& l, kernels::CollKind kind, uint64_t seed, cudaStream_t st) {
  NB_CUDA(cudaMemsetAsync(s.counters.get(), 0, 8, st));
  NB_CUDA(cudaMemsetAsync(s.counters.as<char>() + 8, 0xFF, 8, st));
  kernels::launch_coll_check(st, s.out, l.k.recv, kernel_type(l.dtype), kind, l.rank, l.nranks, l.k.chunk, seed,
                             tolerance(l.dtype, l.nranks), s.counters.as<unsigned long long>());
  NB_CUDA_LAUNCH();
}

const std::vector<CollectiveDef>& table() {
  static const std::vector<CollectiveDef> t = {
      {Collective::all_reduce, kernels::CollKind::all_reduce,
       [](size_t b, size_t e, int n) { return coll::counts(Collective::all_reduce, b, e, n); },
       [](int n) { return coll::bus_factor(Collective::all_reduce, n); }, place_same, init_input, expect_output,
       [](const Slot& s, const Layout& l, ncclComm_t c, cudaStream_t st) {
         return ncclAllReduce(s.in, s.out, l.k.send, nccl_type(l.dtype), ncclSum, c, st);
       }},
      {Collective::reduce_scatter, kernels::CollKind::reduce_scatter,
       [](size_t b, size_t e, int n) { return coll::counts(Collective::reduce_scatter, b, e, n); },
       [](int n) { return coll::bus_factor(Collective::reduce_scatter, n); }, place_scatter, init_input, expect_output,
       [](const Slot& s, const Layout& l, ncclComm_t c, cudaStream_t st) {
         return ncclReduceScatter(s.in, s.out, l.k.chunk, nccl_type(l.dtype), ncclSum, c, st);
       }},
      {Collective::all_gather, kernels::CollKind::all_gather,
       [](size_t b, size_t e, int n) { return coll::counts(Collective::all_gather, b, e, n); },
       [](int n) { return coll::bus_factor(Collective::all_gather, n); }, place_gather, init_input, expect_output,
       [](const Slot& s, const Layout& l, ncclComm_t c, cudaStream_t st) {
         return ncclAllGather(s.in, s.out, l.k.chunk, nccl_type(l.dtype), c, st);
       }},
      {Collective::broadcast, kernels::CollKind::broadcast,
       [](size_t b, size_t e, int n) { return coll::counts(Collective::broadcast, b, e, n); },
       [](int n) { return coll::bus_factor(Collective::broadcast, n); }, place_same, init_input, expect_output,
       [](const Slot& s, const Layout& l, ncclComm_t c, cudaStream_t st) {
         return ncclBroadcast(s.in, s.out, l.k.send, nccl_type(l.dtype), 0, c, st);
       }},
  };
  return t;
}

const CollectiveDef& def_of(Collective c) {
  for (const auto& d : table())
    if (d.id == c) return d;
  throw Error("no table entry for collective " + coll::to_string(c));
}

double decode(const void* p, DType t) {
  if (t == DType::f32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  return t == DType::f16 ? half_to_double(h) : bf16_to_double(h);
}


}  // namespace

// ---------------------------------------------------------------- the shared driver


TeamResult measure_team(Team* team, int nranks, const Spec& spec, const MeasureConfig& cfg, Lockstep& ls) {
  const CollectiveDef& def = def_of(spec.coll);
  const size_t esize = coll::elem_size(spec.dtype);
  TeamResult res;
  res.k = def.count(spec.bytes, esize, nranks);
  res.factor = def.bus_factor(nranks);
  std::vector<Slot> slots;
  std::vector<Layout> layouts;
  std::vector<ncclComm_t> comms;
  std::vector<cudaEvent_t> ends;
  // After a failed step the communicators are aborted before the buffers are freed: freeing
  // waits for the GPU, and a collective that hangs only ends when its communicator is aborted.
  struct AbortOnFailure {
    Team* team;
    const Lockstep& ls;
    ~AbortOnFailure() {
      if (team && ls.failed()) abort_team(*team);
    }
  } abort_on_failure{team, ls};
  constexpr size_t kWarmup = 5, kPilot = 3;
  const std::string what = coll::to_string(spec.coll) + " of " + coll::size_name(spec.bytes);

  // Enqueues `count` collectives on every local member, each a group over the members.
  auto enqueue = [&](size_t count) {
    for (size_t i = 0; i < count; ++i) {
      NB_NCCL(ncclGroupStart());
      ncclResult_t first = ncclSuccess;
      ncclComm_t first_comm = nullptr;
      for (size_t j = 0; j < slots.size() && (first == ncclSuccess || first == ncclInProgress); ++j) {
        first = def.run(slots[j], layouts[j], slots[j].member->comm, slots[j].stream->get());
        first_comm = slots[j].member->comm;
      }
      const ncclResult_t end = ncclGroupEnd();  // always closed, whatever failed inside
      check_nccl(first, "collective", first_comm);
      if (check_nccl(end, "ncclGroupEnd") == ncclInProgress) settle(comms, deadline(), what);
    }
  };
  auto record = [&](bool start) {
    for (auto& s : slots) {
      DeviceGuard g(s.member->device);
      (start ? s.e0 : s.e1)->record(s.stream->get());
    }
  };
  // Seconds per collective: the slowest local member's events.
  auto elapsed = [&](size_t count) {
    double t = 0;
    for (auto& s : slots) t = std::max(t, s.e1->seconds_since(*s.e0) / double(count));
    return t;
  };

  // Ends the capture of every member's stream, then instantiates each graph (on its GPU).
  auto instantiate_all = [&] {
    std::vector<cudaGraph_t> graphs(slots.size(), nullptr);
    cudaError_t first = cudaSuccess;
    for (size_t j = 0; j < slots.size(); ++j) {
      const cudaError_t e = cudaStreamEndCapture(slots[j].stream->get(), &graphs[j]);
      if (first == cudaSuccess) first = e;
    }
    for (size_t j = 0; j < slots.size() && first == cudaSuccess; ++j) {
      DeviceGuard dg(slots[j].member->device);
      first = cudaGraphInstantiate(&slots[j].graph, graphs[j], 0);
    }
    for (cudaGraph_t g : graphs)
      if (g) (void)cudaGraphDestroy(g);
    NB_CUDA(first);
  };

  // One timed sample of `count` collectives (or of each member's graph). A kernel holds every
  // member's stream while the host queues the work and is released after it, so the time is
  // the GPUs' and not the host's enqueue cost (a non-blocking communicator's enqueue can take
  // longer than a small collective); it lets go by itself after kHoldNs. Returns seconds per
  // collective (the slowest member's events) and sets `host_per_op` to the host's time.
  constexpr uint64_t kHoldNs = 2'000'000'000ull;
  // Opt-in (NODEBENCH_NCCL_HOLD=1; not yet seen working on several GPUs); off after a hold that
  // timed out. Without it a sample of small collectives includes the host's enqueue pace.
  bool hold_ok = current_settings().flag("NODEBENCH_NCCL_HOLD");
  double host_per_op = 0;
  auto timed = [&](size_t count, bool use_graph) -> double {
    if (hold_ok) {
      for (auto& s : slots) {
        volatile int32_t* f = s.hold.as<volatile int32_t>();
        f[0] = 0;
        f[1] = 0;
        DeviceGuard g(s.member->device);
        kernels::launch_blocking(s.stream->get(), s.hold_dev, s.hold_dev + 1, kHoldNs);
        NB_CUDA_LAUNCH();
      }
    }
    struct Release {  // whatever happens, no kernel is left holding a stream
      std::vector<Slot>& v;
      void operator()() {
        for (auto& s : v) s.hold.as<volatile int32_t>()[0] = 1;
      }
      ~Release() { (*this)(); }
    } release{slots};
    const auto h0 = Clock::now();
    record(true);
    if (use_graph) {
      for (auto& s : slots) {
        DeviceGuard g(s.member->device);
        NB_CUDA(cudaGraphLaunch(s.graph, s.stream->get()));
      }
    } else {
      enqueue(count);
    }
    record(false);
    host_per_op = std::chrono::duration<double>(Clock::now() - h0).count() / double(count);
    release();
    wait_events(ends, comms, what);
    for (auto& s : slots)
      if (hold_ok && s.hold.as<volatile int32_t>()[1]) {
        res.m.blocking_timeout = true;
        hold_ok = false;
      }
    return elapsed(count);
  };

  // 1. Buffers, streams, events; fresh input.
  trace(what + ": setup");
  ls.step([&] {
    if (!team) return;
    for (auto& m : team->local) {
      DeviceGuard g(m.device);
      Slot s;
      s.member = &m;
      layouts.push_back({res.k, esize, m.rank, nranks, spec.dtype, spec.in_place});
      def.place(s, layouts.back());
      s.stream = std::make_unique<Stream>();
      s.e0 = std::make_unique<Event>();
      s.e1 = std::make_unique<Event>();
      s.counters = DeviceBuffer(16);
      s.hold = PinnedBuffer(8, cudaHostAllocMapped | cudaHostAllocPortable);
      std::memset(s.hold.get(), 0, 8);
      NB_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void**>(&s.hold_dev), s.hold.get(), 0));
      def.init(s, layouts.back(), def.kind, 1, s.stream->get());
      comms.push_back(m.comm);
      slots.push_back(std::move(s));
    }
    for (auto& s : slots) {
      ends.push_back(s.e1->get());
      s.stream->sync();
    }
  });

  // 2. Warm-up, and a first estimate of one collective's time.
  double pilot = 0, pilot_host = 0;
  trace(what + ": warm-up");
  ls.step([&] {
    if (slots.empty()) return;
    if (const double stall = test_stall_s(); stall > 0 && mpi::rank() == 0) {
      // The test hook: work that does not finish before the watchdog's timeout (a kernel that
      // spins S seconds on the GPU, with no collective queued behind it).
      static PinnedBuffer* flag = new PinnedBuffer(8, cudaHostAllocMapped | cudaHostAllocPortable);  // outlives the kernel
      std::memset(flag->get(), 0, 8);
      int32_t* dev = nullptr;
      NB_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev), flag->get(), 0));
      DeviceGuard g(slots[0].member->device);
      kernels::launch_blocking(slots[0].stream->get(), dev, dev + 1, uint64_t(stall * 1e9));
      NB_CUDA_LAUNCH();
      record(false);
      wait_events(ends, comms, "warm-up " + what + " (held by NODEBENCH_NCCL_TEST_STALL_S)");
    }
    record(true);
    enqueue(kWarmup);
    record(false);
    wait_events(ends, comms, "warm-up " + what);
    pilot = timed(kPilot, false);
    pilot_host = host_per_op;
  });
  if (ls.failed()) return res;

  // 3. Rank 0 decides the batch (collectives per sample) and the sample count for everyone.
  pilot = mpi::allreduce(pilot, mpi::Op::max);
  pilot_host = mpi::allreduce(pilot_host, mpi::Op::max);
  int64_t plan[2] = {1, 1};
  if (mpi::rank() == 0) {
    const double min_sample = std::max(cfg.min_sample_s, 1e-3);  // long enough to cover the ranks' skew
    const double t = std::max(pilot, 1e-7);
    const size_t batch = std::clamp<size_t>(size_t(std::ceil(min_sample / t)), 1, std::max<size_t>(cfg.max_batch, 1));
    size_t samples = cfg.fixed_samples;
    if (samples == 0) {
      // Within the time cap at the pace of the slower of the GPUs and the host's enqueue.
      const size_t cap = std::min<size_t>(cfg.max_samples, 100);
      const size_t fit = size_t(cfg.max_time_s / (std::max(t, pilot_host) * double(batch)));
      samples = std::clamp<size_t>(fit, std::min(cfg.min_samples, cap), cap);
    }
    plan[0] = int64_t(batch);
    plan[1] = int64_t(std::max<size_t>(samples, 1));
  }
  mpi::broadcast(plan, sizeof plan, 0);
  res.m.batch = size_t(plan[0]);
  res.m.warmup_runs = kWarmup + kPilot;
  res.m.stop = StopReason::fixed;
  std::vector<double> samples(size_t(plan[1]), 0.0);

  // 4. The timed samples (through a CUDA graph of `batch` collectives when asked).
  trace(what + ": " + std::to_string(samples.size()) + " samples of " + std::to_string(res.m.batch) +
        (spec.graph ? " (graph)" : ""));
  ls.step([&] {
    if (slots.empty()) return;
    if (spec.graph) {
      for (auto& s : slots) NB_CUDA(cudaStreamBeginCapture(s.stream->get(), cudaStreamCaptureModeThreadLocal));
      try {
        enqueue(res.m.batch);
      } catch (...) {
        for (auto& s : slots) {
          cudaGraph_t g = nullptr;
          (void)cudaStreamEndCapture(s.stream->get(), &g);
          if (g) (void)cudaGraphDestroy(g);
        }
        throw;
      }
      // Every capture ends before any graph is instantiated: instantiating is not allowed
      // while this thread still captures another GPU's stream.
      instantiate_all();
    }
    for (double& out : samples) out = timed(res.m.batch, spec.graph);
  });
  if (ls.failed()) return res;
  // Every rank's samples: a sample is the slowest rank's.
  mpi::allreduce(samples, mpi::Op::max);
  res.m.samples_s = samples;

  // 5. Correctness on fresh data: one collective (by the same launch path), every output
  //    element checked on the GPU.
  const uint64_t seed = 0xC0FFEEull + spec.bytes;
  uint64_t local_wrong = 0;
  trace(what + ": verification");
  ls.step([&] {
    if (slots.empty()) return;
    for (size_t j = 0; j < slots.size(); ++j) {
      DeviceGuard g(slots[j].member->device);
      def.init(slots[j], layouts[j], def.kind, seed, slots[j].stream->get());
    }
    if (spec.graph) {
      for (auto& s : slots) {
        if (s.graph) (void)cudaGraphExecDestroy(s.graph);
        s.graph = nullptr;
        NB_CUDA(cudaStreamBeginCapture(s.stream->get(), cudaStreamCaptureModeThreadLocal));
      }
      std::string err;
      try {
        enqueue(1);
      } catch (const std::exception& e) {
        err = e.what();
      }
      if (!err.empty()) {
        for (auto& s : slots) {
          cudaGraph_t g = nullptr;
          (void)cudaStreamEndCapture(s.stream->get(), &g);
          if (g) (void)cudaGraphDestroy(g);
        }
        throw Error(err);
      }
      instantiate_all();
      for (auto& s : slots) {
        DeviceGuard g(s.member->device);
        NB_CUDA(cudaGraphLaunch(s.graph, s.stream->get()));
      }
    } else {
      enqueue(1);
    }
    record(false);
    wait_events(ends, comms, "verification of " + what);
    for (size_t j = 0; j < slots.size(); ++j) {
      Slot& s = slots[j];
      DeviceGuard g(s.member->device);
      def.expect(s, layouts[j], def.kind, seed, s.stream->get());
      unsigned long long c[2] = {0, 0};
      NB_CUDA(cudaMemcpyAsync(c, s.counters.get(), 16, cudaMemcpyDeviceToHost, s.stream->get()));
      s.stream->sync();
      local_wrong += c[0];
      res.checked += layouts[j].k.recv;
      if (c[0] && res.first_wrong.empty()) {
        unsigned char raw[4] = {};
        NB_CUDA(cudaMemcpy(raw, static_cast<const char*>(s.out) + size_t(c[1]) * esize, esize, cudaMemcpyDeviceToHost));
        const double want = kernels::coll_expected(def.kind, layouts[j].rank, nranks, layouts[j].k.recv,
                                                   layouts[j].k.chunk, size_t(c[1]), seed);
        std::ostringstream os;
        os << "rank " << layouts[j].rank << " (GPU " << s.member->device << "): " << c[0] << " of "
           << layouts[j].k.recv << " elements wrong; first at index " << c[1] << ": got " << decode(raw, spec.dtype)
           << ", expected " << want;
        res.first_wrong = os.str();
      }
    }
  });
  if (ls.failed()) return res;
  // Wrong elements of every rank, and the first description, at rank 0.
  res.wrong_per_rank.assign(size_t(mpi::size()), 0.0);
  res.wrong_per_rank[size_t(mpi::rank())] = double(local_wrong);
  mpi::allreduce(res.wrong_per_rank, mpi::Op::sum);
  for (double w : res.wrong_per_rank) res.wrong += uint64_t(w);
  const std::vector<std::string> firsts = mpi::gather_strings(res.first_wrong, 0);
  for (const auto& f : firsts)
    if (res.first_wrong.empty() && !f.empty()) res.first_wrong = f;
  res.checked = uint64_t(mpi::allreduce(double(res.checked), mpi::Op::sum));

  res.median = compute_stats(res.m.samples_s).median;
  res.algbw = double(res.k.bytes) / 1e9 / res.median;
  res.busbw = res.algbw * res.factor;
  return res;
}

void fill_output(json& metrics, json& details, const TeamResult& r, const Spec& spec, int nranks) {
  metrics["algbw_gbps"] = r.algbw;
  metrics["busbw_gbps"] = r.busbw;
  metrics["bus_factor_x"] = r.factor;
  metrics["data_bytes"] = double(r.k.bytes);
  metrics["gpu_count"] = nranks;
  metrics["wrong_count"] = double(r.wrong);
  details["nccl_version"] = nccl_version();
  details["nccl_env"] = nccl_env();
  details["timer"] = "CUDA events around each sample on every rank; a sample is the slowest rank's, per collective";
  details["iterations"] = {{"decided_by", "rank 0"},
                           {"batch", r.m.batch},
                           {"samples", r.m.samples_s.size()},
                           {"warmup", r.m.warmup_runs}};
  details["buffers"] = {{"send_elements", r.k.send}, {"recv_elements", r.k.recv}, {"chunk_elements", r.k.chunk}};
  details["watchdog_s"] = watchdog_s();
  details["nonblocking_communicators"] = nonblocking(mpi::active());
  std::vector<uint64_t> per_rank;
  for (double w : r.wrong_per_rank) per_rank.push_back(uint64_t(w));
  details["verification"] = {{"method", "fresh data (small integers, exact in every type), one collective, every "
                                        "output element of every rank compared on the GPU"},
                             {"elements_checked", r.checked},
                             {"wrong", r.wrong},
                             {"wrong_per_rank", per_rank},
                             {"tolerance", tolerance(spec.dtype, nranks)}};
  if (nranks == 1 && spec.in_place && spec.coll != Collective::reduce_scatter)
    details["note"] = "one rank, in place: NCCL has nothing to move; the time is the call's cost alone";
  else if (nranks == 1 && r.factor == 0)
    details["note"] = "one rank: the bus bandwidth is 0 by definition (nothing crosses a link); algbw_gbps is the "
                      "rate of the local operation";
}

#endif  // NB_HAVE_NCCL

}  // namespace nb::nccl
