// Internal to the train_dp family: the data-parallel engine. One TrainStep per GPU, each on its
// own stream, and a communication stream per GPU; one host thread per GPU enqueues its steps
// (NCCL's one-thread-per-communicator use within one process). During backward, each gradient
// bucket (train_dp_plan.hpp) is all-reduced (ncclAvg, in place) on the communication stream as
// soon as the layers it holds have written their gradients (the step's GradHook records an event
// the communication stream waits on), overlapping the rest of backward; the update waits for
// every bucket. Gradient accumulation k: micro-steps 1..k-1 add their gradients into an
// accumulation buffer; on micro-step k each bucket's gradient becomes (its own + the buffer) / k
// before its all-reduce. Gradients are all-reduced in the type the step stores them: FP16 for
// the convolution and FC weights under mixed precision (FP32 otherwise), FP32 for batch norm and
// the FC bias.
#pragma once
#if NB_HAVE_NCCL
#include <memory>
#include <string>
#include <vector>

#include <nccl.h>
#include <nlohmann/json.hpp>

#include "base/resources.hpp"
#include "train_dp_plan.hpp"
#include "shared/resnet50/train_step.hpp"

namespace nb::train_dp {

struct Worker {
  int device = 0;
  std::unique_ptr<Stream> s, comm;
  std::unique_ptr<train::TrainStep> st;
  train::GradBuffers gb;
  DeviceBuffer acc_a, acc_b;
  std::vector<Event> ready;  // per bucket
  std::unique_ptr<Event> comm_done, end;
};

class Engine {
 public:
  // One worker per GPU of `devices`, GPU i's batch seeded with data_seed i (identical initial
  // weights everywhere, different images).
  Engine(const train::StepConfig& cfg, const std::vector<int>& devices, const std::vector<std::string>& models,
         size_t bucket_bytes, int accumulation);
  ~Engine();
  // Sets every step up at once (a thread per GPU); throws train::OutOfMemory or the first error.
  void setup();
  size_t size() const { return w_.size(); }
  Worker& worker(size_t i) { return *w_[i]; }
  const std::vector<BucketRange>& buckets() const { return ranges_; }
  size_t gradient_bytes() const { return grad_bytes_; }
  // Runs `steps` optimizer steps (k micro-steps each) on the workers `members` (indices), one
  // host thread each, all-reducing over `comms` (comms[j] for members[j]); empty: compute only
  // (the all-reduce skipped, everything else as in the step). Waits with the NCCL watchdog;
  // returns host seconds per step.
  double run(const std::vector<size_t>& members, const std::vector<ncclComm_t>& comms, int steps);
  // Broadcasts the optimizer state of members[0] to the others (the compute-only steps update
  // each GPU from its own gradients: they drift apart).
  void sync_state(const std::vector<size_t>& members, const std::vector<ncclComm_t>& comms);
  // The checks (module comment of train_dp.cpp): adds to `failures`, `first` the first one.
  nlohmann::json verify_gradients(const std::vector<size_t>& members, const std::vector<ncclComm_t>& comms,
                                  size_t& failures, std::string& first);
  nlohmann::json check_identical(const std::vector<size_t>& members, size_t& failures, std::string& first);

 private:
  void enqueue_step(Worker& w, ncclComm_t comm, int k, bool update);
  void launch_bucket(Worker& w, size_t bi, ncclComm_t comm, int k);
  std::vector<size_t> sample_params() const;

  std::vector<std::unique_ptr<Worker>> w_;
  std::vector<BucketRange> ranges_;
  size_t bucket_bytes_ = 0, grad_bytes_ = 0;
  int k_ = 1;
};

// Runs f(j) on one thread per j in [0, n) with the device of worker members[j] current; throws
// the first exception any of them threw (train::OutOfMemory kept as it is).
void on_threads(Engine& e, const std::vector<size_t>& members, const std::function<void(Worker&, size_t)>& f);

}  // namespace nb::train_dp

#endif  // NB_HAVE_NCCL
