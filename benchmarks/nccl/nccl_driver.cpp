// The nccl family's shared driver: the measurement of one collective on a team of GPUs, in one
// process or under MPI, with its check of every output element. What a collective is (its
// buffers, its bus-bandwidth factor) is described once, in shared/nccl/collectives.cpp; here only
// how its buffers are placed (by their shape) and which NCCL call runs it.
#include "nccl_spec.hpp"
#include "nccl_buffers.hpp"
#include "nccl_metrics.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <sstream>
#include <utility>

#include "kernels/nccl/collective_kernels.cuh"
#include "shared/nccl/collectives.hpp"
#include "kernels/common/kernels.cuh"
#include "cluster/mpi.hpp"
#include "shared/nccl/nccl_team.hpp"
#include "base/text.hpp"
#include "base/resources.hpp"
#include "base/stats.hpp"
#include "base/verify.hpp"

#if NB_HAVE_NCCL
#include <nccl.h>
#endif

namespace nb::nccl {

#if NB_HAVE_NCCL

using coll::Collective;
using coll::DType;
using nlohmann::json;

namespace {

// ---------------------------------------------------------------- the shared driver

// One measurement of a collective on a team, in steps every process takes in lockstep: buffers
// and fresh input, warm-up and a pilot, the sample plan (rank 0 decides), the timed samples, the
// check of every output element on fresh data.
class TeamRun {
 public:
  TeamRun(Teams& teams, const Settings& settings, Team* team, int nranks, const Spec& spec, const MeasureConfig& cfg,
          Lockstep& ls)
      : teams_(teams), team_(team), nranks_(nranks), spec_(spec), cfg_(cfg), ls_(ls),
        esize_(coll::elem_size(spec.dtype)), what_(coll::to_string(spec.coll) + " of " + bytes_label(int64_t(spec.bytes))),
        // Opt-in (NODEBENCH_NCCL_HOLD=1; not yet seen working on several GPUs); off after a hold
        // that timed out. Without it a sample of small collectives includes the host's enqueue pace.
        hold_ok_(settings.flag("NODEBENCH_NCCL_HOLD")) {
    res_.k = coll::counts(spec.coll, spec.bytes, esize_, nranks);
    res_.factor = coll::bus_factor(spec.coll, nranks);
  }
  // After a failed step the communicators are aborted before the buffers are freed: freeing
  // waits for the GPU, and a collective that hangs only ends when its communicator is aborted.
  ~TeamRun() {
    if (team_ && ls_.failed()) abort_team(*team_);
  }
  TeamRun(const TeamRun&) = delete;
  TeamRun& operator=(const TeamRun&) = delete;

  TeamResult go();

 private:
  void enqueue(size_t count);
  void record(bool start);
  double elapsed(size_t count) const;
  void capture(size_t count);
  void instantiate_all();
  void launch_graphs();
  double timed(size_t count, bool use_graph);
  void setup();
  void warm_up();
  void stall_hook();
  std::vector<double> plan_samples();
  void verify();
  void note_first_wrong(size_t j, const unsigned long long c[2], uint64_t seed);
  void gather_wrong(uint64_t local_wrong);

