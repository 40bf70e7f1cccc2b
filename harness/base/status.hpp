// The status of a record and the structured kind of a non-ok one, serialised here only.
// `reason` stays the human sentence; `reason_kind` is what programs (compare, the advisor,
// the batch recommendation) act on instead of matching text.
#pragma once
#include <exception>
#include <optional>
#include <string>

namespace nb {

enum class Status { ok, skipped, failed, wrong };

enum class ReasonKind {
  none,          // ok
  oom,           // did not fit in device (or pinned host) memory
  unsupported,   // the GPU, driver or library lacks what the case needs (precision, feature)
  needs_gpus,    // more GPUs than selected
  timeout,       // a watchdog ended it (hung collective)
  error,         // CUDA, library or other error
  wrong_result,  // verification found a wrong result
  above_peak,    // a figure above the hardware's peak: the measurement is wrong
  shared_gpu,    // two MPI ranks on one GPU: per-GPU figures would be halved
  not_built,     // the library it needs was not found at build time
  interrupted,   // the run was interrupted before it ran
  unusable_gpu,  // an earlier sticky error left the GPU's context unusable
  peer_rank,     // another MPI rank could not run it
  smaller_oom,   // a smaller batch of the same series did not fit
  plateau,       // a batch sweep stopped before it: throughput had reached its plateau (bench/sweep.hpp)
};

const char* to_string(Status s);
const char* to_string(ReasonKind k);
std::optional<Status> parse_status(const std::string& s);
std::optional<ReasonKind> parse_reason_kind(const std::string& s);


// What an exception out of a case means for its record: out of device memory is a skipped case
// (it does not fit), anything else a failure. The one mapping from errors to statuses.
struct Outcome {
  Status status = Status::failed;
  ReasonKind kind = ReasonKind::error;
  std::string reason;
};
Outcome outcome_of(const std::exception& e);

}  // namespace nb
