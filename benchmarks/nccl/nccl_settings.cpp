// The nccl family's settings (benchmarks/nccl/README.md). The NCCL team (benchmarks/shared/nccl),
// which the train_dp family uses too, reads the first five; the cases read hold and graph_multi.
// Declared in this object file, which is always linked, so that they exist with or without NCCL.
#include "bench/settings.hpp"

namespace nb {
namespace {

const SettingRegistrar kTimeout({"NODEBENCH_NCCL_TIMEOUT_S", SettingKind::number, "nccl_timeout_s", 120.0, 86400, false,
                                 "NCCL watchdog in seconds (default 120)", "nccl"});
const SettingRegistrar kNonblocking({"NODEBENCH_NCCL_NONBLOCKING", SettingKind::tristate, "nccl_nonblocking", nullptr, 0,
                                     false, "=0|1 non-blocking communicators (default: under MPI only)", "nccl"});
const SettingRegistrar kTrace({"NODEBENCH_NCCL_TRACE", SettingKind::flag, "nccl_trace", false, 0, false,
                               "=0|1 each NCCL step on stderr (default 0)", "nccl"});
const SettingRegistrar kStall({"NODEBENCH_NCCL_TEST_STALL_S", SettingKind::number, "test_nccl_stall_s", 0.0, 3600, true,
                               "test hook: rank 0 holds the first collective's stream this long", "nccl", true});
const SettingRegistrar kAbsent({"NODEBENCH_NCCL_TEST_ABSENT_RANK", SettingKind::integer, "test_nccl_absent_rank", -1,
                                1 << 20, true, "test hook: this rank never joins the communicators", "nccl", true});

const SettingRegistrar kHold({"NODEBENCH_NCCL_HOLD", SettingKind::flag, "nccl_hold", false, 0, false,
                             "=0|1 hold the streams while collectives are queued (default 0)", "nccl"});
const SettingRegistrar kGraphMulti({"NODEBENCH_NCCL_GRAPH_MULTI", SettingKind::flag, "nccl_graph_multi", false, 0, false,
                                   "=0|1 one-process CUDA-graph collectives over several GPUs (default 0)", "nccl"});

}  // namespace
}  // namespace nb
