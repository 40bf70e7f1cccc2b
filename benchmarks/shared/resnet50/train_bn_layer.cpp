// One batch norm of the training step on its path (see train_bn_layer.hpp).
#include "train_bn_layer.hpp"

#include <algorithm>

#include "kernels/train/train_kernels.cuh"
#include "shared/cudnn/cudnn_conv.hpp"

namespace nb::train {

using cudnn::check;

cudnnBatchNormOps_t fused_ops(BnAct a) {
  return a == BnAct::none ? CUDNN_BATCHNORM_OPS_BN
                          : a == BnAct::relu ? CUDNN_BATCHNORM_OPS_BN_ACTIVATION : CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION;
}

const char* ops_name(cudnnBatchNormOps_t o) {
  return o == CUDNN_BATCHNORM_OPS_BN ? "CUDNN_BATCHNORM_OPS_BN"
                                     : o == CUDNN_BATCHNORM_OPS_BN_ACTIVATION ? "CUDNN_BATCHNORM_OPS_BN_ACTIVATION"
                                                                              : "CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION";
}

cudnnStatus_t bn_cudnn_sizes(const BnRun& r, cudnnBatchNormOps_t ops, size_t& fwd_ws, size_t& bwd_ws, size_t& reserve) {
  const cudnnActivationDescriptor_t act = ops == CUDNN_BATCHNORM_OPS_BN ? nullptr : r.relu;
  const cudnnTensorDescriptor_t yd = r.y_desc, zd = ops == CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION ? yd : nullptr;
  fwd_ws = bwd_ws = reserve = 0;
  cudnnStatus_t st =
      cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(r.h, r.mode, ops, yd, zd, yd, r.bn_desc, act, &fwd_ws);
  if (st == CUDNN_STATUS_SUCCESS)
    st = cudnnGetBatchNormalizationBackwardExWorkspaceSize(r.h, r.mode, ops, yd, yd, yd, zd, yd, r.bn_desc, act, &bwd_ws);
  if (st == CUDNN_STATUS_SUCCESS) st = cudnnGetBatchNormalizationTrainingExReserveSpaceSize(r.h, r.mode, ops, act, yd, &reserve);
  return st;
}

BnNeeds bn_needs(const BnRun& r) {
  BnNeeds n;
  const size_t own = kernels::bn_workspace_bytes(r.geo, r.shape.c);
  if (r.path != BnPath::kernels) {
    const cudnnBatchNormOps_t ops = r.path == BnPath::cudnn ? fused_ops(r.act) : CUDNN_BATCHNORM_OPS_BN;
    n.status = bn_cudnn_sizes(r, ops, n.fwd_ws, n.bwd_ws, n.reserve);
    if (n.status != CUDNN_STATUS_SUCCESS) n.fwd_ws = n.bwd_ws = n.reserve = 0;
  }
  n.fwd_ws = std::max(n.fwd_ws, own);
  n.bwd_ws = std::max(n.bwd_ws, own);
  return n;
}

cudnnActivationDescriptor_t create_bn_relu() {
  cudnnActivationDescriptor_t a = nullptr;
  NB_CUDNN(cudnnCreateActivationDescriptor(&a));
  const cudnnStatus_t st = cudnnSetActivationDescriptor(a, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0);
  if (st != CUDNN_STATUS_SUCCESS) cudnnDestroyActivationDescriptor(a);
  NB_CUDNN(st);
  return a;
}

cudnnStatus_t bn_cudnn_forward(const BnRun& r, cudnnBatchNormOps_t ops, const void* residual, void* out, cudaStream_t s) {
  const float one = 1.f, zero = 0.f;
  const bool add = ops == CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION;
  NB_CUDNN(cudnnSetStream(r.h, s));
  return cudnnBatchNormalizationForwardTrainingEx(
      r.h, r.mode, ops, &one, &zero, r.y_desc, r.x, add ? r.y_desc : nullptr, add ? residual : nullptr, r.y_desc, out,
      r.bn_desc, r.gamma, r.beta, kBnFactor, r.run_mean, r.run_var, kBnEps, r.save_mean, r.save_inv,
      ops == CUDNN_BATCHNORM_OPS_BN ? nullptr : r.relu, r.ws, r.ws_bytes, r.reserve, r.reserve_bytes);
}

// dgamma and dbeta overwritten (betaParamDiff 0), dx overwritten (betaDataDiff 0).
cudnnStatus_t bn_cudnn_backward(const BnRun& r, cudnnBatchNormOps_t ops, const void* dy, void* dx, void* dz,
                                cudaStream_t s) {
  const float one = 1.f, zero = 0.f;
  const bool fused = ops != CUDNN_BATCHNORM_OPS_BN, add = ops == CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION;
  const cudnnTensorDescriptor_t d = r.y_desc;
  NB_CUDNN(cudnnSetStream(r.h, s));
  return cudnnBatchNormalizationBackwardEx(r.h, r.mode, ops, &one, &zero, &one, &zero, d, r.x, fused ? d : nullptr,
                                           fused ? r.out : nullptr, d, dy, add ? d : nullptr, add ? dz : nullptr, d, dx,
                                           r.bn_desc, r.gamma, r.beta, r.dgamma, r.dbeta, kBnEps, r.save_mean, r.save_inv,
                                           fused ? r.relu : nullptr, r.ws, r.ws_bytes, r.reserve, r.reserve_bytes);
}

void bn_forward(const BnRun& r, const void* residual, cudaStream_t s, const BnMark& mark) {
  auto marked = [&](bool elementwise) {
    if (mark) mark(elementwise);
  };
  if (r.path == BnPath::kernels) {
    kernels::BnForward a;
    a.x = r.x;
    a.residual = r.act == BnAct::add_relu ? residual : nullptr;
    a.y = r.out;
    a.relu = r.act != BnAct::none;
    a.gamma = r.gamma, a.beta = r.beta;
    a.running_mean = r.run_mean, a.running_var = r.run_var, a.save_mean = r.save_mean, a.save_inv_std = r.save_inv;
    a.factor = kBnFactor, a.eps = kBnEps, a.ws = r.ws;
    kernels::launch_bn_forward(s, r.shape, r.geo, a);
    NB_CUDA_LAUNCH();
    marked(false);
    return;
  }
  if (r.path == BnPath::cudnn) {
    check(bn_cudnn_forward(r, fused_ops(r.act), residual, r.out, s), "cudnnBatchNormalizationForwardTrainingEx (fused)",
          __FILE__, __LINE__);
    marked(false);
    return;
  }
  // Unfused: batch norm, then the activation as its own pass (the add's into the scratch buffer).
  void* bn_out = r.act == BnAct::add_relu ? r.scratch : r.out;
  check(bn_cudnn_forward(r, CUDNN_BATCHNORM_OPS_BN, nullptr, bn_out, s), "cudnnBatchNormalizationForwardTrainingEx",
        __FILE__, __LINE__);
  marked(false);
  if (r.act == BnAct::none) return;
  if (r.act == BnAct::relu) kernels::launch_relu(s, r.out, r.out, r.elems, r.half);
  else kernels::launch_add_relu(s, bn_out, residual, r.out, r.elems, r.half);
  NB_CUDA_LAUNCH();
  marked(true);
}

void bn_backward(const BnRun& r, void* dy, void* dx, void* dz, cudaStream_t s, const BnMark& mark) {
  auto marked = [&](bool elementwise) {
    if (mark) mark(elementwise);
  };
  const bool add = r.act == BnAct::add_relu;
  if (r.path == BnPath::kernels) {
    kernels::BnBackward a;
    // A ReLU's mask is recomputed from x (whether or not the output is kept: one tensor fewer
    // to read in both backward passes); after the add, y is read, and the first pass writes the
    // masked gradient to dz, which the second reads back.
    const bool from_x = r.act == BnAct::relu;
    a.x = r.x;
    a.y = r.act == BnAct::none || from_x ? nullptr : r.out;
    a.relu_from_x = from_x;
    a.beta = r.beta;
    a.dy = dy, a.dx = dx, a.dz = add ? dz : nullptr;
    a.gamma = r.gamma, a.save_mean = r.save_mean, a.save_inv_std = r.save_inv;
    a.dgamma = r.dgamma, a.dbeta = r.dbeta, a.ws = r.ws;
    kernels::launch_bn_backward(s, r.shape, r.geo, a);
    NB_CUDA_LAUNCH();
    marked(false);
    return;
  }
  if (r.path == BnPath::cudnn) {
    check(bn_cudnn_backward(r, fused_ops(r.act), dy, dx, dz, s), "cudnnBatchNormalizationBackwardEx (fused)", __FILE__,
          __LINE__);
    marked(false);
    return;
  }
  // Unfused: the ReLU's gradient (for the add: into dz, the gradient at the add, which is also the
  // residual branch's; else in place), then batch norm from it.
  void* g = add ? dz : dy;
  if (r.act != BnAct::none) {
    kernels::launch_relu_backward(s, r.out, dy, g, r.elems, r.half);
    NB_CUDA_LAUNCH();
    marked(true);
  }
  check(bn_cudnn_backward(r, CUDNN_BATCHNORM_OPS_BN, g, dx, nullptr, s), "cudnnBatchNormalizationBackwardEx", __FILE__,
        __LINE__);
  marked(false);
}

}  // namespace nb::train
