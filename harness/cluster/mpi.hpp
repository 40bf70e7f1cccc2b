// The few MPI operations nodebench needs to run one process per GPU over several nodes
// (mpirun -np 16 -H a:8,b:8 nodebench run ...): bootstrap, broadcast (the NCCL unique id, the
// iteration counts rank 0 decides), gathers (environments, result records) and reductions
// (per-sample times, failure flags). Host memory only; no CUDA-aware MPI needed.
//
// MPI is an optional build dependency (NODEBENCH_WITH_MPI). Without it, or when the process was
// not started by an MPI launcher, every call acts on a world of one process (rank 0 of 1), so
// callers need no special case. Only the thread that called init() may call the others.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nb::mpi {

// Whether nodebench was built with MPI.
bool compiled();

// Whether an MPI launcher started this process: OMPI_COMM_WORLD_SIZE (Open MPI), PMI_SIZE
// (MPICH/Hydra, Slurm PMI-2), PMIX_RANK (PMIx). NODEBENCH_MPI=0 says no whatever the
// launcher; NODEBENCH_MPI=1 says yes (a singleton MPI world when no launcher is there): that
// setting is parsed with the others (bench/settings, key `mpi`) and handed down here by the
// command line (set_launch_override), as this layer sits below the settings.
bool launched();
// The NODEBENCH_MPI setting: nullopt (unset: detect the launcher), true or false.
void set_launch_override(std::optional<bool> forced);

// Initialises MPI (MPI_THREAD_FUNNELED) once, when compiled() and launched(); returns active().
// Throws std::runtime_error when MPI_Init fails.
bool init();
// MPI is initialised and not finalised.
bool active();
// Calls MPI_Finalize when active (also registered with atexit by init()).
void finalize();
// Ends every process of the job (MPI_Abort) when active; std::exit otherwise.
[[noreturn]] void abort_all(int code);

int rank();         // 0 when not active
int size();         // 1 when not active
int local_rank();   // rank among the processes of this host (MPI_COMM_TYPE_SHARED)
int local_size();
std::string host(); // MPI_Get_processor_name, or gethostname

void barrier();
// Broadcasts `bytes` bytes from `root` to every process.
void broadcast(void* data, size_t bytes, int root);
std::string broadcast_string(const std::string& s, int root);
template <class T>
T broadcast_value(T v, int root) {
  broadcast(&v, sizeof v, root);
  return v;
}

// Every process's string, in rank order, at `root`; the others get an empty vector.
std::vector<std::string> gather_strings(const std::string& mine, int root);
// Every process's string, in rank order, everywhere.
std::vector<std::string> allgather_strings(const std::string& mine);

enum class Op { max, min, sum };
// Element-wise reduction in place over every process (all must pass the same count).
void allreduce(double* values, size_t count, Op op);
void allreduce(std::vector<double>& values, Op op);
double allreduce(double v, Op op);
int64_t allreduce(int64_t v, Op op);
// True where any (all) process passes true.
bool any(bool mine);
bool all(bool mine);

}  // namespace nb::mpi
