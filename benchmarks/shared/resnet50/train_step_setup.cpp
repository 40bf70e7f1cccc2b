// The training step's setup (see train_step.hpp): parameters, layers with their batch-norm paths,
// the algorithm choice, the memory plan (step_memory.hpp) and the initial values.
#include <algorithm>
#include <cmath>

#include "base/cublas_check.hpp"
#include "kernels/train/train_kernels.cuh"
#include "step_memory.hpp"
#include "train_bn_layer.hpp"
#include "train_step.hpp"
#include "train_step_impl.hpp"

namespace nb::train {

using nlohmann::json;
using namespace cudnn;

namespace {

}  // namespace

void TrainStep::setup() {
  setup_params();
  setup_layers();
  plan_memory();
  Impl& I = *impl_;
  // cuDNN's fused batch norm, asked once per layer on its buffers (before the initial values).
  bn_check_cudnn(I.layers[0], nullptr);
  for (const auto& b : net_.blocks) {
    bn_check_cudnn(I.layers[size_t(b.conv1)], nullptr);
    bn_check_cudnn(I.layers[size_t(b.conv2)], nullptr);
    bn_check_cudnn(I.layers[size_t(b.conv3)],
                   b.down >= 0 ? I.layers[size_t(b.down)].out : I.layers[size_t(b.conv1)].x);
  }
  make_update_table();
  // cuBLAS's workspace from the arena: counted in the peak, and no allocation by cuBLAS while the
  // step is captured into a CUDA graph.
  I.cublas_ws = arena_.alloc(kCublasWorkspace, "the cuBLAS workspace", "cublas_workspace");
  NB_CUBLAS(cublasSetWorkspace(I.cb, I.cublas_ws, kCublasWorkspace));
  init_values();
}

// Parameter layout: each tensor at a 64-element boundary; the FP32 master weights, momentum,
// gradients (storage type) and, for FP16, the compute copy; batch norm's and the FC bias in FP32.
void TrainStep::setup_params() {
  Impl& I = *impl_;
  const auto& convs = net_.convs;
  auto aligned = [](size_t n) { return (n + 63) / 64 * 64; };
  I.layers.resize(convs.size());
  for (size_t i = 0; i < convs.size(); ++i) {
    I.layers[i].w_off = I.n_a;
    params_.push_back({convs[i].name + ".weight", false, I.n_a, size_t(convs[i].weights())});
    I.n_a += aligned(size_t(convs[i].weights()));
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
  const std::string k = "parameters";
  I.master_a = static_cast<float*>(arena_.alloc(I.n_a * 4, "the master weights", k));
  I.mom_a = static_cast<float*>(arena_.alloc(I.n_a * 4, "the momentum", k));
  I.grad_a = arena_.alloc(I.n_a * elem_, "the weight gradients", k);
  I.compute_a = half_ ? arena_.alloc(I.n_a * elem_, "the FP16 compute weights", k) : I.master_a;
  I.master_b = static_cast<float*>(arena_.alloc(I.n_b * 4, "the batch-norm and bias parameters", k));
  I.mom_b = static_cast<float*>(arena_.alloc(I.n_b * 4, "the momentum", k));
  I.grad_b = static_cast<float*>(arena_.alloc(I.n_b * 4, "the batch-norm and bias gradients", k));
}

// The layers' descriptors, their batch norms' paths and needs and statistics, the pooling, and the
// buffers that live from step to step: images, logits, labels, the loss and its scaling state.
void TrainStep::setup_layers() {
  Impl& I = *impl_;
  const int64_t N = cfg_.batch;
  const auto& convs = net_.convs;
  std::vector<size_t> bn_off(convs.size());
  for (size_t i = 0; i < convs.size(); ++i) bn_off[i] = params_[3 * i + 1].offset;
  for (size_t i = 0; i < convs.size(); ++i) {
    Layer& L = I.layers[i];
    const auto& c = convs[i];
    L.spec = &c;
    ConvShape sh;
    sh.n = N, sh.c = c.c, sh.h = sh.w = c.hw, sh.k = c.k, sh.r = sh.s = c.r, sh.stride = c.stride, sh.pad = c.pad;
    L.d = std::make_unique<ConvDesc>(sh, *cfg_.prec, cfg_.nhwc);
    L.w = static_cast<char*>(I.compute_a) + L.w_off * elem_;
    L.dw = static_cast<char*>(I.grad_a) + L.w_off * elem_;
    L.gamma = I.master_b + bn_off[i], L.beta = L.gamma + c.k;
    L.dgamma = I.grad_b + bn_off[i], L.dbeta = L.dgamma + c.k;
    L.run_mean = static_cast<float*>(arena_.alloc(size_t(c.k) * 16, "the batch-norm statistics", "statistics"));
    L.run_var = L.run_mean + c.k, L.save_mean = L.run_var + c.k, L.save_inv = L.save_mean + c.k;
    NB_CUDNN(cudnnCreateTensorDescriptor(&L.bn));
    NB_CUDNN(cudnnDeriveBNTensorDescriptor(L.bn, L.d->y, I.bn_mode));
  }
  // What follows each batch norm: a ReLU (the stem, conv1, conv2), the add and a ReLU (conv3), nothing (the projection).
  I.layers[0].data_grad = false;
  for (const auto& b : net_.blocks) {
    I.layers[size_t(b.conv3)].act = BnAct::add_relu;
    if (b.down >= 0) I.layers[size_t(b.down)].act = BnAct::none;
  }
  for (auto& L : I.layers) bn_prepare(L);
  const int phw = net_.pool_out_hw;
  I.pool_dims = {int(N), convs[0].k, net_.pool_hw, net_.pool_hw, phw, phw, 3, 2, 1};
  NB_CUDNN(cudnnCreatePoolingDescriptor(&I.pool));
  NB_CUDNN(cudnnSetPooling2dDescriptor(I.pool, CUDNN_POOLING_MAX, CUDNN_NOT_PROPAGATE_NAN, 3, 3, 1, 1, 2, 2));
  NB_CUDNN(cudnnCreateTensorDescriptor(&I.pool_desc));
  NB_CUDNN(cudnnSetTensor4dDescriptor(I.pool_desc, cfg_.nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, cfg_.prec->data,
                                      int(N), convs[0].k, phw, phw));
  I.image = arena_.alloc(size_t(convs[0].in_elems() * N) * elem_, "the images", "images");
  I.logits = static_cast<float*>(arena_.alloc(size_t(N) * net_.classes * 4, "the logits"));
  I.dlogits = arena_.alloc(size_t(N) * net_.classes * elem_, "the logit gradients");
  I.labels = static_cast<int32_t*>(arena_.alloc(size_t(N) * 4, "the labels"));
  I.loss = static_cast<float*>(arena_.alloc(4, "the loss"));
  I.scale = static_cast<float*>(arena_.alloc(4, "the loss scale"));
  I.ls_flags = static_cast<int*>(arena_.alloc(3 * sizeof(int), "the loss-scaling flags"));
}

// The region of activations, gradients, workspaces and scratch (step_memory.hpp). The
// convolutions' workspaces follow from their algorithms, which are chosen by running them: first
// a region planned without those workspaces (outside the arena, freed after), the algorithms
// chosen on its buffers, then the region with them.
void TrainStep::plan_memory() {
  Impl& I = *impl_;
  resnet50::StepPlanInput in;
  in.batch = cfg_.batch;
  in.elem = int(elem_);
  in.own_max_pool = cfg_.fusion != Fusion::off;  // the fused paths pool with the step's own kernels
  in.share = cfg_.share_memory;
  in.convert_images = cfg_.images_nchw;
  for (const auto& L : I.layers)
    in.layers.push_back({0, 0, L.bn_need.fwd_ws, L.bn_need.bwd_ws, L.bn_need.reserve, L.bn_choice.path == BnPath::unfused,
                         L.relu_from_x});
  {
    const resnet50::StepPlan first = resnet50::plan_step(net_, in);
    DeviceBuffer region = device_or_oom(first.total, "the step's activations and gradients (to choose the algorithms on)");
    bind(first, region.get());
    choose_algorithms();
  }
  for (size_t i = 0; i < I.layers.size(); ++i) {
    const Layer& L = I.layers[i];
    in.layers[i].ws_conv_fwd = L.fwd.workspace;
    in.layers[i].ws_conv_bwd = std::max(L.bwd_filter.workspace, L.data_grad ? L.bwd_data.workspace : 0);
  }
  I.plan = resnet50::plan_step(net_, in);
  const std::string conflict = resnet50::plan_conflict(I.plan);
  if (!conflict.empty()) throw Error("the training step's memory plan is wrong: " + conflict);
  I.region = arena_.alloc(I.plan.total, "the step's activations, gradients and workspaces", "region");
  bind(I.plan, I.region);
}

// Algorithm choice (operands are overwritten by the trials: weights are initialised after). Each
// pass runs on the buffers the step gives it.
void TrainStep::choose_algorithms() {
  Impl& I = *impl_;
  DeviceBuffer find_ws = device_or_oom(find_workspace_limit(libs_), "the algorithm search workspace");
  for (auto& L : I.layers) {
    ConvBuffers b{L.x, L.w, L.y, L.g_y, L.g_in, L.dw};
    L.fwd = choose_algo(libs_, *L.d, Pass::fwd, b, find_ws, stream_, gpu_model_);
    L.bwd_filter = choose_algo(libs_, *L.d, Pass::bwd_filter, b, find_ws, stream_, gpu_model_);
    if (L.data_grad) L.bwd_data = choose_algo(libs_, *L.d, Pass::bwd_data, b, find_ws, stream_, gpu_model_);
  }
}

void TrainStep::bind(const resnet50::StepPlan& plan, void* base) {
  Impl& I = *impl_;
  auto at = [&](int id) -> void* { return id < 0 ? nullptr : static_cast<char*>(base) + plan.buffers[size_t(id)].offset; };
  for (size_t i = 0; i < I.layers.size(); ++i) {
    Layer& L = I.layers[i];
    const resnet50::LayerBufs& p = plan.layers[i];
    L.x = i == 0 && !cfg_.images_nchw ? I.image : at(p.x);  // the stem: the images or their NHWC copy
    L.y = at(p.y), L.out = at(p.out), L.bn_reserve = at(p.reserve), L.add_scratch = at(p.add_scratch);
    L.g_out = at(p.g_out), L.g_y = at(p.g_y), L.g_in = at(p.g_in), L.g_res = at(p.g_res);
    L.ws_conv_fwd = at(p.ws_conv_fwd), L.ws_bn_fwd = at(p.ws_bn_fwd), L.ws_bn_bwd = at(p.ws_bn_bwd);
    L.ws_conv_bwd = at(p.ws_conv_bwd);
  }
  I.block_out.clear();
  for (int b : plan.block_out) I.block_out.push_back(at(b));
  I.pool_out = at(plan.pool_out);
  I.pool_arg = static_cast<uint8_t*>(at(plan.pool_argmax));
  I.pooled = at(plan.pooled), I.g_pooled = at(plan.g_pooled), I.g_last = at(plan.g_last);
}

// Initial values: Kaiming-uniform convolutions, FC uniform 1/sqrt(fan_in), gamma 1, beta 0.
void TrainStep::init_values() {
  Impl& I = *impl_;
  const auto& convs = net_.convs;
  const int64_t N = cfg_.batch;
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

size_t TrainStep::workspace_bytes() const {
  const Impl& I = *impl_;
  size_t largest = 0, reserves = 0;
  for (const auto& b : I.plan.buffers) {
    if (b.kind == resnet50::BufKind::workspace) largest = std::max(largest, b.bytes);
    if (b.kind == resnet50::BufKind::reserve) reserves += b.bytes;
  }
  return largest + reserves + kCublasWorkspace;
}

json TrainStep::memory_details() const {
  const resnet50::StepPlan& p = impl_->plan;
  json at_peak = json::object(), apart = json::object();
  for (int k = 0; k < resnet50::kBufKinds; ++k) {
    at_peak[resnet50::buf_kind_name(resnet50::BufKind(k))] = p.at_peak[size_t(k)];
    apart[resnet50::buf_kind_name(resnet50::BufKind(k))] = p.apart[size_t(k)];
  }
  size_t total = 0;
  for (const auto& [k, v] : arena_.by_kind()) total += v;
  return {{"total", total},
          {"by_kind", arena_.by_kind()},
          {"region", {{"total", p.total},
                      {"live_peak", p.live_peak},
                      {"peak_at", p.ops.empty() ? "" : p.ops[size_t(p.peak_op)]},
                      {"at_peak", at_peak},
                      {"apart", apart},
                      {"buffers", p.buffers.size()}}}};
}

}  // namespace nb::train
