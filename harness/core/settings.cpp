#include "settings.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <mutex>

#include "error.hpp"

extern char** environ;

namespace nb {
using nlohmann::json;

namespace {

// The names this build knows; any other NODEBENCH_* is reported (a misspelt setting must not be
// silently ignored). NODEBENCH_BIN, _REPORT and _SKIP_CUDA12 belong to the scripts.
const char* const kKnown[] = {"NODEBENCH_CUDNN_WORKSPACE_MIB", "NODEBENCH_NCCL_TIMEOUT_S",
                              "NODEBENCH_NCCL_NONBLOCKING",   "NODEBENCH_NCCL_HOLD",
                              "NODEBENCH_NCCL_TRACE",         "NODEBENCH_NCCL_GRAPH_MULTI",
                              "NODEBENCH_P2P_LOOPBACK",       "NODEBENCH_MPI",
                              "NODEBENCH_NVML_LIBRARY",       "NODEBENCH_DP_BUCKET_MIB",
                              "NODEBENCH_DP_ACCUMULATION",    "NODEBENCH_TRAIN_FUSION",
                              "NODEBENCH_NCCL_TEST_STALL_S",  "NODEBENCH_NCCL_TEST_ABSENT_RANK"};
const char* const kScripts[] = {"NODEBENCH_BIN", "NODEBENCH_REPORT", "NODEBENCH_SKIP_CUDA12", "NODEBENCH_SETUP_HIDE"};

double parse_number(const std::string& name, const std::string& v, double max, bool integer, bool allow_zero) {
  errno = 0;
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  const std::string what = allow_zero ? "a number >= 0" : "a positive number";
  if (end == v.c_str() || *end != '\0' || errno == ERANGE || !std::isfinite(x) || (allow_zero ? x < 0 : !(x > 0)) ||
      (integer && x != std::floor(x)))
    throw Error(name + "='" + v + "': must be " + (integer ? (allow_zero ? "a whole number >= 0" : "a positive whole number") : what));
  if (x > max) throw Error(name + "='" + v + "': too large (at most " + std::to_string(static_cast<long long>(max)) + ")");
  return x;
}

bool parse_flag(const std::string& name, const std::string& v) {
  if (v == "0") return false;
  if (v == "1") return true;
  throw Error(name + "='" + v + "': must be 0 or 1");
}

}  // namespace

bool test_hooks_built() {
#if NB_TEST_HOOKS
  return true;
#else
  return false;
#endif
}

Settings Settings::from_map(const std::map<std::string, std::string>& env, std::vector<std::string>* unknown) {
  Settings s;
  for (const auto& [name, value] : env) {
    if (name.rfind("NODEBENCH_", 0) != 0) continue;
    bool known = false;
    for (const char* k : kKnown) known = known || name == k;
    for (const char* k : kScripts) known = known || name == k;
    if (!known && unknown) unknown->push_back(name);
  }
  auto get = [&](const char* n) -> std::optional<std::string> {
    auto it = env.find(n);
    if (it == env.end() || it->second.empty()) return std::nullopt;
    return it->second;
  };
  // 1 TiB of workspace is more than any GPU has; the cap keeps the shift to bytes from wrapping.
  if (auto v = get("NODEBENCH_CUDNN_WORKSPACE_MIB"))
    s.cudnn_workspace_mib = size_t(parse_number("NODEBENCH_CUDNN_WORKSPACE_MIB", *v, 1 << 20, true, false));
  if (auto v = get("NODEBENCH_NCCL_TIMEOUT_S")) s.nccl_timeout_s = parse_number("NODEBENCH_NCCL_TIMEOUT_S", *v, 86400, false, false);
  if (auto v = get("NODEBENCH_NCCL_NONBLOCKING")) s.nccl_nonblocking = parse_flag("NODEBENCH_NCCL_NONBLOCKING", *v);
  if (auto v = get("NODEBENCH_NCCL_HOLD")) s.nccl_hold = parse_flag("NODEBENCH_NCCL_HOLD", *v);
  if (auto v = get("NODEBENCH_NCCL_TRACE")) s.nccl_trace = parse_flag("NODEBENCH_NCCL_TRACE", *v);
  if (auto v = get("NODEBENCH_NCCL_GRAPH_MULTI")) s.nccl_graph_multi = parse_flag("NODEBENCH_NCCL_GRAPH_MULTI", *v);
  if (auto v = get("NODEBENCH_P2P_LOOPBACK")) s.p2p_loopback = parse_flag("NODEBENCH_P2P_LOOPBACK", *v);
  if (auto v = get("NODEBENCH_DP_BUCKET_MIB")) s.dp_bucket_mib = parse_number("NODEBENCH_DP_BUCKET_MIB", *v, 1 << 16, false, false);
  if (auto v = get("NODEBENCH_DP_ACCUMULATION"))
    s.dp_accumulation = int(parse_number("NODEBENCH_DP_ACCUMULATION", *v, 1024, true, false));
  if (auto v = get("NODEBENCH_TRAIN_FUSION")) {
    if (*v == "0" || *v == "1") s.train_fusion = *v == "1" ? 1 : 0;
    else if (*v == "kernels") s.train_fusion = 2;
    else throw Error("NODEBENCH_TRAIN_FUSION='" + *v + "': must be 0, 1 or kernels");
  }
  if (auto v = get("NODEBENCH_NVML_LIBRARY")) s.nvml_library = *v;
  if (auto v = get("NODEBENCH_MPI")) s.mpi = parse_flag("NODEBENCH_MPI", *v);
  const auto stall = get("NODEBENCH_NCCL_TEST_STALL_S");
  const auto absent = get("NODEBENCH_NCCL_TEST_ABSENT_RANK");
  if ((stall || absent) && !test_hooks_built())
    throw Error(std::string(stall ? "NODEBENCH_NCCL_TEST_STALL_S" : "NODEBENCH_NCCL_TEST_ABSENT_RANK") +
                ": a test hook; this build has none (configure with -DNODEBENCH_TEST_HOOKS=ON)");
  if (stall) s.test_nccl_stall_s = parse_number("NODEBENCH_NCCL_TEST_STALL_S", *stall, 3600, false, true);
  if (absent) s.test_nccl_absent_rank = int(parse_number("NODEBENCH_NCCL_TEST_ABSENT_RANK", *absent, 1 << 20, true, true));
  return s;
}

Settings Settings::from_environment(std::vector<std::string>* unknown) {
  std::map<std::string, std::string> env;
  for (char** p = environ; p && *p; ++p) {
    const std::string kv = *p;
    if (kv.rfind("NODEBENCH_", 0) != 0) continue;
    const size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return from_map(env, unknown);
}

json Settings::to_json() const {
  json j = {{"cudnn_workspace_mib", cudnn_workspace_mib},
            {"nccl_timeout_s", nccl_timeout_s},
            {"nccl_nonblocking", nccl_nonblocking ? json(*nccl_nonblocking) : json(nullptr)},
            {"nccl_hold", nccl_hold},
            {"nccl_trace", nccl_trace},
            {"nccl_graph_multi", nccl_graph_multi},
            {"p2p_loopback", p2p_loopback},
            {"dp_bucket_mib", dp_bucket_mib},
            {"dp_accumulation", dp_accumulation},
            {"train_fusion", train_fusion == 2 ? "kernels" : train_fusion == 1 ? "1" : "0"},
            {"mpi", mpi ? json(*mpi) : json(nullptr)}};
  if (!nvml_library.empty()) j["nvml_library"] = nvml_library;
  if (test_nccl_stall_s > 0) j["test_nccl_stall_s"] = test_nccl_stall_s;
  if (test_nccl_absent_rank >= 0) j["test_nccl_absent_rank"] = test_nccl_absent_rank;
  return j;
}

namespace {
std::mutex g_mu;
Settings g_current;
}  // namespace

const Settings& current_settings() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_current;
}

void set_current_settings(const Settings& s) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_current = s;
}

}  // namespace nb