  static constexpr size_t kWarmup = 5, kPilot = 3;
  // The hold's kernel lets go by itself after this long.
  static constexpr uint64_t kHoldNs = 2'000'000'000ull;
  Teams& teams_;
  Team* team_;
  int nranks_;
  const Spec& spec_;
  const MeasureConfig& cfg_;
  Lockstep& ls_;
  size_t esize_;
  std::string what_;
  bool hold_ok_;
  TeamResult res_;
  std::vector<Slot> slots_;
  std::vector<Layout> layouts_;
  std::vector<ncclComm_t> comms_;
  std::vector<cudaEvent_t> ends_;
  double host_per_op_ = 0, pilot_ = 0, pilot_host_ = 0;
};

// Enqueues `count` collectives on every local member, each a group over the members.
void TeamRun::enqueue(size_t count) {
  for (size_t i = 0; i < count; ++i) {
    NB_NCCL(ncclGroupStart());
    ncclResult_t first = ncclSuccess;
    ncclComm_t first_comm = nullptr;
    for (size_t j = 0; j < slots_.size() && (first == ncclSuccess || first == ncclInProgress); ++j) {
      first = call(spec_.coll, slots_[j], layouts_[j], slots_[j].member->comm, slots_[j].stream->get());
      first_comm = slots_[j].member->comm;
    }
    const ncclResult_t end = ncclGroupEnd();  // always closed, whatever failed inside
    check_nccl(first, "collective", first_comm);
    if (check_nccl(end, "ncclGroupEnd") == ncclInProgress) settle(comms_, teams_.watchdog(), what_);
  }
}

void TeamRun::record(bool start) {
  for (auto& s : slots_) {
    DeviceGuard g(s.member->device);
    (start ? s.e0 : s.e1)->record(s.stream->get());
  }
}

// Seconds per collective: the slowest local member's events.
double TeamRun::elapsed(size_t count) const {
  double t = 0;
  for (const auto& s : slots_) t = std::max(t, s.e1->seconds_since(*s.e0) / double(count));
  return t;
}

// Captures `count` collectives on every member's stream into its graph (an earlier graph goes).
// A failed capture is ended on every stream before the error goes on.
void TeamRun::capture(size_t count) {
  for (auto& s : slots_) {
    s.drop_graph();
    NB_CUDA(cudaStreamBeginCapture(s.stream->get(), cudaStreamCaptureModeThreadLocal));
  }
  try {
    enqueue(count);
  } catch (...) {
    for (auto& s : slots_) {
      cudaGraph_t g = nullptr;
      (void)cudaStreamEndCapture(s.stream->get(), &g);
      if (g) (void)cudaGraphDestroy(g);
    }
    throw;
  }
  // Every capture ends before any graph is instantiated: instantiating is not allowed while this
  // thread still captures another GPU's stream.
  instantiate_all();
}

// Ends the capture of every member's stream, then instantiates each graph (on its GPU).
void TeamRun::instantiate_all() {
  std::vector<cudaGraph_t> graphs(slots_.size(), nullptr);
  cudaError_t first = cudaSuccess;
  for (size_t j = 0; j < slots_.size(); ++j) {
    const cudaError_t e = cudaStreamEndCapture(slots_[j].stream->get(), &graphs[j]);
    if (first == cudaSuccess) first = e;
  }
  for (size_t j = 0; j < slots_.size() && first == cudaSuccess; ++j) {
    DeviceGuard dg(slots_[j].member->device);
    first = cudaGraphInstantiate(&slots_[j].graph, graphs[j], 0);
  }
  for (cudaGraph_t g : graphs)
    if (g) (void)cudaGraphDestroy(g);
  NB_CUDA(first);
}

void TeamRun::launch_graphs() {
  for (auto& s : slots_) {
    DeviceGuard g(s.member->device);
    NB_CUDA(cudaGraphLaunch(s.graph, s.stream->get()));
  }
}

// One timed sample of `count` collectives (or of each member's graph). With the hold, a kernel
// holds every member's stream while the host queues the work and is released after it, so the
// time is the GPUs' and not the host's enqueue cost (a non-blocking communicator's enqueue can
// take longer than a small collective). Returns seconds per collective (the slowest member's
// events) and sets host_per_op_ to the host's time.
double TeamRun::timed(size_t count, bool use_graph) {
  if (hold_ok_)
    for (auto& s : slots_) {
      volatile int32_t* f = s.hold.as<volatile int32_t>();
      f[0] = 0;
      f[1] = 0;
      DeviceGuard g(s.member->device);
      kernels::launch_blocking(s.stream->get(), s.hold_dev, s.hold_dev + 1, kHoldNs);
      NB_CUDA_LAUNCH();
    }
  struct Release {  // whatever happens, no kernel is left holding a stream
    std::vector<Slot>& v;
    void operator()() {
      for (auto& s : v) s.hold.as<volatile int32_t>()[0] = 1;
    }
    ~Release() { (*this)(); }
  } release{slots_};
  const auto h0 = Clock::now();
  record(true);
  if (use_graph) launch_graphs();
  else enqueue(count);
  record(false);
  host_per_op_ = std::chrono::duration<double>(Clock::now() - h0).count() / double(count);
  release();
  wait_events(ends_, comms_, what_, teams_.watchdog());
  for (auto& s : slots_)
    if (hold_ok_ && s.hold.as<volatile int32_t>()[1]) {
      res_.m.blocking_timeout = true;
      hold_ok_ = false;
    }
  return elapsed(count);
}

// 1. Buffers, streams, events; fresh input.
void TeamRun::setup() {
  if (!team_) return;
  for (auto& m : team_->local) {
    DeviceGuard g(m.device);
    Slot s;
    s.member = &m;
    layouts_.push_back({res_.k, esize_, m.rank, nranks_, spec_.dtype, spec_.in_place});
    place(s, layouts_.back(), coll::shape(spec_.coll));
    s.stream = std::make_unique<Stream>();
    s.e0 = std::make_unique<Event>();
    s.e1 = std::make_unique<Event>();
    s.counters = DeviceBuffer(16);
    s.hold = PinnedBuffer(8, cudaHostAllocMapped | cudaHostAllocPortable);
    std::memset(s.hold.get(), 0, 8);
    NB_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void**>(&s.hold_dev), s.hold.get(), 0));
    init_input(s, layouts_.back(), spec_.coll, 1, s.stream->get());
    comms_.push_back(m.comm);
    slots_.push_back(std::move(s));
  }
  for (auto& s : slots_) {
    ends_.push_back(s.e1->get());
    s.stream->sync();
  }
}

