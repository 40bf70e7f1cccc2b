#include "cluster/mpi.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>

#if NB_WITH_MPI
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace nb::mpi {
namespace {

struct State {
  bool active = false;
  int rank = 0, size = 1, local_rank = 0, local_size = 1;
  std::string host;
};
State& state() {
  static State s;
  return s;
}

std::string gethost() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "host";
  return buf;
}

bool env_set(const char* name) {
  const char* v = std::getenv(name);
  return v && *v;
}

#if NB_WITH_MPI
void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw std::runtime_error(std::string("MPI: ") + what + " failed: " + msg);
}

MPI_Op to_mpi(Op op) {
  switch (op) {
    case Op::max: return MPI_MAX;
    case Op::min: return MPI_MIN;
    case Op::sum: return MPI_SUM;
  }
  return MPI_MAX;
}

// MPI counts are int: large buffers go in pieces.
constexpr size_t kMaxPiece = size_t(1) << 30;
#endif

}  // namespace

bool compiled() {
#if NB_WITH_MPI
  return true;
#else
  return false;
#endif
}

static std::optional<bool>& launch_override() {
  static std::optional<bool> forced;
  return forced;
}

void set_launch_override(std::optional<bool> forced) { launch_override() = forced; }

bool launched() {
  if (launch_override()) return *launch_override();
  return env_set("OMPI_COMM_WORLD_SIZE") || env_set("PMI_SIZE") || env_set("PMIX_RANK");
}

bool init() {
  State& s = state();
  if (s.active) return true;
  s.host = gethost();
#if NB_WITH_MPI
  if (!launched()) return false;
  int already = 0;
  MPI_Initialized(&already);
  if (!already) {
    int provided = 0;
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    std::atexit([] { finalize(); });
  }
  // Errors come back as codes (and become exceptions) rather than ending the job at once.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  check(MPI_Comm_rank(MPI_COMM_WORLD, &s.rank), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &s.size), "MPI_Comm_size");
  MPI_Comm node;
  check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, s.rank, MPI_INFO_NULL, &node),
        "MPI_Comm_split_type");
  MPI_Comm_rank(node, &s.local_rank);
  MPI_Comm_size(node, &s.local_size);
  MPI_Comm_free(&node);
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  if (MPI_Get_processor_name(name, &len) == MPI_SUCCESS && len > 0) s.host.assign(name, size_t(len));
  s.active = true;
  return true;
#else
  return false;
#endif
}

bool active() { return state().active; }

void finalize() {
#if NB_WITH_MPI
  State& s = state();
  if (!s.active) return;
  s.active = false;
  int done = 0;
  MPI_Finalized(&done);
  if (!done) MPI_Finalize();
#endif
}

void abort_all(int code) {
#if NB_WITH_MPI
  if (state().active) MPI_Abort(MPI_COMM_WORLD, code);
#endif
  std::exit(code);
}

int rank() { return state().rank; }
int size() { return state().size; }
int local_rank() { return state().local_rank; }
int local_size() { return state().local_size; }
std::string host() {
  if (state().host.empty()) state().host = gethost();
  return state().host;
}

void barrier() {
#if NB_WITH_MPI
  if (active()) check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
#endif
}

void broadcast(void* data, size_t bytes, int root) {
#if NB_WITH_MPI
  if (!active()) return;
  auto* p = static_cast<char*>(data);
  for (size_t off = 0; off < bytes; off += kMaxPiece) {
    const size_t n = std::min(kMaxPiece, bytes - off);
    check(MPI_Bcast(p + off, int(n), MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast");
  }
#else
  (void)data, (void)bytes, (void)root;
#endif
}

std::string broadcast_string(const std::string& s, int root) {
  if (!active()) return s;
  uint64_t len = rank() == root ? s.size() : 0;
  broadcast(&len, sizeof len, root);
  std::string out = rank() == root ? s : std::string(size_t(len), '\0');
  broadcast(out.data(), out.size(), root);
  return out;
}

std::vector<std::string> gather_strings(const std::string& mine, int root) {
#if NB_WITH_MPI
  if (!active()) return {mine};
  const int n = size();
  // Lengths first, then the strings one by one from each rank to root: no int-sized
  // displacement limits, whatever the total.
  uint64_t len = mine.size();
  std::vector<uint64_t> lens(rank() == root ? size_t(n) : 0);
  check(MPI_Gather(&len, 1, MPI_UINT64_T, lens.data(), 1, MPI_UINT64_T, root, MPI_COMM_WORLD), "MPI_Gather");
  std::vector<std::string> out;
  if (rank() == root) {
    out.resize(size_t(n));
    for (int r = 0; r < n; ++r) {
      if (r == root) {
        out[size_t(r)] = mine;
        continue;
      }
      std::string& buf = out[size_t(r)];
      buf.resize(size_t(lens[size_t(r)]));
      for (size_t off = 0; off < buf.size(); off += kMaxPiece) {
        const size_t k = std::min(kMaxPiece, buf.size() - off);
        check(MPI_Recv(buf.data() + off, int(k), MPI_BYTE, r, 7001, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
      }
    }
  } else {
    for (size_t off = 0; off < mine.size(); off += kMaxPiece) {
      const size_t k = std::min(kMaxPiece, mine.size() - off);
      check(MPI_Send(mine.data() + off, int(k), MPI_BYTE, root, 7001, MPI_COMM_WORLD), "MPI_Send");
    }
  }
  return out;
#else
  (void)root;
  return {mine};
#endif
}

std::vector<std::string> allgather_strings(const std::string& mine) {
  if (!active()) return {mine};
  std::vector<std::string> all = gather_strings(mine, 0);
  uint64_t n = all.size();
  broadcast(&n, sizeof n, 0);
  all.resize(size_t(n));
  for (auto& s : all) s = broadcast_string(s, 0);
  return all;
}

void allreduce(double* values, size_t count, Op op) {
#if NB_WITH_MPI
  if (!active() || count == 0) return;
  for (size_t off = 0; off < count; off += kMaxPiece / sizeof(double)) {
    const size_t k = std::min(kMaxPiece / sizeof(double), count - off);
    check(MPI_Allreduce(MPI_IN_PLACE, values + off, int(k), MPI_DOUBLE, to_mpi(op), MPI_COMM_WORLD), "MPI_Allreduce");
  }
#else
  (void)values, (void)count, (void)op;
#endif
}

void allreduce(std::vector<double>& values, Op op) { allreduce(values.data(), values.size(), op); }

double allreduce(double v, Op op) {
  allreduce(&v, 1, op);
  return v;
}

int64_t allreduce(int64_t v, Op op) {
#if NB_WITH_MPI
  if (!active()) return v;
  check(MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT64_T, to_mpi(op), MPI_COMM_WORLD), "MPI_Allreduce");
#else
  (void)op;
#endif
  return v;
}

bool any(bool mine) { return allreduce(int64_t(mine ? 1 : 0), Op::max) != 0; }
bool all(bool mine) { return allreduce(int64_t(mine ? 1 : 0), Op::min) != 0; }

}  // namespace nb::mpi
