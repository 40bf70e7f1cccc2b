// The ResNet-50 training step (see train_step.hpp).
#include "train_bn_layer.hpp"
#include "train_step.hpp"
#include "train_step_impl.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "base/cublas_check.hpp"
#include "bench/measure.hpp"
#include "base/stats.hpp"
#include "kernels/train/train_kernels.cuh"
#include "base/verify.hpp"

namespace nb::train {

using nlohmann::json;
using namespace cudnn;

const char* kind_name(Kind k) {
  static const char* n[kKinds] = {"conv", "bn", "elementwise", "pool", "fc", "loss", "update"};
  return n[int(k)];
}

float default_loss_scale(const Prec& p) { return p.data == CUDNN_DATA_HALF ? 1024.f : 1.f; }

std::string OutOfMemory::message() const {
  return "out of memory: does not fit: asked for " + std::to_string(bytes) + " bytes for " + what + ", " +
         std::to_string(free_bytes) + " bytes free";
}

DeviceBuffer device_or_oom(size_t bytes, const std::string& what) {
  try {
    return DeviceBuffer(bytes);
  } catch (const CudaError& e) {
    if (!e.out_of_memory()) throw;
    (void)cudaGetLastError();
    size_t free_b = 0, total_b = 0;
    (void)cudaMemGetInfo(&free_b, &total_b);
    throw OutOfMemory{what, bytes, free_b};
  }
}

void* Arena::alloc(size_t bytes, const std::string& what, const std::string& kind) {
  bytes = (bytes + 255) / 256 * 256;
  bufs_.push_back(device_or_oom(bytes, what));
  current_ += bytes;
  kinds_[kind] += bytes;
  peak_ = std::max(peak_, current_);
  return bufs_.back().get();
}

TrainStep::TrainStep(const StepConfig& cfg, const cudnn::Libraries& libs, int device, const std::string& gpu_model,
                     cudaStream_t stream)
    : cfg_(cfg), libs_(libs), device_(device), gpu_model_(gpu_model), stream_(stream), net_(resnet50::net()),
      impl_(std::make_unique<Impl>()) {
  half_ = cfg_.prec->data == CUDNN_DATA_HALF;
  elem_ = cfg_.prec->elem;
  impl_->h = libs_.cudnn();
  impl_->cb = libs_.handles->cublas();
  if (cfg_.images_nchw && !cfg_.nhwc) throw Error("the training step converts NCHW images only for an NHWC step");
  impl_->bn_mode = bn_mode_for(cfg_.nhwc);  // train_bn_layer.hpp: why each mode
  impl_->relu = create_bn_relu();
  NB_CUDA(cudaDeviceGetAttribute(&impl_->sms, cudaDevAttrMultiProcessorCount, device));
}

TrainStep::~TrainStep() {
  if (impl_->graph_exec) cudaGraphExecDestroy(impl_->graph_exec);
  for (auto& L : impl_->layers)
    if (L.bn) cudnnDestroyTensorDescriptor(L.bn);
  if (impl_->relu) cudnnDestroyActivationDescriptor(impl_->relu);
  if (impl_->pool) cudnnDestroyPoolingDescriptor(impl_->pool);
  if (impl_->pool_desc) cudnnDestroyTensorDescriptor(impl_->pool_desc);
  // The handle is the session's: back to the default stream and workspace pool (cublasSetStream
  // resets both), so that it keeps no pointer into this step's arena.
  if (impl_->cb) (void)cublasSetStream(impl_->cb, nullptr);
}

void TrainStep::mark(Kind k, cudaStream_t s) {
  Impl& I = *impl_;
  if (!I.profiling) return;
  if (I.n_events == I.events.size()) I.events.emplace_back();
  I.events[I.n_events++].record(s);
  I.kinds.push_back(k);
}

void TrainStep::conv_fwd(Layer& L, cudaStream_t s) {
  ConvBuffers b{L.x, L.w, L.y, nullptr, nullptr, nullptr};
  run_pass(impl_->h, *L.d, Pass::fwd, L.fwd, b, L.ws_conv_fwd, s);
  mark(Kind::conv, s);
}

// Weight gradient from dy; input gradient into dx (out = conv_bwd_data + beta * out) unless it is
// the first convolution.
void TrainStep::conv_bwd(Layer& L, const void* dy, void* dx, float beta, cudaStream_t s) {
  ConvBuffers b{L.x, L.w, L.y, const_cast<void*>(dy), dx, L.dw};
  run_pass(impl_->h, *L.d, Pass::bwd_filter, L.bwd_filter, b, L.ws_conv_bwd, s);
  if (L.data_grad) run_pass(impl_->h, *L.d, Pass::bwd_data, L.bwd_data, b, L.ws_conv_bwd, s, 1.f, beta);
  mark(Kind::conv, s);
}

void TrainStep::forward(cudaStream_t s) {
  Impl& I = *impl_;
  const float one = 1.f, zero = 0.f;
  const int N = int(cfg_.batch);
  NB_CUDA(cudaMemsetAsync(I.loss, 0, 4, s));
  Layer& stem = I.layers[0];
  // The NCHW images into the stem's NHWC input (StepConfig::images_nchw): part of the stem's
  // convolution in the profile (the cost of running the convolutions in NHWC).
  if (cfg_.images_nchw) {
    const auto& c0 = net_.convs[0];
    kernels::launch_nchw_to_nhwc(s, I.image, stem.x, N, c0.c, int64_t(c0.hw) * c0.hw, half_);
    NB_CUDA_LAUNCH();
  }
  conv_fwd(stem, s);
  bn_fwd(stem, nullptr, s);
  if (I.pool_arg) {
    kernels::launch_maxpool(s, stem.out, I.pool_out, I.pool_arg, I.pool_dims, cfg_.nhwc, half_);
  } else {
    NB_CUDNN(cudnnSetStream(I.h, s));
    NB_CUDNN(cudnnPoolingForward(I.h, I.pool, &one, stem.d->y, stem.out, &zero, I.pool_desc, I.pool_out));
  }
  mark(Kind::pool, s);
  void* x = I.pool_out;
  for (size_t bi = 0; bi < net_.blocks.size(); ++bi) {
    const auto& b = net_.blocks[bi];
    Layer &c1 = I.layers[size_t(b.conv1)], &c2 = I.layers[size_t(b.conv2)], &c3 = I.layers[size_t(b.conv3)];
    for (Layer* L : {&c1, &c2}) {
      conv_fwd(*L, s);
      bn_fwd(*L, nullptr, s);
    }
    conv_fwd(c3, s);
    const void* shortcut = x;
    if (b.down >= 0) {
      Layer& d = I.layers[size_t(b.down)];
      conv_fwd(d, s);
      bn_fwd(d, nullptr, s);  // into its scratch: the add's other input
      shortcut = d.out;
    }
    bn_fwd(c3, shortcut, s);  // batch norm + add + ReLU into the block output
    x = I.block_out[bi];
  }
  const int last_hw = net_.stage_out_hw(4);
  kernels::launch_avgpool(s, x, I.pooled, N, net_.fc_in, last_hw * last_hw, cfg_.nhwc, half_);
  mark(Kind::pool, s);
  // logits[N][classes] = pooled[N][fc_in] W^T (column-major: W^T op, ld fc_in), FP32 out.
  const cudaDataType_t dt = half_ ? CUDA_R_16F : CUDA_R_32F;
  const cublasComputeType_t ct =
      cfg_.prec->math == CUDNN_DEFAULT_MATH && !half_ ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const void* fcw = static_cast<char*>(I.compute_a) + I.fc_w_off * elem_;
  NB_CUBLAS(cublasSetStream(I.cb, s));
  NB_CUBLAS(cublasGemmEx(I.cb, CUBLAS_OP_T, CUBLAS_OP_N, net_.classes, N, net_.fc_in, &one, fcw, dt, net_.fc_in,
                         I.pooled, dt, net_.fc_in, &zero, I.logits, CUDA_R_32F, net_.classes, ct, CUBLAS_GEMM_DEFAULT));
  mark(Kind::fc, s);
  kernels::launch_softmax_xent(s, I.logits, I.master_b + I.fc_b_off, I.labels, I.dlogits, I.loss, N, net_.classes,
                               I.scale, half_);
  mark(Kind::loss, s);
  NB_CUDA_LAUNCH();
}

GradBuffers TrainStep::grad_buffers() const {
  return {impl_->grad_a, half_, impl_->n_a, impl_->grad_b, impl_->n_b};
}

std::vector<std::pair<void*, size_t>> TrainStep::state_buffers() const {
  const Impl& I = *impl_;
  std::vector<std::pair<void*, size_t>> out = {{I.master_a, I.n_a * 4}, {I.mom_a, I.n_a * 4}, {I.master_b, I.n_b * 4},
                                               {I.mom_b, I.n_b * 4},    {I.scale, 4},          {I.ls_flags, 3 * sizeof(int)}};
  if (half_) out.push_back({I.compute_a, I.n_a * elem_});
  return out;
}

void TrainStep::backward(cudaStream_t s, const GradHook& on_grads_ready) {
  Impl& I = *impl_;
  const float one = 1.f, zero = 0.f;
  const int N = int(cfg_.batch);
  const cudaDataType_t dt = half_ ? CUDA_R_16F : CUDA_R_32F;
  const cublasComputeType_t ct =
      cfg_.prec->math == CUDNN_DEFAULT_MATH && !half_ ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  void* fcw = static_cast<char*>(I.compute_a) + I.fc_w_off * elem_;
  void* fcdw = static_cast<char*>(I.grad_a) + I.fc_w_off * elem_;
  // FC: bias gradient, weight gradient dW = dL^T pooled, input gradient dP = dL W.
  kernels::launch_bias_grad(s, I.dlogits, I.grad_b + I.fc_b_off, N, net_.classes, half_);
  NB_CUBLAS(cublasSetStream(I.cb, s));
  NB_CUBLAS(cublasGemmEx(I.cb, CUBLAS_OP_N, CUBLAS_OP_T, net_.fc_in, net_.classes, N, &one, I.pooled, dt, net_.fc_in,
                         I.dlogits, dt, net_.classes, &zero, fcdw, dt, net_.fc_in, ct, CUBLAS_GEMM_DEFAULT));
  NB_CUBLAS(cublasGemmEx(I.cb, CUBLAS_OP_N, CUBLAS_OP_N, net_.fc_in, N, net_.classes, &one, fcw, dt, net_.fc_in,
                         I.dlogits, dt, net_.classes, &zero, I.g_pooled, dt, net_.fc_in, ct, CUBLAS_GEMM_DEFAULT));
  mark(Kind::fc, s);
  const size_t n_conv = net_.convs.size();
  if (on_grads_ready) on_grads_ready(3 * n_conv, params_.size());  // fc.weight, fc.bias
  const int last_hw = net_.stage_out_hw(4);
  kernels::launch_avgpool_backward(s, I.g_pooled, I.g_last, N, net_.fc_in, last_hw * last_hw, cfg_.nhwc, half_);
  mark(Kind::pool, s);
  // Each layer's gradients are where the memory plan put them (step_memory.hpp): the one at a
  // block's output is conv3's g_out, the one at its input conv1's g_in (the next block down's g_out).
  for (size_t bi = net_.blocks.size(); bi-- > 0;) {
    const auto& b = net_.blocks[bi];
    Layer &c1 = I.layers[size_t(b.conv1)], &c2 = I.layers[size_t(b.conv2)], &c3 = I.layers[size_t(b.conv3)];
    bn_bwd(c3, c3.g_out, c3.g_y, c3.g_res, s);  // g_res: the gradient at the add's other input (the shortcut's)
    conv_bwd(c3, c3.g_y, c3.g_in, 0.f, s);
    bn_bwd(c2, c2.g_out, c2.g_y, nullptr, s);
    conv_bwd(c2, c2.g_y, c2.g_in, 0.f, s);
    bn_bwd(c1, c1.g_out, c1.g_y, nullptr, s);
    if (b.down >= 0) {
      Layer& d = I.layers[size_t(b.down)];
      bn_bwd(d, d.g_out, d.g_y, nullptr, s);  // d.g_out is c3.g_res
      conv_bwd(d, d.g_y, d.g_in, 0.f, s);     // d.g_in is c1.g_in
    }
    conv_bwd(c1, c1.g_y, c1.g_in, 1.f, s);  // the block input's gradient: the shortcut's + conv1's
    // The block's convolutions are consecutive (conv1, conv2, conv3[, downsample]): 3 params each.
    if (on_grads_ready) on_grads_ready(3 * size_t(b.conv1), 3 * size_t(std::max(b.conv3, b.down) + 1));
  }
  Layer& stem = I.layers[0];
  const void* g_pool = I.layers[size_t(net_.blocks[0].conv1)].g_in;
  if (I.pool_arg) {
    kernels::launch_maxpool_backward(s, g_pool, I.pool_arg, stem.g_out, I.pool_dims, cfg_.nhwc, half_);
  } else {
    NB_CUDNN(cudnnSetStream(I.h, s));
    NB_CUDNN(cudnnPoolingBackward(I.h, I.pool, &one, I.pool_desc, I.pool_out, I.pool_desc, g_pool, stem.d->y, stem.out,
                                  &zero, stem.d->y, stem.g_out));
  }
  mark(Kind::pool, s);
  bn_bwd(stem, stem.g_out, stem.g_y, nullptr, s);
  conv_bwd(stem, stem.g_y, nullptr, 0.f, s);
  if (on_grads_ready) on_grads_ready(0, 3);
  NB_CUDA_LAUNCH();
}

void TrainStep::update(cudaStream_t s) {
  Impl& I = *impl_;
  // Mixed precision: dynamic loss scaling as automatic mixed precision does it. A step whose
  // gradients hold an infinity or NaN (FP16 overflow) changes nothing and halves the scale; 2000
  // good steps in a row double it. All on the device: no synchronisation per step. FP32 keeps
  // its scale (1) and never skips (the flag stays 0). The check and the update are one launch
  // each over the chunk table of both parameter segments (the unscaling is in the update).
  if (half_) {
    NB_CUDA(cudaMemsetAsync(I.ls_flags, 0, sizeof(int), s));
    kernels::launch_mt_find_nonfinite(s, I.update_table, I.ls_flags);
  }
  kernels::launch_mt_sgd(s, I.update_table, cfg_.lr, cfg_.momentum, cfg_.weight_decay, I.scale, I.ls_flags);
  if (half_) kernels::launch_update_loss_scale(s, I.scale, I.ls_flags, I.ls_flags + 1, I.ls_flags + 2, kScaleGrowthInterval);
  mark(Kind::update, s);
  NB_CUDA_LAUNCH();
}

float TrainStep::loss_scale() {
  float v = 0;
  NB_CUDA(cudaStreamSynchronize(stream_));
  NB_CUDA(cudaMemcpy(&v, impl_->scale, 4, cudaMemcpyDeviceToHost));
  return v;
}

int TrainStep::skipped_steps() {
  int v = 0;
  NB_CUDA(cudaStreamSynchronize(stream_));
  NB_CUDA(cudaMemcpy(&v, impl_->ls_flags + 2, sizeof(int), cudaMemcpyDeviceToHost));
  return v;
}

float TrainStep::read_loss() {
  float l = 0;
  NB_CUDA(cudaStreamSynchronize(stream_));
  NB_CUDA(cudaMemcpy(&l, impl_->loss, 4, cudaMemcpyDeviceToHost));
  return l;
}

std::array<double, kKinds> TrainStep::profile(int steps) {
  Impl& I = *impl_;
  std::array<std::vector<double>, kKinds> per;
  // The step is queued behind a blocking kernel, as the step itself is measured: queued as it is
  // issued, the events also took the host's cost of issuing each call (at FP16 batch 64 on an
  // H200 the convolutions read 28.8 ms of a 13.8 ms step).
  StreamHold hold;
  for (int st = 0; st < steps; ++st) {
    I.profiling = true;
    I.n_events = 0;
    I.kinds.clear();
    if (I.events.empty()) I.events.emplace_back();
    hold.hold(stream_);
    I.events[I.n_events++].record(stream_);
    I.kinds.push_back(Kind::conv);  // placeholder for the start event
    try {
      step(stream_);
    } catch (...) {
      hold.release();
      I.profiling = false;
      throw;
    }
    hold.release();
    I.profiling = false;
    NB_CUDA(cudaStreamSynchronize(stream_));
    if (hold.timed_out()) profile_host_bound_ = true;
    std::array<double, kKinds> t{};
    for (size_t e = 1; e < I.n_events; ++e) t[size_t(I.kinds[e])] += I.events[e].seconds_since(I.events[e - 1]) * 1e3;
    for (int k = 0; k < kKinds; ++k) per[size_t(k)].push_back(t[size_t(k)]);
  }
  std::array<double, kKinds> out{};
  for (int k = 0; k < kKinds; ++k) out[size_t(k)] = compute_stats(per[size_t(k)]).median;
  return out;
}

}  // namespace nb::train
