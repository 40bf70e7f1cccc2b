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

void* Arena::alloc(size_t bytes, const std::string& what) {
  bytes = (bytes + 255) / 256 * 256;
  try {
    bufs_.emplace_back(bytes);
  } catch (const CudaError& e) {
    if (!e.out_of_memory()) throw;
    (void)cudaGetLastError();
    size_t free_b = 0, total_b = 0;
    (void)cudaMemGetInfo(&free_b, &total_b);
    throw OutOfMemory{what, bytes, free_b};
  }
  current_ += bytes;
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

void* TrainStep::P(size_t elems, const std::string& what) { return arena_.alloc(elems * elem_, what); }

void TrainStep::setup() {
  Impl& I = *impl_;
  const int64_t N = cfg_.batch;
  const auto& convs = net_.convs;
  const cudnnTensorFormat_t fmt = cfg_.nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  // Parameter layout: each tensor at a 64-element boundary.
  auto aligned = [](size_t n) { return (n + 63) / 64 * 64; };
  std::vector<size_t> bn_off(convs.size()), w_off(convs.size());
  for (size_t i = 0; i < convs.size(); ++i) {
    w_off[i] = I.n_a;
    params_.push_back({convs[i].name + ".weight", false, I.n_a, size_t(convs[i].weights())});
    I.n_a += aligned(size_t(convs[i].weights()));
    bn_off[i] = I.n_b;
    params_.push_back({convs[i].name + ".bn.weight", true, I.n_b, size_t(convs[i].k)});
    params_.push_back({convs[i].name + ".bn.bias", true, I.n_b + size_t(convs[i].k), size_t(convs[i].k)});
    I.n_b += aligned(2 * size_t(convs[i].k));
  }
  I.fc_w_off = I.n_a;
  params_.push_back({"fc.weight", false, I.n_a, size_t(net_.fc_in) * net_.classes});
  I.n_a += aligned(size_t(net_.fc_in) * net_.classes);
  I.fc_b_off = I.n_b;
  params_.push_back({"fc.bias", true, I.n_b, size_t(net_.classes)});
  I.n_b += aligned(size_t(net_.classes));

  I.master_a = static_cast<float*>(arena_.alloc(I.n_a * 4, "the master weights"));
  I.mom_a = static_cast<float*>(arena_.alloc(I.n_a * 4, "the momentum"));
  I.grad_a = P(I.n_a, "the weight gradients");
  I.compute_a = half_ ? P(I.n_a, "the FP16 compute weights") : I.master_a;
  I.master_b = static_cast<float*>(arena_.alloc(I.n_b * 4, "the batch-norm and bias parameters"));
  I.mom_b = static_cast<float*>(arena_.alloc(I.n_b * 4, "the momentum"));
  I.grad_b = static_cast<float*>(arena_.alloc(I.n_b * 4, "the batch-norm and bias gradients"));

  // Activations kept for backward, and the gradient/scratch buffers.
  const int64_t max_act = resnet50::max_activation_elems_per_image(net_) * N;
  for (auto& gb : I.g) gb = P(size_t(max_act), "a gradient buffer");
  I.image = P(size_t(convs[0].in_elems() * N), "the images");
  I.layers.resize(convs.size());
  size_t bn_ws = 0;
  // act relu: the batch norm + ReLU output is kept in L.z (the next convolution's input and the
  // ReLU's mask); else `out` is where the batch norm's output goes (the block output, or scratch).
  auto make_layer = [&](size_t i, void* x, BnAct act, void* out) {
    Layer& L = I.layers[i];
    const auto& c = convs[i];
    L.spec = &c;
    ConvShape sh;
    sh.n = N;
    sh.c = c.c;
    sh.h = sh.w = c.hw;
    sh.k = c.k;
    sh.r = sh.s = c.r;
    sh.stride = c.stride;
    sh.pad = c.pad;
    L.d = std::make_unique<ConvDesc>(sh, *cfg_.prec, cfg_.nhwc);
    L.x = x;
    L.y = P(L.d->y_elems(), "the output of " + c.name);
    L.act = act;
    L.z = act == BnAct::relu ? P(L.d->y_elems(), "the batch-norm output of " + c.name) : nullptr;
    L.out = L.z ? L.z : out;
    L.w_off = w_off[i];
    L.w = static_cast<char*>(I.compute_a) + L.w_off * elem_;
    L.dw = static_cast<char*>(I.grad_a) + L.w_off * elem_;
    L.gamma = I.master_b + bn_off[i];
    L.beta = L.gamma + c.k;
    L.dgamma = I.grad_b + bn_off[i];
    L.dbeta = L.dgamma + c.k;
    L.run_mean = static_cast<float*>(arena_.alloc(size_t(c.k) * 16, "the batch-norm statistics"));
    L.run_var = L.run_mean + c.k;
    L.save_mean = L.run_var + c.k;
    L.save_inv = L.save_mean + c.k;
    NB_CUDNN(cudnnCreateTensorDescriptor(&L.bn));
    NB_CUDNN(cudnnDeriveBNTensorDescriptor(L.bn, L.d->y, I.bn_mode));
    bn_prepare(L, bn_ws);
  };
  make_layer(0, I.image, BnAct::relu, nullptr);
  I.layers[0].data_grad = false;
  const int phw = net_.pool_out_hw;
  I.pool_out = P(size_t(N) * convs[0].k * phw * phw, "the max pool output");
  // The fused paths pool with the step's own kernels (16 bytes a thread, the argmax kept for
  // backward: one byte an output); the unfused step keeps cuDNN's pooling, as before.
  I.pool_dims = {int(N), convs[0].k, net_.pool_hw, net_.pool_hw, phw, phw, 3, 2, 1};
  if (cfg_.fusion != Fusion::off)
    I.pool_arg = static_cast<uint8_t*>(arena_.alloc(size_t(N) * convs[0].k * phw * phw, "the max pool's argmax"));
  NB_CUDNN(cudnnCreatePoolingDescriptor(&I.pool));
  NB_CUDNN(cudnnSetPooling2dDescriptor(I.pool, CUDNN_POOLING_MAX, CUDNN_NOT_PROPAGATE_NAN, 3, 3, 1, 1, 2, 2));
  NB_CUDNN(cudnnCreateTensorDescriptor(&I.pool_desc));
  NB_CUDNN(cudnnSetTensor4dDescriptor(I.pool_desc, fmt, cfg_.prec->data, int(N), convs[0].k, phw, phw));
  void* x = I.pool_out;
  for (const auto& b : net_.blocks) {
    make_layer(size_t(b.conv1), x, BnAct::relu, nullptr);
    make_layer(size_t(b.conv2), I.layers[size_t(b.conv1)].z, BnAct::relu, nullptr);
    void* bo = P(size_t(convs[size_t(b.conv3)].out_elems() * N), "a block output");
    make_layer(size_t(b.conv3), I.layers[size_t(b.conv2)].z, BnAct::add_relu, bo);
    if (b.down >= 0) make_layer(size_t(b.down), x, BnAct::none, I.g[1]);  // transient: the add's other input
    x = bo;
    I.block_out.push_back(x);
  }
  I.pooled = P(size_t(N) * net_.fc_in, "the pooled features");
  I.logits = static_cast<float*>(arena_.alloc(size_t(N) * net_.classes * 4, "the logits"));
  I.dlogits = P(size_t(N) * net_.classes, "the logit gradients");
  I.labels = static_cast<int32_t*>(arena_.alloc(size_t(N) * 4, "the labels"));
  I.loss = static_cast<float*>(arena_.alloc(4, "the loss"));
  I.scale = static_cast<float*>(arena_.alloc(4, "the loss scale"));
  I.ls_flags = static_cast<int*>(arena_.alloc(3 * sizeof(int), "the loss-scaling flags"));

  // Algorithm choice (operands are overwritten by the trials: weights are initialised after).
  {
    DeviceBuffer find_ws;
    try {
      find_ws = DeviceBuffer(find_workspace_limit(libs_));
    } catch (const CudaError& e) {
      if (!e.out_of_memory()) throw;
      (void)cudaGetLastError();
      throw OutOfMemory{"the algorithm search workspace", find_workspace_limit(libs_), 0};
    }
    for (auto& L : I.layers) {
      ConvBuffers b{L.x, L.w, L.y, I.g[0], I.g[1], L.dw};
      L.fwd = choose_algo(libs_, *L.d, Pass::fwd, b, find_ws, stream_, gpu_model_);
      L.bwd_filter = choose_algo(libs_, *L.d, Pass::bwd_filter, b, find_ws, stream_, gpu_model_);
      if (L.data_grad) L.bwd_data = choose_algo(libs_, *L.d, Pass::bwd_data, b, find_ws, stream_, gpu_model_);
      ws_bytes_ = std::max({ws_bytes_, L.fwd.workspace, L.bwd_filter.workspace, L.data_grad ? L.bwd_data.workspace : 0});
    }
  }
  ws_bytes_ = std::max(ws_bytes_, bn_ws);
  I.ws = ws_bytes_ ? arena_.alloc(ws_bytes_, "the convolution and batch-norm workspace") : nullptr;
  // cuDNN's fused batch norm, asked once per layer on its buffers (before the initial values).
  bn_check_cudnn(I.layers[0], nullptr);
  {
    const void* bx = I.pool_out;
    for (size_t bi = 0; bi < net_.blocks.size(); ++bi) {
      const auto& b = net_.blocks[bi];
      bn_check_cudnn(I.layers[size_t(b.conv1)], nullptr);
      bn_check_cudnn(I.layers[size_t(b.conv2)], nullptr);
      bn_check_cudnn(I.layers[size_t(b.conv3)], b.down >= 0 ? I.g[1] : bx);
      bx = I.block_out[bi];
    }
  }
  make_update_table();
  // cuBLAS's workspace from the arena: counted in the peak, and no allocation by cuBLAS while the
  // step is captured into a CUDA graph.
  I.cublas_ws = arena_.alloc(kCublasWorkspace, "the cuBLAS workspace");
  NB_CUBLAS(cublasSetWorkspace(I.cb, I.cublas_ws, kCublasWorkspace));

  // Initial values: Kaiming-uniform convolutions, FC uniform 1/sqrt(fan_in), gamma 1, beta 0.
  cudaStream_t s = stream_;
  for (size_t i = 0; i < convs.size(); ++i) {
    const auto& c = convs[i];
    kernels::launch_init_uniform(s, I.master_a + I.layers[i].w_off, size_t(c.weights()),
                                 std::sqrt(6.f / float(c.c * c.r * c.r)), 0x5EED0 + i);
    kernels::launch_fill_value(s, I.layers[i].gamma, size_t(c.k), 1.f);
    kernels::launch_fill_value(s, I.layers[i].beta, size_t(c.k), 0.f);
    kernels::launch_fill_value(s, I.layers[i].run_mean, size_t(c.k), 0.f);
    kernels::launch_fill_value(s, I.layers[i].run_var, size_t(c.k), 1.f);
  }
  kernels::launch_init_uniform(s, I.master_a + I.fc_w_off, size_t(net_.fc_in) * net_.classes,
                               1.f / std::sqrt(float(net_.fc_in)), 0xFC);
  kernels::launch_fill_value(s, I.master_b + I.fc_b_off, size_t(net_.classes), 0.f);
  if (half_) kernels::launch_cast_from_float(s, I.master_a, I.compute_a, I.n_a, true);
  NB_CUDA(cudaMemsetAsync(I.mom_a, 0, I.n_a * 4, s));
  NB_CUDA(cudaMemsetAsync(I.mom_b, 0, I.n_b * 4, s));
  kernels::launch_fill_random(s, I.image, size_t(convs[0].in_elems() * N), cfg_.prec->fill, 0x1A6E + cfg_.data_seed);
  kernels::launch_labels(s, I.labels, int(N), net_.classes, 0x1ABE1 + cfg_.data_seed);
  kernels::launch_fill_value(s, I.scale, 1, cfg_.loss_scale);
  NB_CUDA(cudaMemsetAsync(I.ls_flags, 0, 3 * sizeof(int), s));
  NB_CUDA_LAUNCH();
  NB_CUDA(cudaStreamSynchronize(s));
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
  run_pass(impl_->h, *L.d, Pass::fwd, L.fwd, b, impl_->ws, s);
  mark(Kind::conv, s);
}

// Weight gradient from dy; input gradient into dx (out = conv_bwd_data + beta * out) unless it is
// the first convolution.
void TrainStep::conv_bwd(Layer& L, const void* dy, void* dx, float beta, cudaStream_t s) {
  ConvBuffers b{L.x, L.w, L.y, const_cast<void*>(dy), dx, L.dw};
  run_pass(impl_->h, *L.d, Pass::bwd_filter, L.bwd_filter, b, impl_->ws, s);
  if (L.data_grad) run_pass(impl_->h, *L.d, Pass::bwd_data, L.bwd_data, b, impl_->ws, s, 1.f, beta);
  mark(Kind::conv, s);
}

void TrainStep::forward(cudaStream_t s) {
  Impl& I = *impl_;
  const float one = 1.f, zero = 0.f;
  const int N = int(cfg_.batch);
  NB_CUDA(cudaMemsetAsync(I.loss, 0, 4, s));
  Layer& stem = I.layers[0];
  conv_fwd(stem, s);
  bn_fwd(stem, nullptr, s);
  if (I.pool_arg) {
    kernels::launch_maxpool(s, stem.z, I.pool_out, I.pool_arg, I.pool_dims, cfg_.nhwc, half_);
  } else {
    NB_CUDNN(cudnnSetStream(I.h, s));
    NB_CUDNN(cudnnPoolingForward(I.h, I.pool, &one, stem.d->y, stem.z, &zero, I.pool_desc, I.pool_out));
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
      bn_fwd(d, nullptr, s);  // into scratch g[1]
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
  // Three gradient buffers: P the gradient flowing in (at a block's output), Q and S the others.
  void *P = I.g[0], *Q = I.g[1], *S = I.g[2];
  // FC: bias gradient, weight gradient dW = dL^T pooled, input gradient dP = dL W (into Q).
  kernels::launch_bias_grad(s, I.dlogits, I.grad_b + I.fc_b_off, N, net_.classes, half_);
  NB_CUBLAS(cublasSetStream(I.cb, s));
  NB_CUBLAS(cublasGemmEx(I.cb, CUBLAS_OP_N, CUBLAS_OP_T, net_.fc_in, net_.classes, N, &one, I.pooled, dt, net_.fc_in,
                         I.dlogits, dt, net_.classes, &zero, fcdw, dt, net_.fc_in, ct, CUBLAS_GEMM_DEFAULT));
  NB_CUBLAS(cublasGemmEx(I.cb, CUBLAS_OP_N, CUBLAS_OP_N, net_.fc_in, N, net_.classes, &one, fcw, dt, net_.fc_in,
                         I.dlogits, dt, net_.classes, &zero, Q, dt, net_.fc_in, ct, CUBLAS_GEMM_DEFAULT));
  mark(Kind::fc, s);
  const size_t n_conv = net_.convs.size();
  if (on_grads_ready) on_grads_ready(3 * n_conv, params_.size());  // fc.weight, fc.bias
  const int last_hw = net_.stage_out_hw(4);
  kernels::launch_avgpool_backward(s, Q, P, N, net_.fc_in, last_hw * last_hw, cfg_.nhwc, half_);
  mark(Kind::pool, s);
  for (size_t bi = net_.blocks.size(); bi-- > 0;) {
    const auto& b = net_.blocks[bi];
    Layer &c1 = I.layers[size_t(b.conv1)], &c2 = I.layers[size_t(b.conv2)], &c3 = I.layers[size_t(b.conv3)];
    // conv3's batch norm with the add and ReLU: X the gradient at conv3's output, R the gradient
    // at the add's other input (the shortcut's, dz, on every path); P is free after it.
    void* X = Q;
    void* R = S;
    bn_bwd(c3, P, X, R, s);
    void* F = P;
    conv_bwd(c3, X, F, 0.f, s);
    bn_bwd(c2, F, X, nullptr, s);
    conv_bwd(c2, X, F, 0.f, s);
    bn_bwd(c1, F, X, nullptr, s);  // X: the gradient at conv1's output
    if (b.down >= 0) {
      Layer& d = I.layers[size_t(b.down)];
      bn_bwd(d, R, F, nullptr, s);
      conv_bwd(d, F, R, 0.f, s);  // R was the projection's batch norm's input gradient: consumed
    }
    conv_bwd(c1, X, R, 1.f, s);  // the block input's gradient: shortcut + conv1's
    // The block's convolutions are consecutive (conv1, conv2, conv3[, downsample]): 3 params each.
    if (on_grads_ready) on_grads_ready(3 * size_t(b.conv1), 3 * size_t(std::max(b.conv3, b.down) + 1));
    P = R, Q = X, S = F;
  }
  Layer& stem = I.layers[0];
  if (I.pool_arg) {
    kernels::launch_maxpool_backward(s, P, I.pool_arg, Q, I.pool_dims, cfg_.nhwc, half_);
  } else {
    NB_CUDNN(cudnnSetStream(I.h, s));
    NB_CUDNN(cudnnPoolingBackward(I.h, I.pool, &one, I.pool_desc, I.pool_out, I.pool_desc, P, stem.d->y, stem.z, &zero,
                                  stem.d->y, Q));
  }
  mark(Kind::pool, s);
  bn_bwd(stem, Q, S, nullptr, s);
  conv_bwd(stem, S, nullptr, 0.f, s);
  if (on_grads_ready) on_grads_ready(0, 3);
  NB_CUDA_LAUNCH();
}

void TrainStep::make_update_table() {
  Impl& I = *impl_;
  kernels::MtTable& t = I.update_table;
  t.t[0] = {I.master_a, I.mom_a, I.grad_a, half_, half_ ? I.compute_a : nullptr, I.n_a};
  t.t[1] = {I.master_b, I.mom_b, I.grad_b, false, nullptr, I.n_b};
  t.tensors = 2;
  const auto chunks = kernels::mt_chunks({I.n_a, I.n_b});
  void* dev = arena_.alloc(chunks.size() * sizeof(kernels::MtChunk), "the update's chunk table");
  NB_CUDA(cudaMemcpy(dev, chunks.data(), chunks.size() * sizeof(kernels::MtChunk), cudaMemcpyHostToDevice));
  t.chunks = dev;
  t.n_chunks = unsigned(chunks.size());
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
