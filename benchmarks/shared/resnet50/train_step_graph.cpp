// The training step as one CUDA graph, and the host's cost of issuing it call by call.
// A step is about a thousand cuDNN, cuBLAS and kernel calls. Issued one by one, the host's cost
// of the calls (cuDNN's legacy API builds its execution plan per call) exceeds the GPU's time at
// small batches, and a loop that issues them sustains that cost, not the GPU's speed. Captured
// once into a graph, a step is one launch: the figure is the GPU's, as a trainer that uses CUDA
// graphs (MLPerf's ResNet-50 submissions, PyTorch's CUDA graphs) gets. The eager cost is
// measured beside it (host_issue_ms, eager_step_ms), so that the difference is visible.
#include <algorithm>
#include <chrono>

#include "bench/measure.hpp"
#include "base/stats.hpp"
#include "train_step.hpp"
#include "train_step_impl.hpp"

namespace nb::train {

bool TrainStep::capture_graph(std::string& why) {
  Impl& I = *impl_;
  if (I.graph_exec) return true;
  cudaStream_t s = stream_;
  NB_CUDA(cudaStreamSynchronize(s));
  cudaGraph_t graph = nullptr;
  cudaError_t e = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
  if (e != cudaSuccess) {
    why = std::string("cudaStreamBeginCapture: ") + cudaGetErrorString(e);
    (void)cudaGetLastError();
    return false;
  }
  try {
    step(s);
  } catch (const std::exception& ex) {
    why = std::string("a call of the step failed while captured: ") + ex.what();
  }
  e = cudaStreamEndCapture(s, &graph);
  if (why.empty() && e != cudaSuccess) why = std::string("cudaStreamEndCapture: ") + cudaGetErrorString(e);
  if (why.empty()) {
    e = cudaGraphInstantiate(&I.graph_exec, graph, 0);
    if (e != cudaSuccess) {
      why = std::string("cudaGraphInstantiate: ") + cudaGetErrorString(e);
      I.graph_exec = nullptr;
    }
  }
  if (graph) cudaGraphDestroy(graph);
  (void)cudaGetLastError();  // a failed capture leaves its error: the eager step must not see it
  if (!why.empty()) return false;
  NB_CUDA(cudaGraphUpload(I.graph_exec, s));
  NB_CUDA(cudaStreamSynchronize(s));
  return true;
}

bool TrainStep::has_graph() const { return impl_->graph_exec != nullptr; }

void TrainStep::run(cudaStream_t s) {
  if (impl_->graph_exec) NB_CUDA(cudaGraphLaunch(impl_->graph_exec, s));
  else step(s);
}

double TrainStep::host_issue_s(int reps) {
  std::vector<double> t;
  StreamHold hold;
  for (int i = 0; i < std::max(reps, 1); ++i) {
    NB_CUDA(cudaStreamSynchronize(stream_));
    hold.hold(stream_);
    const auto t0 = std::chrono::steady_clock::now();
    try {
      step(stream_);
    } catch (...) {
      hold.release();
      throw;
    }
    const auto t1 = std::chrono::steady_clock::now();
    hold.release();
    NB_CUDA(cudaStreamSynchronize(stream_));
    t.push_back(std::chrono::duration<double>(t1 - t0).count());
  }
  return compute_stats(t).median;
}

double TrainStep::eager_step_s(double min_s) {
  // Steps issued back to back with one synchronisation at the end: the host runs ahead of the
  // GPU when it can, as a training loop does; the figure is per completed step.
  auto timed = [&](int n) {
    NB_CUDA(cudaStreamSynchronize(stream_));
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) step(stream_);
    NB_CUDA(cudaStreamSynchronize(stream_));
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  int n = 3;
  double el = timed(n);
  if (el < min_s) {
    n = std::clamp(int(min_s / (el / n)) + 1, 3, 200);
    el = timed(n);
  }
  return el / n;
}

}  // namespace nb::train