// The test hook: work that does not finish before the watchdog's timeout (a kernel that spins S
// seconds on the GPU, with no collective queued behind it).
void TeamRun::stall_hook() {
  const double stall = teams_.take_stall_s();
  if (stall <= 0 || mpi::rank() != 0) return;
  PinnedBuffer& flag = teams_.stall_flag();  // kept by the Teams: it outlives the kernel
  std::memset(flag.get(), 0, 8);
  int32_t* dev = nullptr;
  NB_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev), flag.get(), 0));
  DeviceGuard g(slots_[0].member->device);
  kernels::launch_blocking(slots_[0].stream->get(), dev, dev + 1, uint64_t(stall * 1e9));
  NB_CUDA_LAUNCH();
  record(false);
  wait_events(ends_, comms_, "warm-up " + what_ + " (held by NODEBENCH_NCCL_TEST_STALL_S)", teams_.watchdog());
}

// 2. Warm-up, and a first estimate of one collective's time.
void TeamRun::warm_up() {
  if (slots_.empty()) return;
  stall_hook();
  record(true);
  enqueue(kWarmup);
  record(false);
  wait_events(ends_, comms_, "warm-up " + what_, teams_.watchdog());
  pilot_ = timed(kPilot, false);
  pilot_host_ = host_per_op_;
}

