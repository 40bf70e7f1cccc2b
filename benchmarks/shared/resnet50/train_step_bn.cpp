// The training step's batch norms with their ReLU and residual add, on the path each layer takes
// (train_fusion.hpp): cuDNN's fused calls, the step's own kernels, or unfused.
#include <algorithm>

#include "kernels/train/bn_traffic.hpp"
#include "train_bn_layer.hpp"
#include "train_step.hpp"
#include "train_step_impl.hpp"

namespace nb::train {

using nlohmann::json;
using namespace cudnn;

BnRun TrainStep::bn_run(const Layer& L, bool forward) const {
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
  r.reserve = L.bn_reserve, r.reserve_bytes = L.bn_need.reserve;
  r.ws = forward ? L.ws_bn_fwd : L.ws_bn_bwd;
  r.ws_bytes = forward ? L.bn_need.fwd_ws : L.bn_need.bwd_ws;
  r.scratch = L.add_scratch;
  r.relu_from_x = L.relu_from_x;
  return r;
}

void TrainStep::bn_prepare(Layer& L) {
  Impl& I = *impl_;
  const auto& c = *L.spec;
  L.shape = {cfg_.batch, c.k, int64_t(c.out_hw()) * c.out_hw(), cfg_.nhwc, half_};
  L.geo = kernels::bn_geometry(cfg_.nhwc, cfg_.batch, c.k, L.shape.hw, int(elem_), I.sms, cfg_.bn_grid);
  // The stem's batch norm + ReLU output is read backward only as its mask when the step's own max
  // pool keeps its argmax (the fused settings): its kernels then recompute the mask from x.
  const bool output_kept = L.spec != &net_.convs[0] || cfg_.fusion == Fusion::off;
  L.bn_choice = choose_bn_path(cfg_.fusion, half_, cfg_.nhwc, c.k, L.act, output_kept);
  L.relu_from_x = !output_kept && L.act == BnAct::relu && L.bn_choice.path == BnPath::kernels;
  // Its workspaces and reserve space (bn_needs: with the own kernels' workspace, for a fallback
  // after the memory is laid out) go into the step's memory plan.
  L.bn_need = bn_needs(bn_run(L, true));
  if (L.bn_need.status != CUDNN_STATUS_SUCCESS && L.bn_choice.path == BnPath::cudnn) {
    L.bn_choice = fallback_after_not_supported(std::string("the workspace and reserve size queries with ") +
                                                   ops_name(fused_ops(L.act)),
                                               cudnnGetErrorString(L.bn_need.status));
    return;
  }
  check(L.bn_need.status, "cudnnGetBatchNormalization{ForwardTrainingEx,BackwardEx}WorkspaceSize / TrainingExReserveSpaceSize",
        __FILE__, __LINE__);
}

void TrainStep::bn_check_cudnn(Layer& L, const void* residual) {
  if (L.bn_choice.path != BnPath::cudnn || L.act == BnAct::none) return;
  const cudnnBatchNormOps_t ops = fused_ops(L.act);
  // Runs on the real buffers before the weights are initialised (their contents do not matter),
  // the layer's own gradients standing for dy, dx and dz.
  cudnnStatus_t st = bn_cudnn_forward(bn_run(L, true), ops, residual, L.out, stream_);
  const char* call = "cudnnBatchNormalizationForwardTrainingEx";
  if (st == CUDNN_STATUS_SUCCESS) {
    st = bn_cudnn_backward(bn_run(L, false), ops, L.g_out, L.g_y, L.g_res, stream_);
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
  bn_forward(bn_run(L, true), residual, s, [&](bool elementwise) { mark(elementwise ? Kind::elementwise : Kind::bn, s); });
}

void TrainStep::bn_bwd(Layer& L, void* dy, void* dx, void* dz, cudaStream_t s) {
  bn_backward(bn_run(L, false), dy, dx, dz, s, [&](bool elementwise) { mark(elementwise ? Kind::elementwise : Kind::bn, s); });
}

json TrainStep::bn_traffic() const {
  double bytes[kernels::kBnPasses] = {};
  int layers = 0;
  for (const auto& L : impl_->layers) {
    if (L.bn_choice.path != BnPath::kernels) continue;
    ++layers;
    const int64_t elems = L.shape.n * L.shape.c * L.shape.hw;
    for (int k = 0; k < kernels::kBnPasses; ++k)
      bytes[k] += kernels::bn_pass_bytes(kernels::BnPass(k), elems, int(elem_), L.act == BnAct::add_relu);
  }
  json j = {{"layers", layers}, {"batch_norm_layers", impl_->layers.size()}};
  double total = 0;
  for (int k = 0; k < kernels::kBnPasses; ++k) {
    j[std::string(kernels::bn_pass_name(kernels::BnPass(k))) + "_bytes"] = bytes[k];
    total += bytes[k];
  }
  j["total_bytes"] = total;
  return j;
}

json TrainStep::fusion_details() const {
  std::vector<BnLayerPath> v;
  for (const auto& L : impl_->layers) v.push_back({L.act, L.bn_choice});
  json d = train::fusion_details(cfg_.fusion, v);
  d["max_pool"] = impl_->pool_arg ? "kernels" : "cudnn";  // the stem's max pool, forward and backward
  return d;
}

}  // namespace nb::train
