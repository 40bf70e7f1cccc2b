// The NCCL team (docs/MULTIGPU.md): communicators over the GPUs of one process (a group of
// ncclCommInitRankConfig calls) or over MPI ranks (the unique id goes out by MPI broadcast),
// made once and kept by the Session (Teams, in the case's session resources); a watchdog that
// polls ncclCommGetAsyncError and the completion events and aborts a communicator that hangs
// past NODEBENCH_NCCL_TIMEOUT_S; the lockstep that keeps every process in step; the test hooks
// that make the watchdog fire.
#pragma once
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/resources.hpp"
#include "bench/benchmark.hpp"
#include "bench/settings.hpp"
#include "cluster/mpi.hpp"

namespace nb::nccl {
// A case of a family that needs NCCL in a build without it: listed, and skipped saying why.
inline void skip_without_nccl(Case& c) {
  c.available = [](const GpuInfo&) {
    return Availability::no("nodebench was built without NCCL (nccl.h or libnccl not found when configured)",
                            ReasonKind::not_built);
  };
  c.run = [](CaseContext& ctx) { ctx.skip("nodebench was built without NCCL", ReasonKind::not_built); };
}
}  // namespace nb::nccl

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

// The watchdog's timeout (NODEBENCH_NCCL_TIMEOUT_S).
struct Watchdog {
  double seconds = 120;
  Clock::time_point deadline() const;
};
// NVLink SHARP (multicast) off unless the user set it, before any NCCL call.
void prepare_env();
nlohmann::json nccl_env();  // every NCCL_* variable in force
std::string nccl_version();
void pause_briefly(int& spins);
// Waits until no communicator is ncclInProgress; throws on an error, or Hang past the timeout.
void settle(const std::vector<ncclComm_t>& comms, const Watchdog& w, const std::string& what);
// Waits for `events` while polling the communicators for asynchronous errors; throws Hang past
// the timeout (the caller aborts the communicators).
void wait_events(const std::vector<cudaEvent_t>& events, const std::vector<ncclComm_t>& comms, const std::string& what,
                 const Watchdog& w);

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
        kind_ = s.kind;
        skip_ = true;
      } catch (const Hang& e) {
        err_ = e.what();
        kind_ = ReasonKind::timeout;
      } catch (const CudaError& e) {
        err_ = e.what();
        kind_ = e.out_of_memory() ? ReasonKind::oom : ReasonKind::error;
        skip_ = e.out_of_memory();
      } catch (const std::exception& e) {
        err_ = e.what();
        kind_ = ReasonKind::error;
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
    // The record's kind: timeout or error where a process failed so, else the first skip's kind
    // (peer_rank when no process said why).
    ReasonKind kind = ReasonKind::error;
  };
  Reason collect() const {
    // Each process's "<s|f><reason kind>|<reason>" ("" when it did not fail), gathered at rank 0.
    const std::string mine = err_.empty() ? "" : std::string(skip_ ? "s" : "f") + to_string(kind_) + "|" + err_;
    std::vector<std::string> all = mpi::gather_strings(mine, 0);
    std::vector<std::string> hosts = mpi::gather_strings(mpi::host(), 0);
    Reason r;
    if (mpi::rank() != 0) return r;
    bool only_skips = true;
    std::optional<ReasonKind> skip_kind;
    for (size_t i = 0; i < all.size(); ++i) {
      if (all[i].empty()) continue;
      const size_t bar = all[i].find('|');
      const ReasonKind k = parse_reason_kind(all[i].substr(1, bar - 1)).value_or(ReasonKind::error);
      if (all[i][0] == 'f') only_skips = false;
      if (k == ReasonKind::timeout) r.timeout = true;
      if (all[i][0] == 's' && !skip_kind) skip_kind = k;
      if (!r.text.empty()) r.text += "; ";
      if (mpi::active() && mpi::size() > 1) r.text += "rank " + std::to_string(i) + " (" + hosts[i] + "): ";
      if (k == ReasonKind::oom) r.text += "out of memory: ";
      r.text += all[i].substr(bar + 1);
    }
    if (r.text.empty()) r.text = "another process failed";
    r.skip = only_skips;
    r.kind = r.timeout ? ReasonKind::timeout : r.skip ? skip_kind.value_or(ReasonKind::peer_rank) : ReasonKind::error;
    return r;
  }
  // Throws what the case's record should say: rank 0 the reasons (skipped or failed); the other
  // ranks SkipCase (their record is dropped: rank 0 reports the case).
  [[noreturn]] void raise() const {
    const Reason r = collect();
    if (mpi::rank() != 0) throw SkipCase{"reported by rank 0", ReasonKind::peer_rank};
    if (r.skip) throw SkipCase{r.text, r.kind};
    throw Error(r.text);
  }

 private:
  std::string err_;
  ReasonKind kind_ = ReasonKind::error;
  bool skip_ = false;  // skipped or out of memory: not a failure
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

void abort_team(Team& t);
std::string join(const std::vector<int>& v);
// What every process knows of the others (gathered once): host, GPU, PCI bus id.
struct RankDesc {
  std::string host, pci;
  int gpu = 0;
};

// The teams of a Session (made once, reused by every case of the same GPUs; dropped after a
// failure) and the NCCL settings in force. Destroyed with the Session while CUDA is still up:
// every communicator is aborted then (local: it waits on no other process).
class Teams {
 public:
  explicit Teams(const Settings& s);
  ~Teams();
  Teams(const Teams&) = delete;
  Teams& operator=(const Teams&) = delete;

  const Watchdog& watchdog() const { return watchdog_; }
  // Whether communicators are non-blocking: under MPI by default, NODEBENCH_NCCL_NONBLOCKING.
  bool nonblocking(bool under_mpi) const;
  // NODEBENCH_NCCL_TRACE=1: each step of each measurement on stderr (to find where a run stops).
  void trace(const std::string& what) const;
  // Test hooks: NODEBENCH_NCCL_TEST_STALL_S (returned by the first call only; 0 after) and
  // NODEBENCH_NCCL_TEST_ABSENT_RANK (-1: none); zero/-1 unless the build has the test hooks.
  double take_stall_s();
  int absent_rank() const;
  // A flag the stall hook's kernel spins on (made on first use, kept until the Teams go: it
  // must outlive the kernel).
  PinnedBuffer& stall_flag();

  // One process, every GPU of `devices`.
  Team& local_team(const std::vector<int>& devices);
  // Collective over every process: the processes of `members` (world ranks, sorted) make a
  // communicator. Returns nullptr when any process failed (the reasons are in `ls`).
  Team* mpi_team(const std::vector<int>& members, const GpuInfo& gpu, Lockstep& ls);
  void drop(const std::string& key);
  const std::vector<RankDesc>& world_ranks(const GpuInfo& mine);

 private:
  const Settings settings_;  // a copy: the teams may outlive whoever made them
  Watchdog watchdog_;
  bool trace_ = false;
  bool stall_used_ = false;
  std::unique_ptr<PinnedBuffer> stall_flag_;
  std::map<std::string, std::unique_ptr<Team>> teams_;
  std::vector<RankDesc> world_;
  bool world_known_ = false;
};
// The Session's teams (ctx.session_resources()).
Teams& teams(CaseContext& ctx);

}  // namespace nb::nccl

#endif  // NB_HAVE_NCCL
