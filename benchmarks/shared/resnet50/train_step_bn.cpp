// The training step's batch norms with their ReLU and residual add, on the path each layer takes
// (train_fusion.hpp): cuDNN's fused calls, the step's own kernels, or unfused.
#include <algorithm>

#include "train_bn_layer.hpp"
#include "train_step.hpp"
#include "train_step_impl.hpp"

namespace nb::train {

using nlohmann::json;
using namespace cudnn;

BnRun TrainStep::bn_run(const Layer& L) const {
  const Impl& I = *impl_;
  BnRun r;
  r.act = L.act;
  r.path = L.bn_choice.path;
  r.half = half_;
  r.h = I.h;
  r.mode = I.bn_mode;
  r.relu = I.relu;
  r.y_desc = L.d->y;
  r.bn_desc = L.bn;
  r.elems = L.d->y_elems();
  r.shape = L.shape;
  r.geo = L.geo;
  r.x = L.y;
  r.out = L.out;
  r.gamma = L.gamma, r.beta = L.beta, r.dgamma = L.dgamma, r.dbeta = L.dbeta;
  r.run_mean = L.run_mean, r.run_var = L.run_var, r.save_mean = L.save_mean, r.save_inv = L.save_inv;
  r.reserve = L.bn_reserve, r.reserve_bytes = L.bn_reserve_bytes;
  r.ws = I.ws, r.ws_bytes = ws_bytes_;
  r.scratch = I.g[0];
  return r;
}

void TrainStep::bn_prepare(Layer& L, size_t& ws_bytes) {
  Impl& I = *impl_;
  const auto& c = *L.spec;
  L.shape = {cfg_.batch, c.k, int64_t(c.out_hw()) * c.out_hw(), cfg_.nhwc, half_};
  L.geo = kernels::bn_geometry(cfg_.nhwc, cfg_.batch, c.k, L.shape.hw, int(elem_), I.sms);
  L.bn_choice = choose_bn_path(cfg_.fusion, half_, cfg_.nhwc, c.k, L.act);
  const BnNeeds need = bn_needs(bn_run(L));
  if (need.status != CUDNN_STATUS_SUCCESS && L.bn_choice.path == BnPath::cudnn) {
    L.bn_choice = fallback_after_not_supported(
        std::string("the workspace and reserve size queries with ") + ops_name(fused_ops(L.act)), cudnnGetErrorString(need.status));
  } else {
    check(need.status, "cudnnGetBatchNormalization{ForwardTrainingEx,BackwardEx}WorkspaceSize / TrainingExReserveSpaceSize",
          __FILE__, __LINE__);
  }
  // The workspace is shared with the convolutions; the reserve space is the layer's, kept from
  // forward to backward.
  ws_bytes = std::max({ws_bytes, need.fwd_ws, need.bwd_ws});
  L.bn_reserve_bytes = need.reserve;
  if (need.reserve) {
    L.bn_reserve = arena_.alloc(need.reserve, "the batch-norm reserve space of " + c.name);
    bn_reserve_bytes_ += (need.reserve + 255) / 256 * 256;
  }
}

void TrainStep::bn_check_cudnn(Layer& L, const void* residual) {
  if (L.bn_choice.path != BnPath::cudnn || L.act == BnAct::none) return;
  Impl& I = *impl_;
  const cudnnBatchNormOps_t ops = fused_ops(L.act);
  const BnRun r = bn_run(L);
  // Runs on the real buffers before the weights are initialised (their contents do not matter);
  // the scratch buffers stand for dy, dx and dz.
  cudnnStatus_t st = bn_cudnn_forward(r, ops, residual, L.out, stream_);
  const char* call = "cudnnBatchNormalizationForwardTrainingEx";
  if (st == CUDNN_STATUS_SUCCESS) {
    st = bn_cudnn_backward(r, ops, I.g[0], I.g[1], I.g[2], stream_);
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
  bn_forward(bn_run(L), residual, s, [&](bool elementwise) { mark(elementwise ? Kind::elementwise : Kind::bn, s); });
}

void TrainStep::bn_bwd(Layer& L, void* dy, void* dx, void* dz, cudaStream_t s) {
  bn_backward(bn_run(L), dy, dx, dz, s, [&](bool elementwise) { mark(elementwise ? Kind::elementwise : Kind::bn, s); });
}

json TrainStep::fusion_details() const {
  std::vector<BnLayerPath> v;
  for (const auto& L : impl_->layers) v.push_back({L.act, L.bn_choice});
  json d = train::fusion_details(cfg_.fusion, v);
  d["max_pool"] = impl_->pool_arg ? "kernels" : "cudnn";  // the stem's max pool, forward and backward
  return d;
}

}  // namespace nb::train
