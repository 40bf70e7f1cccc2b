// The NCCL team (docs/MULTIGPU.md): communicators over the GPUs of one process (a group of
// ncclCommInitRankConfig calls) or over MPI ranks (the unique id goes out by MPI broadcast),
// made once and kept for the process; a watchdog that polls ncclCommGetAsyncError and the
// completion events and aborts a communicator that hangs past NODEBENCH_NCCL_TIMEOUT_S; the
// lockstep that keeps every process in step; the test hooks that make the watchdog fire.
#pragma once
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/benchmark.hpp"
#include "cluster/mpi.hpp"

#if NB_HAVE_NCCL
#include <nccl.h>

namespace nb::nccl {

using Clock = std::chrono::steady_clock;

std::string nccl_error(ncclResult_t r, ncclComm_t comm);
// ncclInProgress is not an error: a non-blocking communicator is still working (settle()).
ncclResult_t check_nccl(ncclResult_t r, const char* expr, ncclComm_t comm = nullptr);
#define NB_NCCL(expr) ::nb::nccl::check_nccl((expr), #expr)

// A communicator that did not finish an operation within the watchdog's timeout.
struct Hang : Error {
  using Error::Error;
};

double watchdog_s();
void prepare_env();
nlohmann::json nccl_env();  // every NCCL_* variable in force
std::string nccl_version();
double test_stall_s();      // the first call only; 0 unless the build has the test hooks
int test_absent_rank();     // -1 unless the build has the test hooks
void trace(const std::string& what);
void pause_briefly(int& spins);
// Waits until no communicator is ncclInProgress; throws on an error, or Hang past the deadline.
void settle(const std::vector<ncclComm_t>& comms, Clock::time_point deadline, const std::string& what);
Clock::time_point deadline();
// Waits for `events` while polling the communicators for asynchronous errors; throws Hang past
// the timeout (the caller aborts the communicators).
void wait_events(const std::vector<cudaEvent_t>& events, const std::vector<ncclComm_t>& comms, const std::string& what);

// Runs the steps of a measurement on every process in lockstep. A step that throws marks this
// process failed; after each step every process learns whether any failed (an MPI reduction;
// nothing to do in a single process), so that all of them stop together and none waits in a
// collective the others will never reach.
class Lockstep {
 public:
  template <class F>
  bool step(F&& f) {
    if (failed_) return false;
    if (err_.empty()) {
      try {
        f();
      } catch (const SkipCase& s) {
        err_ = s.reason;
        kind_ = 's';
      } catch (const Hang& e) {
        err_ = e.what();
        kind_ = 't';
      } catch (const CudaError& e) {
        err_ = e.what();
        kind_ = e.out_of_memory() ? 'm' : 'f';
      } catch (const std::exception& e) {
        err_ = e.what();
        kind_ = 'f';
      }
    }
    failed_ = mpi::any(!err_.empty());
    return !failed_;
  }
  bool failed() const { return failed_; }

  // After a failure, on every process: the reasons of every failed process, at rank 0.
  struct Reason {
    std::string text;
    bool skip = false;  // every failed process skipped or ran out of memory: not a failure
    bool timeout = false;  // a process's watchdog aborted a hung communicator
  };
  Reason collect() const {
    const std::string mine = err_.empty() ? "" : std::string(1, kind_) + err_;
    std::vector<std::string> all = mpi::gather_strings(mine, 0);
    std::vector<std::string> hosts = mpi::gather_strings(mpi::host(), 0);
    Reason r;
    if (mpi::rank() != 0) return r;
    bool only_skips = true;
    for (size_t i = 0; i < all.size(); ++i) {
      if (all[i].empty()) continue;
      if (all[i][0] == 'f' || all[i][0] == 't') only_skips = false;
      if (all[i][0] == 't') r.timeout = true;
      if (!r.text.empty()) r.text += "; ";
      if (mpi::active() && mpi::size() > 1) r.text += "rank " + std::to_string(i) + " (" + hosts[i] + "): ";
      if (all[i][0] == 'm') r.text += "out of memory: ";
      r.text += all[i].substr(1);
    }
    if (r.text.empty()) r.text = "another process failed";
    r.skip = only_skips;
    return r;
  }
  // Throws what the case's record should say: rank 0 the reasons (skipped or failed); the other
  // ranks SkipCase (their record is dropped: rank 0 reports the case).
  [[noreturn]] void raise() const {
    const Reason r = collect();
    if (mpi::rank() != 0) throw SkipCase{"reported by rank 0"};
    if (r.skip) throw SkipCase{r.text};
    throw Error(r.text);
  }

 private:
  std::string err_;
  char kind_ = 'f';  // f failed, m out of memory, s skipped, t timed out (watchdog)
  bool failed_ = false;
};

struct Member {
  int device = 0;
  int rank = 0;
  ncclComm_t comm = nullptr;
};

struct Team {
  std::string key;
  int nranks = 0;
  std::vector<Member> local;  // the members this process drives (under MPI: none or one)
  nlohmann::json members = nlohmann::json::array();
  std::vector<ncclComm_t> comms() const {
    std::vector<ncclComm_t> c;
    for (const auto& m : local) c.push_back(m.comm);
    return c;
  }
};

// Kept for the process (made once, reused by every case of the same GPUs); dropped after a
// failure. Never destroyed at exit (NCCL's teardown after CUDA's is not safe).
std::map<std::string, Team*>& teams();
void abort_team(Team& t);
void drop_team(const std::string& key);
std::string join(const std::vector<int>& v);
bool nonblocking(bool under_mpi);
// One process, every GPU of `devices`.
Team& local_team(const std::vector<int>& devices);
// What every process knows of the others (gathered once): host, GPU, PCI bus id.
struct RankDesc {
  std::string host, pci;
  int gpu = 0;
};
const std::vector<RankDesc>& world_ranks(const GpuInfo& mine);
// Collective over every process: the processes of `members` (world ranks, sorted) make a
// communicator. Returns nullptr when any process failed (the reasons are in `ls`).
Team* mpi_team(const std::vector<int>& members, const GpuInfo& gpu, Lockstep& ls);

}  // namespace nb::nccl

#endif  // NB_HAVE_NCCL
