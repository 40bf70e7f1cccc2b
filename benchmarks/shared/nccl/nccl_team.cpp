// The NCCL team: communicators over the GPUs of one process or over MPI ranks, kept for the
// process and reused; the watchdog that aborts a hung communicator; the test hooks that make
// it fire. Used by the nccl family (benchmarks/nccl.cpp).
#include "nccl_team.hpp"

#if NB_HAVE_NCCL

#include <algorithm>
#include <iostream>
#include <map>
#include <thread>

#include "cluster/mpi.hpp"
#include "bench/settings.hpp"
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

double watchdog_s() { return current_settings().number("NODEBENCH_NCCL_TIMEOUT_S"); }

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

// Test hooks (docs/MULTIGPU.md): make the watchdog's path run on demand.
// NODEBENCH_NCCL_TEST_STALL_S=S: in the first measurement of the process, rank 0 holds its
// first GPU's stream S seconds before the warm-up (a collective that does not finish in time;
// the cases after it run normally). NODEBENCH_NCCL_TEST_ABSENT_RANK=R: rank R never joins the
// communicators (the others' initialisation hangs).
// Both are zero/-1 unless the build has the test hooks (Settings).
double test_stall_s() {
  static bool used = false;
  if (used) return 0.0;
  used = true;
  return current_settings().number("NODEBENCH_NCCL_TEST_STALL_S");
}
int test_absent_rank() { return int(current_settings().integer("NODEBENCH_NCCL_TEST_ABSENT_RANK")); }

// NODEBENCH_NCCL_TRACE=1: each step of each measurement on stderr (to find where a run stops).
void trace(const std::string& what) {
  static const bool on = current_settings().flag("NODEBENCH_NCCL_TRACE");
  if (on) std::cerr << "nccl trace: rank " << mpi::rank() << ": " << what << std::endl;
}

void pause_briefly(int& spins) {
  if (spins++ < 2000) std::this_thread::yield();
  else std::this_thread::sleep_for(std::chrono::microseconds(50));
}

// Waits until no communicator is ncclInProgress; throws on an error, or Hang past the deadline.
void settle(const std::vector<ncclComm_t>& comms, Clock::time_point deadline, const std::string& what) {
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
      throw Hang(what + " did not complete within " + fmt(watchdog_s(), 0) + " s (NODEBENCH_NCCL_TIMEOUT_S)");
    pause_briefly(spins);
  }
}

Clock::time_point deadline() {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(watchdog_s()));
}

// The watchdog: waits for `events` while polling the communicators for asynchronous errors;
// throws Hang past the timeout (the caller aborts the communicators).
void wait_events(const std::vector<cudaEvent_t>& events, const std::vector<ncclComm_t>& comms, const std::string& what) {
  const auto end = deadline();
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
      throw Hang(what + " did not complete within " + fmt(watchdog_s(), 0) +
                 " s (NODEBENCH_NCCL_TIMEOUT_S): communicator aborted");
    pause_briefly(spins);
  }
}

// ---------------------------------------------------------------- lockstep over processes

// ---------------------------------------------------------------- communicators

// Kept for the process (made once, reused by every case of the same GPUs); dropped after a
// failure. Never destroyed at exit (NCCL's teardown after CUDA's is not safe).
std::map<std::string, Team*>& teams() {
  static auto* t = new std::map<std::string, Team*>;
  return *t;
}

void abort_team(Team& t) {
  trace("aborting " + t.key);
  for (auto& m : t.local) {
    if (!m.comm) continue;
    (void)cudaSetDevice(m.device);
    (void)ncclCommAbort(m.comm);
    m.comm = nullptr;
  }
}

void drop_team(const std::string& key) {
  auto it = teams().find(key);
  if (it == teams().end()) return;
  abort_team(*it->second);
  delete it->second;
  teams().erase(it);
}

std::string join(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

// Whether communicators are non-blocking. Under MPI they are (an initialisation waiting for a
// rank that never comes must be abortable); in one process blocking communicators launch small
// collectives far faster (a non-blocking group launch goes through a helper thread) and their
// initialisation waits on nothing outside the process. NODEBENCH_NCCL_NONBLOCKING=0/1 overrides.
bool nonblocking(bool under_mpi) {
  return current_settings().tristate("NODEBENCH_NCCL_NONBLOCKING").value_or(under_mpi);
}

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 14, 0)
ncclConfig_t comm_config(bool under_mpi) {
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = nonblocking(under_mpi) ? 0 : 1;
  return cfg;
}
#endif

