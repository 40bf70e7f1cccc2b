// The NCCL team: communicators over the GPUs of one process or over MPI ranks, kept by the
// Session and reused; the watchdog that aborts a hung communicator; the test hooks that make it
// fire. Used by the nccl and train_dp families.
#include "nccl_team.hpp"

#if NB_HAVE_NCCL

#include <algorithm>
#include <iostream>
#include <map>
#include <thread>

#include "cluster/mpi.hpp"
#include "base/text.hpp"

namespace nb::nccl {
using nlohmann::json;

// ---------------------------------------------------------------- errors, settings, hooks

std::string nccl_error(ncclResult_t r, ncclComm_t comm) {
  std::string s = ncclGetErrorString(r);
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 13, 0)
  const char* last = ncclGetLastError(comm);
  if (last && *last) s += ": " + std::string(last);
#else
  (void)comm;
#endif
  return s;
}

// ncclInProgress is not an error: a non-blocking communicator is still working (settle()).
ncclResult_t check_nccl(ncclResult_t r, const char* expr, ncclComm_t comm) {
  if (r == ncclSuccess || r == ncclInProgress) return r;
  throw LibraryError(int(r), std::string(expr) + ": " + nccl_error(r, comm));
}

Clock::time_point Watchdog::deadline() const {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// NVLink SHARP (multicast) stays off unless the user set it: NCCL_NVLS_ENABLE=0 before any
// NCCL call (a rule of shared multi-GPU hosts: multicast can take the host's GPUs out of service).
void prepare_env() { setenv("NCCL_NVLS_ENABLE", "0", 0); }

json nccl_env() {
  json e = json::object();
  for (char** p = environ; p && *p; ++p) {
    const std::string kv = *p;
    if (kv.rfind("NCCL_", 0) != 0) continue;
    const size_t eq = kv.find('=');
    if (eq != std::string::npos) e[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return e;
}

std::string nccl_version() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "unknown";
  const int major = v / 10000, minor = (v / 100) % 100, patch = v % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

void pause_briefly(int& spins) {
  if (spins++ < 2000) std::this_thread::yield();
  else std::this_thread::sleep_for(std::chrono::microseconds(50));
}

// Waits until no communicator is ncclInProgress; throws on an error, or Hang past the timeout.
void settle(const std::vector<ncclComm_t>& comms, const Watchdog& w, const std::string& what) {
  const auto deadline = w.deadline();
  int spins = 0;
  while (true) {
    bool pending = false;
    for (ncclComm_t c : comms) {
      if (!c) continue;
      ncclResult_t st = ncclSuccess;
      const ncclResult_t r = ncclCommGetAsyncError(c, &st);
      if (r != ncclSuccess) throw LibraryError(int(r), what + ": ncclCommGetAsyncError: " + nccl_error(r, c));
      if (st == ncclInProgress) pending = true;
      else if (st != ncclSuccess) throw LibraryError(int(st), what + ": " + nccl_error(st, c));
    }
    if (!pending) return;
    if (Clock::now() > deadline)
      throw Hang(what + " did not complete within " + fmt(w.seconds, 0) + " s (NODEBENCH_NCCL_TIMEOUT_S)");
    pause_briefly(spins);
  }
}

// The watchdog: waits for `events` while polling the communicators for asynchronous errors;
// throws Hang past the timeout (the caller aborts the communicators).
void wait_events(const std::vector<cudaEvent_t>& events, const std::vector<ncclComm_t>& comms, const std::string& what,
                 const Watchdog& w) {
  const auto end = w.deadline();
  int spins = 0;
  while (true) {
    bool done = true;
    for (cudaEvent_t e : events) {
      const cudaError_t r = cudaEventQuery(e);
      if (r == cudaErrorNotReady) {
        done = false;
        continue;
      }
      NB_CUDA(r);
    }
    if (done) return;
    for (ncclComm_t c : comms) {
      ncclResult_t st = ncclSuccess;
      if (c && ncclCommGetAsyncError(c, &st) == ncclSuccess && st != ncclSuccess && st != ncclInProgress)
        throw LibraryError(int(st), what + ": " + nccl_error(st, c));
    }
    if (Clock::now() > end)
      throw Hang(what + " did not complete within " + fmt(w.seconds, 0) +
                 " s (NODEBENCH_NCCL_TIMEOUT_S): communicator aborted");
    pause_briefly(spins);
  }
}

// ---------------------------------------------------------------- communicators

void abort_team(Team& t) {
  for (auto& m : t.local) {
    if (!m.comm) continue;
    (void)cudaSetDevice(m.device);
    (void)ncclCommAbort(m.comm);
    m.comm = nullptr;
  }
}

std::string join(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

Teams::Teams(const Settings& s)
    : settings_(s), watchdog_{s.number("NODEBENCH_NCCL_TIMEOUT_S")}, trace_(s.flag("NODEBENCH_NCCL_TRACE")) {}

Teams::~Teams() {
  int previous = 0;
  const bool had = cudaGetDevice(&previous) == cudaSuccess;
  for (auto& [key, t] : teams_) abort_team(*t);
  if (had) (void)cudaSetDevice(previous);
}

Teams& teams(CaseContext& ctx) {
  const Settings* s = &ctx.settings();
  return ctx.session_resources().get<Teams>([s] { return std::make_unique<Teams>(*s); });
}

void Teams::trace(const std::string& what) const {
  if (trace_) std::cerr << "nccl trace: rank " << mpi::rank() << ": " << what << std::endl;
}

// Test hooks (docs/MULTIGPU.md): make the watchdog's path run on demand.
// NODEBENCH_NCCL_TEST_STALL_S=S: in the first measurement of the session, rank 0 holds its
// first GPU's stream S seconds before the warm-up (a collective that does not finish in time;
// the cases after it run normally). NODEBENCH_NCCL_TEST_ABSENT_RANK=R: rank R never joins the
// communicators (the others' initialisation hangs). Both are zero/-1 unless the build has the
// test hooks (Settings).
double Teams::take_stall_s() {
  if (stall_used_) return 0.0;
  stall_used_ = true;
  return settings_.number("NODEBENCH_NCCL_TEST_STALL_S");
}
int Teams::absent_rank() const { return int(settings_.integer("NODEBENCH_NCCL_TEST_ABSENT_RANK")); }

PinnedBuffer& Teams::stall_flag() {
  if (!stall_flag_) stall_flag_ = std::make_unique<PinnedBuffer>(8, cudaHostAllocMapped | cudaHostAllocPortable);
  return *stall_flag_;
}

void Teams::drop(const std::string& key) {
  auto it = teams_.find(key);
  if (it == teams_.end()) return;
  trace("aborting " + key);
  abort_team(*it->second);
  teams_.erase(it);
}

// Whether communicators are non-blocking. Under MPI they are (an initialisation waiting for a
// rank that never comes must be abortable); in one process blocking communicators launch small
// collectives far faster (a non-blocking group launch goes through a helper thread) and their
// initialisation waits on nothing outside the process. NODEBENCH_NCCL_NONBLOCKING=0/1 overrides.
bool Teams::nonblocking(bool under_mpi) const {
  return settings_.tristate("NODEBENCH_NCCL_NONBLOCKING").value_or(under_mpi);
}

namespace {

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 14, 0)
ncclConfig_t comm_config(bool nonblocking) {
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = nonblocking ? 0 : 1;
  return cfg;
}
#endif

// One process, every GPU of `devices`: a group of ncclCommInitRankConfig calls into t.
void init_local(Team& t, const std::vector<int>& devices, bool nonblocking, const Watchdog& w) {
  int previous = 0;
  NB_CUDA(cudaGetDevice(&previous));
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 14, 0)
  ncclUniqueId id;
  NB_NCCL(ncclGetUniqueId(&id));
  ncclConfig_t cfg = comm_config(nonblocking);
  // The group is always closed, whatever fails inside it.
  NB_NCCL(ncclGroupStart());
  std::string err;
  for (auto& m : t.local) {
    if (const cudaError_t e = cudaSetDevice(m.device); e != cudaSuccess) {
      err = std::string("cudaSetDevice: ") + cudaGetErrorString(e);
      break;
    }
    const ncclResult_t r = ncclCommInitRankConfig(&m.comm, t.nranks, id, m.rank, &cfg);
    if (r != ncclSuccess && r != ncclInProgress) {
      err = "ncclCommInitRankConfig: " + nccl_error(r, nullptr);
      break;
    }
  }
  const ncclResult_t r = ncclGroupEnd();
  (void)cudaSetDevice(previous);
  if (!err.empty()) throw Error(err);
  check_nccl(r, "ncclGroupEnd (communicator init)");
  settle(t.comms(), w, "communicator initialisation over GPUs " + join(devices));
#else
  (void)nonblocking;
  (void)w;
  std::vector<ncclComm_t> comms(devices.size());
  NB_NCCL(ncclCommInitAll(comms.data(), int(devices.size()), devices.data()));
  for (size_t i = 0; i < comms.size(); ++i) t.local[i].comm = comms[i];
  (void)cudaSetDevice(previous);
#endif
}

}  // namespace

Team& Teams::local_team(const std::vector<int>& devices) {
  const std::string key = "local:" + join(devices);
  if (auto it = teams_.find(key); it != teams_.end()) return *it->second;
  prepare_env();
  auto t = std::make_unique<Team>();
  t->key = key;
  t->nranks = int(devices.size());
  for (size_t i = 0; i < devices.size(); ++i) {
    t->local.push_back({devices[i], int(i), nullptr});
    t->members.push_back({{"rank", int(i)}, {"gpu", devices[i]}});
  }
  try {
    init_local(*t, devices, nonblocking(false), watchdog_);
  } catch (...) {
    abort_team(*t);
    throw;
  }
  return *(teams_[key] = std::move(t));
}

const std::vector<RankDesc>& Teams::world_ranks(const GpuInfo& mine) {
  if (world_known_) return world_;
  const json me = {{"host", mpi::host()}, {"pci", mine.pci_bus_id}, {"gpu", mine.index}};
  for (const auto& s : mpi::allgather_strings(me.dump())) {
    const json j = json::parse(s);
    world_.push_back({j["host"], j["pci"], j["gpu"]});
  }
  world_known_ = true;
  return world_;
}

// Collective over every process: the processes of `members` (world ranks, sorted) make a
// communicator; the first member makes the unique id and MPI broadcasts it to everyone.
// Returns the team (with no local member on a process outside it), or nullptr when any
// process failed (every process then knows; the reasons are in `ls`).
Team* Teams::mpi_team(const std::vector<int>& members, const GpuInfo& gpu, Lockstep& ls) {
  const std::string key = "mpi:" + join(members);
  if (auto it = teams_.find(key); it != teams_.end()) return it->second.get();
  prepare_env();
  const int me = mpi::rank();
  const int root = members.front();
  const auto pos = std::find(members.begin(), members.end(), me);
  struct {
    ncclUniqueId id;
    int32_t ok;
  } boot{};
  std::string boot_err;
  if (me == root) {
    const ncclResult_t r = ncclGetUniqueId(&boot.id);
    boot.ok = r == ncclSuccess;
    if (!boot.ok) boot_err = "ncclGetUniqueId: " + nccl_error(r, nullptr);
  }
  mpi::broadcast(&boot, sizeof boot, root);
  auto t = std::make_unique<Team>();
  t->key = key;
  t->nranks = int(members.size());
  const auto& world = world_ranks(gpu);
  for (size_t i = 0; i < members.size(); ++i) {
    const RankDesc& d = world[size_t(members[i])];
    t->members.push_back({{"rank", int(i)}, {"world_rank", members[i]}, {"host", d.host}, {"gpu", d.gpu}});
  }
  ls.step([&] {
    if (!boot.ok) throw Error(me == root ? boot_err : "no NCCL unique id from rank " + std::to_string(root));
    if (pos == members.end()) return;
    if (absent_rank() == me) throw Error("test hook NODEBENCH_NCCL_TEST_ABSENT_RANK: this rank stayed out");
    DeviceGuard g(gpu.index);
    Member m{gpu.index, int(pos - members.begin()), nullptr};
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 14, 0)
    ncclConfig_t cfg = comm_config(nonblocking(true));
    const ncclResult_t r = ncclCommInitRankConfig(&m.comm, t->nranks, boot.id, m.rank, &cfg);
    t->local.push_back(m);
    check_nccl(r, "ncclCommInitRankConfig");
    settle(t->comms(), watchdog_, "communicator initialisation over ranks " + join(members));
#else
    NB_NCCL(ncclCommInitRank(&m.comm, t->nranks, boot.id, m.rank));
    t->local.push_back(m);
#endif
  });
  if (ls.failed()) {
    abort_team(*t);
    return nullptr;
  }
  return (teams_[key] = std::move(t)).get();
}

}  // namespace nb::nccl

#endif  // NB_HAVE_NCCL