// 3. Rank 0 decides the batch (collectives per sample) and the sample count for everyone.
std::vector<double> TeamRun::plan_samples() {
  const double pilot = mpi::allreduce(pilot_, mpi::Op::max);
  const double pilot_host = mpi::allreduce(pilot_host_, mpi::Op::max);
  int64_t plan[2] = {1, 1};
  if (mpi::rank() == 0) {
    const double min_sample = std::max(cfg_.min_sample_s, 1e-3);  // long enough to cover the ranks' skew
    const double t = std::max(pilot, 1e-7);
    const size_t batch = std::clamp<size_t>(size_t(std::ceil(min_sample / t)), 1, std::max<size_t>(cfg_.max_batch, 1));
    size_t samples = cfg_.fixed_samples;
    if (samples == 0) {
      // Within the time cap at the pace of the slower of the GPUs and the host's enqueue.
      const size_t cap = std::min<size_t>(cfg_.max_samples, 100);
      const size_t fit = size_t(cfg_.max_time_s / (std::max(t, pilot_host) * double(batch)));
      samples = std::clamp<size_t>(fit, std::min(cfg_.min_samples, cap), cap);
    }
    plan[0] = int64_t(batch);
    plan[1] = int64_t(std::max<size_t>(samples, 1));
  }
  mpi::broadcast(plan, sizeof plan, 0);
  res_.m.batch = size_t(plan[0]);
  res_.m.warmup_runs = kWarmup + kPilot;
  res_.m.stop = StopReason::fixed;
  return std::vector<double>(size_t(plan[1]), 0.0);
}

void TeamRun::note_first_wrong(size_t j, const unsigned long long c[2], uint64_t seed) {
  const Slot& s = slots_[j];
  const Layout& l = layouts_[j];
  unsigned char raw[4] = {};
  NB_CUDA(cudaMemcpy(raw, static_cast<const char*>(s.out) + size_t(c[1]) * esize_, esize_, cudaMemcpyDeviceToHost));
  const double want = kernels::coll_expected(spec_.coll, l.rank, nranks_, l.k.recv, l.k.chunk, size_t(c[1]), seed);
  std::ostringstream os;
  os << "rank " << l.rank << " (GPU " << s.member->device << "): " << c[0] << " of " << l.k.recv
     << " elements wrong; first at index " << c[1] << ": got " << decode(raw, spec_.dtype) << ", expected " << want;
  res_.first_wrong = os.str();
}

// 5. Correctness on fresh data: one collective (by the same launch path), every output element
//    checked on the GPU.
void TeamRun::verify() {
  if (slots_.empty()) return;
  const uint64_t seed = 0xC0FFEEull + spec_.bytes;
  for (size_t j = 0; j < slots_.size(); ++j) {
    DeviceGuard g(slots_[j].member->device);
    init_input(slots_[j], layouts_[j], spec_.coll, seed, slots_[j].stream->get());
  }
  if (spec_.graph) {
    capture(1);
    launch_graphs();
  } else {
    enqueue(1);
  }
  record(false);
  wait_events(ends_, comms_, "verification of " + what_, teams_.watchdog());
  uint64_t local_wrong = 0;
  for (size_t j = 0; j < slots_.size(); ++j) {
    Slot& s = slots_[j];
    DeviceGuard g(s.member->device);
    expect_output(s, layouts_[j], spec_.coll, seed, s.stream->get());
    unsigned long long c[2] = {0, 0};
    NB_CUDA(cudaMemcpyAsync(c, s.counters.get(), 16, cudaMemcpyDeviceToHost, s.stream->get()));
    s.stream->sync();
    local_wrong += c[0];
    res_.checked += layouts_[j].k.recv;
    if (c[0] && res_.first_wrong.empty()) note_first_wrong(j, c, seed);
  }
  res_.wrong = local_wrong;  // this process's, until gather_wrong
}

// Wrong elements of every rank, and the first description, at rank 0.
void TeamRun::gather_wrong(uint64_t local_wrong) {
  res_.wrong = 0;
  res_.wrong_per_rank.assign(size_t(mpi::size()), 0.0);
  res_.wrong_per_rank[size_t(mpi::rank())] = double(local_wrong);
  mpi::allreduce(res_.wrong_per_rank, mpi::Op::sum);
  for (double w : res_.wrong_per_rank) res_.wrong += uint64_t(w);
  const std::vector<std::string> firsts = mpi::gather_strings(res_.first_wrong, 0);
  for (const auto& f : firsts)
    if (res_.first_wrong.empty() && !f.empty()) res_.first_wrong = f;
  res_.checked = uint64_t(mpi::allreduce(double(res_.checked), mpi::Op::sum));
}

