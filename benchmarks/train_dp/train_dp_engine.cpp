// The data-parallel engine (see train_dp_engine.hpp).
#include "train_dp_engine.hpp"

#if NB_HAVE_NCCL
#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <thread>

#include "shared/nccl/nccl_team.hpp"
#include "base/text.hpp"
#include "kernels/train/train_kernels.cuh"

namespace nb::train_dp {

using nlohmann::json;

void on_threads(Engine& e, const std::vector<size_t>& members, const std::function<void(Worker&, size_t)>& f) {
  std::vector<std::exception_ptr> errs(members.size());
  std::vector<std::thread> th;
  for (size_t j = 0; j < members.size(); ++j)
    th.emplace_back([&, j] {
      try {
        Worker& w = e.worker(members[j]);
        NB_CUDA(cudaSetDevice(w.device));
        f(w, j);
      } catch (...) {
        errs[j] = std::current_exception();
      }
    });
  for (auto& t : th) t.join();
  for (auto& x : errs)
    if (x) std::rethrow_exception(x);
}

Engine::Engine(const train::StepConfig& cfg, const std::vector<int>& devices, const std::vector<std::string>& models,
               size_t bucket_bytes, int accumulation)
    : bucket_bytes_(bucket_bytes), k_(std::max(1, accumulation)) {
  for (size_t i = 0; i < devices.size(); ++i) {
    auto w = std::make_unique<Worker>();
    w->device = devices[i];
    NB_CUDA(cudaSetDevice(w->device));
    w->s = std::make_unique<Stream>();
    w->comm = std::make_unique<Stream>();
    w->comm_done = std::make_unique<Event>();
    w->end = std::make_unique<Event>();
    train::StepConfig c = cfg;
    c.data_seed = 7919 * uint64_t(i);
    w->st = std::make_unique<train::TrainStep>(c, w->device, models[i], w->s->get());
    w_.push_back(std::move(w));
  }
}

Engine::~Engine() {
  // The steps' buffers belong to their GPUs: free them with that GPU current.
  for (auto& w : w_) {
    if (cudaSetDevice(w->device) != cudaSuccess) continue;
    if (w->s) (void)cudaStreamSynchronize(w->s->get());
    if (w->comm) (void)cudaStreamSynchronize(w->comm->get());
    w.reset();
  }
}

void Engine::setup() {
  std::vector<size_t> all(w_.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  on_threads(*this, all, [](Worker& w, size_t) { w.st->setup(); });
  // Buckets from the parameters' gradient bytes (every GPU's step has the same layout).
  const train::TrainStep& st = *w_.front()->st;
  const auto& params = st.params();
  const train::GradBuffers gb0 = st.grad_buffers();
  const size_t elem_a = gb0.a_half ? 2 : 4;
  std::vector<size_t> bytes;
  std::vector<ParamSpan> spans;
  for (const auto& p : params) {
    bytes.push_back(p.count * (p.fp32_segment ? 4 : elem_a));
    spans.push_back({p.fp32_segment, p.offset, p.count});
    grad_bytes_ += bytes.back();
  }
  ranges_ = bucket_ranges(spans, assign_buckets(bytes, bucket_bytes_));
  on_threads(*this, all, [&](Worker& w, size_t) {
    w.gb = w.st->grad_buffers();
    // The padding between parameters is never written by backward but is all-reduced: zero.
    NB_CUDA(cudaMemsetAsync(w.gb.a, 0, w.gb.n_a * elem_a, w.s->get()));
    NB_CUDA(cudaMemsetAsync(w.gb.b, 0, w.gb.n_b * 4, w.s->get()));
    if (k_ > 1) {
      w.acc_a = DeviceBuffer(w.gb.n_a * elem_a);
      w.acc_b = DeviceBuffer(w.gb.n_b * 4);
    }
    w.ready.clear();
    for (size_t b = 0; b < ranges_.size(); ++b) w.ready.emplace_back();
    NB_CUDA(cudaStreamSynchronize(w.s->get()));
  });
}

void Engine::launch_bucket(Worker& w, size_t bi, ncclComm_t comm, int k) {
  const BucketRange& r = ranges_[bi];
  const size_t elem_a = w.gb.a_half ? 2 : 4;
  char* a = static_cast<char*>(w.gb.a) + r.a_off * elem_a;
  float* b = w.gb.b + r.b_off;
  cudaStream_t s = w.s->get();
  if (k > 1) {  // the last micro-step's gradient + the accumulated ones, averaged over k
    kernels::launch_accumulate(s, a, static_cast<char*>(w.acc_a.get()) + r.a_off * elem_a, r.a_n, w.gb.a_half, 1.f / float(k));
    kernels::launch_accumulate(s, b, static_cast<float*>(w.acc_b.get()) + r.b_off, r.b_n, false, 1.f / float(k));
    NB_CUDA_LAUNCH();
  }
  if (!comm) return;
  w.ready[bi].record(s);
  NB_CUDA(cudaStreamWaitEvent(w.comm->get(), w.ready[bi].get(), 0));
  NB_NCCL(ncclGroupStart());
  if (r.a_n) NB_NCCL(ncclAllReduce(a, a, r.a_n, w.gb.a_half ? ncclHalf : ncclFloat, ncclAvg, comm, w.comm->get()));
  if (r.b_n) NB_NCCL(ncclAllReduce(b, b, r.b_n, ncclFloat, ncclAvg, comm, w.comm->get()));
  NB_NCCL(ncclGroupEnd());
}

void Engine::enqueue_step(Worker& w, ncclComm_t comm, int k, bool update) {
  cudaStream_t s = w.s->get();
  const size_t elem_a = w.gb.a_half ? 2 : 4;
  for (int m = 1; m <= k; ++m) {
    w.st->forward(s);
    if (!allreduce_on(m, k)) {  // micro-steps 1..k-1: gradients into the accumulation buffer
      w.st->backward(s);
      if (m == 1) {
        NB_CUDA(cudaMemcpyAsync(w.acc_a.get(), w.gb.a, w.gb.n_a * elem_a, cudaMemcpyDeviceToDevice, s));
        NB_CUDA(cudaMemcpyAsync(w.acc_b.get(), w.gb.b, w.gb.n_b * 4, cudaMemcpyDeviceToDevice, s));
      } else {
        kernels::launch_accumulate(s, w.acc_a.get(), w.gb.a, w.gb.n_a, w.gb.a_half, 1.f);
        kernels::launch_accumulate(s, w.acc_b.get(), w.gb.b, w.gb.n_b, false, 1.f);
        NB_CUDA_LAUNCH();
      }
      continue;
    }
    size_t next = 0, ready_from = SIZE_MAX;
    w.st->backward(s, [&](size_t first, size_t) {
      ready_from = std::min(ready_from, first);
      while (next < ranges_.size() && ranges_[next].first >= ready_from) launch_bucket(w, next++, comm, k);
    });
    while (next < ranges_.size()) launch_bucket(w, next++, comm, k);  // none left: the stem reports 0
    if (comm) {
      w.comm_done->record(w.comm->get());
      NB_CUDA(cudaStreamWaitEvent(s, w.comm_done->get(), 0));
    }
    if (update) w.st->update(s);
  }
}

double Engine::run(const std::vector<size_t>& members, const std::vector<ncclComm_t>& comms, int steps) {
  const auto t0 = std::chrono::steady_clock::now();
  on_threads(*this, members, [&](Worker& w, size_t j) {
    for (int i = 0; i < steps; ++i) enqueue_step(w, comms.empty() ? nullptr : comms[j], k_, true);
    w.end->record(w.s->get());
  });
  std::vector<cudaEvent_t> ev;
  for (size_t m : members) ev.push_back(w_[m]->end->get());
  nccl::wait_events(ev, comms, "the data-parallel step");
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / double(steps);
}

void Engine::sync_state(const std::vector<size_t>& members, const std::vector<ncclComm_t>& comms) {
  on_threads(*this, members, [&](Worker& w, size_t j) {
    NB_NCCL(ncclGroupStart());
    for (const auto& [p, bytes] : w.st->state_buffers())
      NB_NCCL(ncclBroadcast(p, p, bytes, ncclUint8, 0, comms[j], w.s->get()));
    NB_NCCL(ncclGroupEnd());
    w.end->record(w.s->get());
  });
  std::vector<cudaEvent_t> ev;
  for (size_t m : members) ev.push_back(w_[m]->end->get());
  nccl::wait_events(ev, comms, "the broadcast of the optimizer state");
}

std::vector<size_t> Engine::sample_params() const {
  const size_t n = w_.front()->st->params().size();
  // conv1.weight, conv1.bn.weight, a middle convolution's weight, fc.weight, fc.bias.
  const size_t mid = (n - 2) / 3 / 2 * 3;
  return {0, 1, mid, n - 2, n - 1};
}

json Engine::verify_gradients(const std::vector<size_t>& members, const std::vector<ncclComm_t>& comms,
                              size_t& failures, std::string& first) {
  const auto& params = w_.front()->st->params();
  const auto sample = sample_params();
  const bool half = w_.front()->gb.a_half;
  // 1. Each GPU's own gradient (compute only), and their mean on the host.
  on_threads(*this, members, [&](Worker& w, size_t) {
    w.st->forward(w.s->get());
    w.st->backward(w.s->get());
    NB_CUDA(cudaStreamSynchronize(w.s->get()));
  });
  std::vector<std::vector<std::vector<float>>> own(members.size());  // [gpu][sample][i]
  for (size_t j = 0; j < members.size(); ++j) {
    NB_CUDA(cudaSetDevice(w_[members[j]]->device));
    for (size_t p : sample) own[j].push_back(w_[members[j]]->st->gradients(params[p]));
  }
  // 2. The same micro-step again with the bucketed all-reduce, no update.
  on_threads(*this, members, [&](Worker& w, size_t j) {
    enqueue_step(w, comms[j], 1, false);
    w.end->record(w.s->get());
  });
  std::vector<cudaEvent_t> ev;
  for (size_t m : members) ev.push_back(w_[m]->end->get());
  nccl::wait_events(ev, comms, "the data-parallel verification step");
  // 3. Every GPU's reduced gradient against the host mean, and identical across GPUs.
  const double rel = half ? 2e-2 : 5e-3;
  json per = json::array();
  double own_vs_mean = 0;
  for (size_t si = 0; si < sample.size(); ++si) {
    const auto& P = params[sample[si]];
    std::vector<double> mean(P.count, 0.0);
    for (size_t j = 0; j < members.size(); ++j)
      for (size_t i = 0; i < P.count; ++i) mean[i] += own[j][si][i] / double(members.size());
    double scale = 0;
    for (double v : mean) scale = std::max(scale, std::fabs(v));
    double worst = 0;
    size_t differ = 0;
    std::vector<float> ref;
    for (size_t j = 0; j < members.size(); ++j) {
      NB_CUDA(cudaSetDevice(w_[members[j]]->device));
      const auto got = w_[members[j]]->st->gradients(P);
      if (j == 0) ref = got;
      for (size_t i = 0; i < P.count; ++i) {
        if (got[i] != ref[i]) ++differ;
        worst = std::max(worst, std::fabs(double(got[i]) - mean[i]));
        if (j == 0) own_vs_mean = std::max(own_vs_mean, scale > 0 ? std::fabs(double(own[0][si][i]) - mean[i]) / scale : 0.0);
      }
    }
    const double err = scale > 0 ? worst / scale : (worst > 0 ? INFINITY : 0.0);
    const bool ok = std::isfinite(err) && err <= rel && differ == 0;
    per.push_back({{"param", P.name}, {"elements", P.count}, {"max_abs_mean", scale}, {"max_error_rel", err},
                   {"bound_rel", rel}, {"elements_differing_across_gpus", differ}, {"ok", ok}});
    if (!ok) {
      if (!failures)
        first = "the all-reduced gradient of " + P.name + ": " +
                (differ ? std::to_string(differ) + " elements differ between GPUs"
                        : "off the mean of the GPUs' own gradients by " + fmt(err, 5) + " of its largest value (bound " +
                              fmt(rel, 3) + ")");
      ++failures;
    }
  }
  // 4. The update from the reduced gradients: parameters stay identical.
  on_threads(*this, members, [&](Worker& w, size_t) {
    w.st->update(w.s->get());
    NB_CUDA(cudaStreamSynchronize(w.s->get()));
  });
  json out = {{"gradients", per}, {"own_vs_mean_rel", own_vs_mean},
              {"note", "each GPU's own gradient (its own images) against the mean of all: the GPUs' data differ"}};
  out["parameters_after_update"] = check_identical(members, failures, first);
  return out;
}

json Engine::check_identical(const std::vector<size_t>& members, size_t& failures, std::string& first) {
  const auto& params = w_.front()->st->params();
  size_t checked = 0, differ = 0;
  std::string where;
  for (size_t p : sample_params()) {
    const auto& P = params[p];
    for (size_t t = 0; t < 16; ++t) {
      const size_t i = t * (P.count / 16);
      float ref = 0;
      for (size_t j = 0; j < members.size(); ++j) {
        NB_CUDA(cudaSetDevice(w_[members[j]]->device));
        const float v = w_[members[j]]->st->param(P, i);
        if (j == 0) ref = v;
        else if (!(v == ref) && !(std::isnan(v) && std::isnan(ref))) {
          if (where.empty()) where = P.name + "[" + std::to_string(i) + "]: " + fmt(ref, 8) + " on the first GPU, " + fmt(v, 8) + " on GPU " + std::to_string(w_[members[j]]->device);
          ++differ;
        }
        ++checked;
      }
    }
  }
  if (differ) {
    if (!failures) first = "parameters differ between GPUs after the update: " + where;
    ++failures;
  }
  return {{"values_checked", checked}, {"differing", differ}};
}

}  // namespace nb::train_dp

#endif  // NB_HAVE_NCCL
