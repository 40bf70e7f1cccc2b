// The training step's batch norms with their ReLU and residual add, on the path each layer takes
// (train_fusion.hpp): cuDNN's fused calls, the step's own kernels, or unfused.
#include <algorithm>

#include "train_step.hpp"
#include "train_step_impl.hpp"

namespace nb::train {

using nlohmann::json;
using namespace cudnn;

namespace {
constexpr double kEps = 1e-5, kFactor = 0.1;  // as frameworks: epsilon 1e-5, running averages' momentum 0.1

cudnnBatchNormOps_t fused_ops(BnAct a) {
  return a == BnAct::none ? CUDNN_BATCHNORM_OPS_BN
                          : a == BnAct::relu ? CUDNN_BATCHNORM_OPS_BN_ACTIVATION : CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION;
}
const char* ops_name(cudnnBatchNormOps_t o) {
  return o == CUDNN_BATCHNORM_OPS_BN ? "CUDNN_BATCHNORM_OPS_BN"
                                     : o == CUDNN_BATCHNORM_OPS_BN_ACTIVATION ? "CUDNN_BATCHNORM_OPS_BN_ACTIVATION"
                                                                              : "CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION";
}
}  // namespace

void TrainStep::bn_prepare(Layer& L, size_t& ws_bytes) {
  Impl& I = *impl_;
  const auto& c = *L.spec;
  L.shape = {cfg_.batch, c.k, int64_t(c.out_hw()) * c.out_hw(), cfg_.nhwc, half_};
  L.geo = kernels::bn_geometry(cfg_.nhwc, cfg_.batch, c.k, L.shape.hw, int(elem_), I.sms);
  // Every layer's own-kernel workspace is counted: a layer on the cudnn path falls back to the
  // kernels when cuDNN does not run it (bn_check_cudnn), after the workspace is allocated.
  ws_bytes = std::max(ws_bytes, kernels::bn_workspace_bytes(L.geo, c.k));
  L.bn_choice = choose_bn_path(cfg_.fusion, half_, cfg_.nhwc, c.k, L.act);
  if (L.bn_choice.path == BnPath::kernels) return;
  const cudnnBatchNormOps_t ops = L.bn_choice.path == BnPath::cudnn ? fused_ops(L.act) : CUDNN_BATCHNORM_OPS_BN;
  const cudnnActivationDescriptor_t act = ops == CUDNN_BATCHNORM_OPS_BN ? nullptr : I.relu;
  const cudnnTensorDescriptor_t yd = L.d->y, zd = ops == CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION ? yd : nullptr;
  // The workspace (shared with the convolutions) and the reserve space (per layer, kept from
  // forward to backward) for these ops.
  size_t fws = 0, bws = 0, reserve = 0;
  cudnnStatus_t st =
      cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(I.h, I.bn_mode, ops, yd, zd, yd, L.bn, act, &fws);
  if (st == CUDNN_STATUS_SUCCESS)
    st = cudnnGetBatchNormalizationBackwardExWorkspaceSize(I.h, I.bn_mode, ops, yd, yd, yd, zd, yd, L.bn, act, &bws);
  if (st == CUDNN_STATUS_SUCCESS)
    st = cudnnGetBatchNormalizationTrainingExReserveSpaceSize(I.h, I.bn_mode, ops, act, yd, &reserve);
  if (st != CUDNN_STATUS_SUCCESS && ops != CUDNN_BATCHNORM_OPS_BN) {
    L.bn_choice = fallback_after_not_supported(std::string("the workspace and reserve size queries with ") + ops_name(ops),
                                               cudnnGetErrorString(st));
    return;
  }
  check(st, "cudnnGetBatchNormalization{ForwardTrainingEx,BackwardEx}WorkspaceSize / TrainingExReserveSpaceSize",
        __FILE__, __LINE__);
  ws_bytes = std::max({ws_bytes, fws, bws});
  L.bn_reserve_bytes = reserve;
  if (reserve) {
    L.bn_reserve = arena_.alloc(reserve, "the batch-norm reserve space of " + c.name);
    bn_reserve_bytes_ += (reserve + 255) / 256 * 256;
  }
}

cudnnStatus_t TrainStep::bn_cudnn_fwd(Layer& L, cudnnBatchNormOps_t ops, const void* residual, void* out, cudaStream_t s) {
  Impl& I = *impl_;
  const float one = 1.f, zero = 0.f;
  const bool add = ops == CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION;
  NB_CUDNN(cudnnSetStream(I.h, s));
  return cudnnBatchNormalizationForwardTrainingEx(
      I.h, I.bn_mode, ops, &one, &zero, L.d->y, L.y, add ? L.d->y : nullptr, add ? residual : nullptr, L.d->y, out, L.bn,
      L.gamma, L.beta, kFactor, L.run_mean, L.run_var, kEps, L.save_mean, L.save_inv,
      ops == CUDNN_BATCHNORM_OPS_BN ? nullptr : I.relu, I.ws, ws_bytes_, L.bn_reserve, L.bn_reserve_bytes);
}

// dgamma and dbeta overwritten (betaParamDiff 0), dx overwritten (betaDataDiff 0). The fused ops
// read the forward's output (L.out) for the ReLU's gradient and write dz, the gradient at the
// add's other input.
cudnnStatus_t TrainStep::bn_cudnn_bwd(Layer& L, cudnnBatchNormOps_t ops, const void* dy, void* dx, void* dz, cudaStream_t s) {
  Impl& I = *impl_;
  const float one = 1.f, zero = 0.f;
  const bool fused = ops != CUDNN_BATCHNORM_OPS_BN, add = ops == CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION;
  NB_CUDNN(cudnnSetStream(I.h, s));
  return cudnnBatchNormalizationBackwardEx(
      I.h, I.bn_mode, ops, &one, &zero, &one, &zero, L.d->y, L.y, fused ? L.d->y : nullptr, fused ? L.out : nullptr,
      L.d->y, dy, add ? L.d->y : nullptr, add ? dz : nullptr, L.d->y, dx, L.bn, L.gamma, L.beta, L.dgamma, L.dbeta, kEps,
      L.save_mean, L.save_inv, fused ? I.relu : nullptr, I.ws, ws_bytes_, L.bn_reserve, L.bn_reserve_bytes);
}

void TrainStep::bn_check_cudnn(Layer& L, const void* residual) {
  if (L.bn_choice.path != BnPath::cudnn || L.act == BnAct::none) return;
  Impl& I = *impl_;
  const cudnnBatchNormOps_t ops = fused_ops(L.act);
  // Runs on the real buffers before the weights are initialised (their contents do not matter);
  // the scratch buffers stand for dy, dx and dz.
  cudnnStatus_t st = bn_cudnn_fwd(L, ops, residual, L.out, stream_);
  const char* call = "cudnnBatchNormalizationForwardTrainingEx";
  if (st == CUDNN_STATUS_SUCCESS) {
    st = bn_cudnn_bwd(L, ops, I.g[0], I.g[1], I.g[2], stream_);
    call = "cudnnBatchNormalizationBackwardEx";
  }
  // Any failure falls back (the reason names the status; the GPU test allows NOT_SUPPORTED only):
  // a fused call that does not run must not cost the step.
  if (st != CUDNN_STATUS_SUCCESS) {
    (void)cudaGetLastError();
    L.bn_choice = fallback_after_not_supported(std::string(call) + " with " + ops_name(ops), cudnnGetErrorString(st));
    return;
  }
  NB_CUDA(cudaStreamSynchronize(stream_));
}

void TrainStep::bn_fwd(Layer& L, const void* residual, cudaStream_t s) {
  Impl& I = *impl_;
  if (L.bn_choice.path == BnPath::kernels) {
    kernels::BnForward a;
    a.x = L.y;
    a.residual = L.act == BnAct::add_relu ? residual : nullptr;
    a.y = L.out;
    a.relu = L.act != BnAct::none;
    a.gamma = L.gamma, a.beta = L.beta;
    a.running_mean = L.run_mean, a.running_var = L.run_var, a.save_mean = L.save_mean, a.save_inv_std = L.save_inv;
    a.factor = kFactor, a.eps = kEps, a.ws = I.ws;
    kernels::launch_bn_forward(s, L.shape, L.geo, a);
    NB_CUDA_LAUNCH();
  } else if (L.bn_choice.path == BnPath::cudnn) {
    check(bn_cudnn_fwd(L, fused_ops(L.act), residual, L.out, s), "cudnnBatchNormalizationForwardTrainingEx (fused)",
          __FILE__, __LINE__);
  } else {
    // Unfused: batch norm, then the activation as its own pass (the add's into a scratch buffer).
    void* bn_out = L.act == BnAct::add_relu ? I.g[0] : L.out;
    check(bn_cudnn_fwd(L, CUDNN_BATCHNORM_OPS_BN, nullptr, bn_out, s), "cudnnBatchNormalizationForwardTrainingEx",
          __FILE__, __LINE__);
    mark(Kind::bn, s);
    if (L.act == BnAct::none) return;
    if (L.act == BnAct::relu) kernels::launch_relu(s, L.out, L.out, L.d->y_elems(), half_);
    else kernels::launch_add_relu(s, bn_out, residual, L.out, L.d->y_elems(), half_);
    NB_CUDA_LAUNCH();
    mark(Kind::elementwise, s);
    return;
  }
  mark(Kind::bn, s);
}

void* TrainStep::bn_bwd(Layer& L, void* dy, void* dx, void* dz, cudaStream_t s) {
  Impl& I = *impl_;
  const bool add = L.act == BnAct::add_relu;
  if (L.bn_choice.path == BnPath::kernels) {
    kernels::BnBackward a;
    a.x = L.y;
    a.y = L.act == BnAct::none ? nullptr : L.out;
    a.dy = dy, a.dx = dx, a.dz = add ? dz : nullptr;
    a.gamma = L.gamma, a.save_mean = L.save_mean, a.save_inv_std = L.save_inv;
    a.dgamma = L.dgamma, a.dbeta = L.dbeta, a.ws = I.ws;
    kernels::launch_bn_backward(s, L.shape, L.geo, a);
    NB_CUDA_LAUNCH();
    mark(Kind::bn, s);
    return add ? dz : nullptr;
  }
  if (L.bn_choice.path == BnPath::cudnn) {
    check(bn_cudnn_bwd(L, fused_ops(L.act), dy, dx, dz, s), "cudnnBatchNormalizationBackwardEx (fused)", __FILE__, __LINE__);
    mark(Kind::bn, s);
    return add ? dz : nullptr;
  }
  // Unfused: the ReLU's gradient in place (for the add: the gradient at the add, which is also
  // the residual branch's), then batch norm.
  if (L.act != BnAct::none) {
    kernels::launch_relu_backward(s, L.out, dy, dy, L.d->y_elems(), half_);
    NB_CUDA_LAUNCH();
    mark(Kind::elementwise, s);
  }
  check(bn_cudnn_bwd(L, CUDNN_BATCHNORM_OPS_BN, dy, dx, nullptr, s), "cudnnBatchNormalizationBackwardEx", __FILE__,
        __LINE__);
  mark(Kind::bn, s);
  return add ? dy : nullptr;
}

json TrainStep::fusion_details() const {
  std::vector<BnLayerPath> v;
  for (const auto& L : impl_->layers) v.push_back({L.act, L.bn_choice});
  json d = train::fusion_details(cfg_.fusion, v);
  d["max_pool"] = impl_->pool_arg ? "kernels" : "cudnn";  // the stem's max pool, forward and backward
  return d;
}

}  // namespace nb::train