// One process, every GPU of `devices`: a group of ncclCommInitRankConfig calls.
Team& local_team(const std::vector<int>& devices) {
  const std::string key = "local:" + join(devices);
  if (auto it = teams().find(key); it != teams().end()) return *it->second;
  prepare_env();
  auto* t = new Team;
  t->key = key;
  t->nranks = int(devices.size());
  for (size_t i = 0; i < devices.size(); ++i) {
    t->local.push_back({devices[i], int(i), nullptr});
    t->members.push_back({{"rank", int(i)}, {"gpu", devices[i]}});
  }
  try {
    int previous = 0;
    NB_CUDA(cudaGetDevice(&previous));
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 14, 0)
    ncclUniqueId id;
    NB_NCCL(ncclGetUniqueId(&id));
    ncclConfig_t cfg = comm_config(false);
    // The group is always closed, whatever fails inside it.
    NB_NCCL(ncclGroupStart());
    std::string err;
    for (auto& m : t->local) {
      if (const cudaError_t e = cudaSetDevice(m.device); e != cudaSuccess) {
        err = std::string("cudaSetDevice: ") + cudaGetErrorString(e);
        break;
      }
      const ncclResult_t r = ncclCommInitRankConfig(&m.comm, t->nranks, id, m.rank, &cfg);
      if (r != ncclSuccess && r != ncclInProgress) {
        err = "ncclCommInitRankConfig: " + nccl_error(r, nullptr);
        break;
      }
    }
    const ncclResult_t r = ncclGroupEnd();
    (void)cudaSetDevice(previous);
    if (!err.empty()) throw Error(err);
    check_nccl(r, "ncclGroupEnd (communicator init)");
    settle(t->comms(), deadline(), "communicator initialisation over GPUs " + join(devices));
#else
    std::vector<ncclComm_t> comms(devices.size());
    NB_NCCL(ncclCommInitAll(comms.data(), int(devices.size()), devices.data()));
    for (size_t i = 0; i < comms.size(); ++i) t->local[i].comm = comms[i];
    (void)cudaSetDevice(previous);
#endif
  } catch (...) {
    abort_team(*t);
    delete t;
    throw;
  }
  teams()[key] = t;
  return *t;
}

const std::vector<RankDesc>& world_ranks(const GpuInfo& mine) {
  static std::vector<RankDesc>* all = nullptr;
  if (all) return *all;
  const json me = {{"host", mpi::host()}, {"pci", mine.pci_bus_id}, {"gpu", mine.index}};
  all = new std::vector<RankDesc>;
  for (const auto& s : mpi::allgather_strings(me.dump())) {
    const json j = json::parse(s);
    all->push_back({j["host"], j["pci"], j["gpu"]});
  }
  return *all;
}

// Collective over every process: the processes of `members` (world ranks, sorted) make a
// communicator; the first member makes the unique id and MPI broadcasts it to everyone.
// Returns the team (with no local member on a process outside it), or nullptr when any
// process failed (every process then knows; the reasons are in `ls`).
Team* mpi_team(const std::vector<int>& members, const GpuInfo& gpu, Lockstep& ls) {
  const std::string key = "mpi:" + join(members);
  if (auto it = teams().find(key); it != teams().end()) return it->second;
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
  auto* t = new Team;
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
    if (test_absent_rank() == me) throw Error("test hook NODEBENCH_NCCL_TEST_ABSENT_RANK: this rank stayed out");
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 14, 0)
    DeviceGuard g(gpu.index);
    Member m{gpu.index, int(pos - members.begin()), nullptr};
    ncclConfig_t cfg = comm_config(true);
    const ncclResult_t r = ncclCommInitRankConfig(&m.comm, t->nranks, boot.id, m.rank, &cfg);
    t->local.push_back(m);
    check_nccl(r, "ncclCommInitRankConfig");
    settle(t->comms(), deadline(), "communicator initialisation over ranks " + join(members));
#else
    DeviceGuard g(gpu.index);
    Member m{gpu.index, int(pos - members.begin()), nullptr};
    NB_NCCL(ncclCommInitRank(&m.comm, t->nranks, boot.id, m.rank));
    t->local.push_back(m);
#endif
  });
  if (ls.failed()) {
    abort_team(*t);
    delete t;
    return nullptr;
  }
  teams()[key] = t;
  return t;
}

}  // namespace nb::nccl

#endif  // NB_HAVE_NCCL
