// Every NODEBENCH_* environment variable, parsed and checked once at the start of a command
// (a bad value exits 2 naming the variable, before anything runs), recorded in the result file
// (`settings`), and read by families through current_settings() -- no family calls getenv.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace nb {

struct Settings {
  // NODEBENCH_CUDNN_WORKSPACE_MIB: the cuDNN algorithm search's workspace cap (default 4096).
  size_t cudnn_workspace_mib = 4096;
  // NODEBENCH_NCCL_TIMEOUT_S: the NCCL watchdog (default 120 s).
  double nccl_timeout_s = 120;
  // NODEBENCH_NCCL_NONBLOCKING=0|1: non-blocking communicators (default: under MPI only).
  std::optional<bool> nccl_nonblocking;
  // NODEBENCH_NCCL_HOLD=0|1: hold each member's stream while the host queues collectives.
  bool nccl_hold = false;
  // NODEBENCH_NCCL_TRACE=0|1: each step of each NCCL measurement on stderr.
  bool nccl_trace = false;
  // NODEBENCH_NCCL_GRAPH_MULTI=0|1: run one-process CUDA-graph collectives over several GPUs.
  bool nccl_graph_multi = false;
  // NODEBENCH_P2P_LOOPBACK=0|1: with one GPU, the p2p family copies a GPU to itself.
  bool p2p_loopback = false;
  // NODEBENCH_DP_BUCKET_MIB: the gradient bucket of the data-parallel step (train_dp; default 25,
  // PyTorch DDP's default bucket_cap_mb).
  double dp_bucket_mib = 25;
  // NODEBENCH_DP_ACCUMULATION: micro-steps per all-reduce and update in train_dp (default 1).
  int dp_accumulation = 1;
  // NODEBENCH_TRAIN_FUSION=0|1|kernels: the training step's batch norm with its ReLU and add
  // (family train): 0 unfused, 1 fused (cuDNN's fused calls where cuDNN runs them, the step's own
  // kernels elsewhere; the default), kernels: the step's own fused kernels everywhere.
  int train_fusion = 1;
  // NODEBENCH_NVML_LIBRARY: the NVML library to load (default: the driver's libnvidia-ml.so.1).
  std::string nvml_library;
  // NODEBENCH_MPI=0|1: whether this process is under an MPI launcher (default: detected).
  std::optional<bool> mpi;

  // Fault injection for the tests, honoured only in a build configured with
  // -DNODEBENCH_TEST_HOOKS=ON (elsewhere setting one is an error saying so).
  // NODEBENCH_NCCL_TEST_STALL_S: rank 0 holds the first collective's stream this long.
  double test_nccl_stall_s = 0;
  // NODEBENCH_NCCL_TEST_ABSENT_RANK: this rank never joins the communicators.
  int test_nccl_absent_rank = -1;

  // From the process environment (or `env` for tests). Throws nb::Error naming the variable on a
  // bad value or an out-of-range one. `unknown` gets the NODEBENCH_* names that are no setting
  // (a misspelt one is then worth a warning).
  static Settings from_environment(std::vector<std::string>* unknown = nullptr);
  static Settings from_map(const std::map<std::string, std::string>& env, std::vector<std::string>* unknown = nullptr);
  nlohmann::json to_json() const;
};

// Whether this binary honours the test hooks.
bool test_hooks_built();

// The settings in force: set once by the command at its start; defaults until then.
const Settings& current_settings();
void set_current_settings(const Settings& s);

}  // namespace nb