TeamResult TeamRun::go() {
  teams_.trace(what_ + ": setup");
  ls_.step([&] { setup(); });
  teams_.trace(what_ + ": warm-up");
  ls_.step([&] { warm_up(); });
  if (ls_.failed()) return res_;
  std::vector<double> samples = plan_samples();
  // 4. The timed samples (through a CUDA graph of `batch` collectives when asked).
  teams_.trace(what_ + ": " + std::to_string(samples.size()) + " samples of " + std::to_string(res_.m.batch) +
               (spec_.graph ? " (graph)" : ""));
  ls_.step([&] {
    if (slots_.empty()) return;
    if (spec_.graph) capture(res_.m.batch);
    for (double& out : samples) out = timed(res_.m.batch, spec_.graph);
  });
  if (ls_.failed()) return res_;
  // Every rank's samples: a sample is the slowest rank's.
  mpi::allreduce(samples, mpi::Op::max);
  res_.m.samples_s = samples;
  teams_.trace(what_ + ": verification");
  ls_.step([&] { verify(); });
  if (ls_.failed()) return res_;
  gather_wrong(res_.wrong);
  res_.median = compute_stats(res_.m.samples_s).median;
  res_.algbw = double(res_.k.bytes) / 1e9 / res_.median;
  res_.busbw = res_.algbw * res_.factor;
  return res_;
}

}  // namespace

TeamResult measure_team(Teams& teams, const Settings& settings, Team* team, int nranks, const Spec& spec,
                        const MeasureConfig& cfg, Lockstep& ls) {
  TeamRun run(teams, settings, team, nranks, spec, cfg, ls);
  return run.go();
}

void fill_output(CaseOutput& out, const TeamResult& r, const Spec& spec, int nranks, const Teams& teams) {
  json& details = out.details;
  if (nranks > 1) {  // one rank moves nothing between GPUs: no link figure at all (single_rank_note)
    out.metric(kAlgbw, r.algbw);
    out.metric(kBusbw, r.busbw);
    out.metric(kBusFactor, r.factor);
  } else {
    out.flags.push_back(kSingleRankFlag);
  }
  out.metric(kData, double(r.k.bytes));
  out.metric(kGpuCount, nranks);
  out.metric(kWrong, double(r.wrong));
  details["nccl_version"] = nccl_version();
  details["nccl_env"] = nccl_env();
  details["timer"] = "CUDA events around each sample on every rank; a sample is the slowest rank's, per collective";
  details["iterations"] = {{"decided_by", "rank 0"},
                           {"batch", r.m.batch},
                           {"samples", r.m.samples_s.size()},
                           {"warmup", r.m.warmup_runs}};
  details["buffers"] = {{"send_elements", r.k.send}, {"recv_elements", r.k.recv}, {"chunk_elements", r.k.chunk}};
  details["watchdog_s"] = teams.watchdog().seconds;
  details["nonblocking_communicators"] = teams.nonblocking(mpi::active());
  std::vector<uint64_t> per_rank;
  for (double w : r.wrong_per_rank) per_rank.push_back(uint64_t(w));
  details["verification"] = {{"method", "fresh data (small integers, exact in every type), one collective, every "
                                        "output element of every rank compared on the GPU"},
                             {"elements_checked", r.checked},
                             {"wrong", r.wrong},
                             {"wrong_per_rank", per_rank},
                             {"tolerance", tolerance(spec.dtype, nranks)}};
  if (nranks == 1) details["note"] = single_rank_note(spec.coll, spec.in_place);
}

#endif  // NB_HAVE_NCCL

}  // namespace nb::nccl
