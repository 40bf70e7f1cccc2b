// Which implementation runs each batch norm of the training step, with its neighbours (family
// train). No CUDA: the decision is tested without a GPU.
//
// Every convolution of ResNet-50 is followed by a batch norm, and the batch norm by a ReLU (the
// stem, conv1, conv2 of a block: `bn_relu`), by the residual add and a ReLU (conv3: `bn_add_relu`,
// the block's join) or by nothing (the projection shortcut: `bn`). Three paths:
//  - unfused: cuDNN's batch norm (the *Ex calls with CUDNN_BATCHNORM_OPS_BN), then the ReLU, the
//    add + ReLU and, backward, the ReLU's gradient as separate kernels: each activation is read
//    and written once more (NODEBENCH_TRAIN_FUSION=0; kept for comparison and for the test that
//    the fused step computes the same);
//  - cudnn: cuDNN's fused calls, CUDNN_BATCHNORM_OPS_BN_ACTIVATION / _BN_ADD_ACTIVATION with a
//    ReLU descriptor, forward and backward (the backward reads the forward's output y and gives
//    dz, the residual branch's gradient). cuDNN documents its fused NHWC kernel for fully packed
//    NHWC FP16 tensors in CUDNN_BATCHNORM_SPATIAL_PERSISTENT mode, C a multiple of 4 for
//    BN_ADD_ACTIVATION; the step takes it for FP16 NHWC and asks cuDNN at setup (the size
//    queries and one forward and backward on the layer's buffers): a layer cuDNN answers
//    CUDNN_STATUS_NOT_SUPPORTED for (another cuDNN, a P40) falls back to the step's kernels;
//  - kernels: the step's own kernels (kernels/train/train_bn_kernels.cuh): statistics, then BN apply +
//    add + ReLU in one pass; backward the two sums, then dx and dz in one pass. For every
//    precision and layout cuDNN does not fuse (FP32, TF32, NCHW): it has no fused batch norm there.
// NODEBENCH_TRAIN_FUSION=kernels runs the step's kernels everywhere (to compare them with cuDNN's
// fused calls on FP16 NHWC).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/train/train_vec.hpp"

namespace nb {
class Settings;
}

namespace nb::train {

enum class Fusion : int { off = 0, on = 1, kernels = 2 };  // NODEBENCH_TRAIN_FUSION 0, 1, kernels
enum class BnAct : int { none, relu, add_relu };
enum class BnPath : int { unfused, cudnn, kernels };
const char* fusion_setting_name(Fusion f);  // "0", "1", "kernels"
// NODEBENCH_TRAIN_FUSION (declared with the step: train and train_dp run it) in these settings.
Fusion fusion_setting(const Settings& s);
const char* bn_act_name(BnAct a);           // "bn", "bn_relu", "bn_add_relu"
const char* bn_path_name(BnPath p);         // "unfused", "cudnn", "kernels"

struct BnChoice {
  BnPath path = BnPath::unfused;
  std::string reason;
};
// The path of one batch norm before cuDNN is asked: from the setting, the storage type (FP16 or
// not), the layout and the channel count. output_kept false: nothing but the ReLU's mask needs the
// layer's output in backward (the stem's batch norm + ReLU, whose output only the max pool reads
// when the step's own max pool keeps its argmax); the step's own kernels then recompute the mask
// from x (BnBackward::relu_from_x) and the output is not kept for backward, which cuDNN's fused
// calls (they read it) cannot do.
BnChoice choose_bn_path(Fusion f, bool half, bool nhwc, int64_t channels, BnAct act, bool output_kept = true);
// The path after cuDNN answered `status` (CUDNN_STATUS_NOT_SUPPORTED, or another failure: the
// setup's check does not stop the step for it, the reason says it) for a layer on the cudnn path.
BnChoice fallback_after_not_supported(const std::string& call, const std::string& status = "CUDNN_STATUS_NOT_SUPPORTED");

// The layout the step's activations and convolutions run in (details.conv_layout), whatever the
// layout the images are fed in (the record's `layout`). NODEBENCH_TRAIN_CONV_LAYOUT: `auto` (the
// default) runs an NCHW step in NHWC on a GPU with tensor cores (compute capability 7.0 or newer)
// in a tensor-op precision (tf32, fp16), as PyTorch's Inductor does with an NCHW model (its layout
// optimisation): cuDNN's tensor-op convolutions are faster in NHWC, and the step converts the
// NCHW images to NHWC at its start (its time in the step). Exact FP32 and any GPU without tensor
// cores (a P40, cc 6.1) stay in the images' layout. `input`: always the images' layout.
enum class ConvLayoutSetting : int { automatic = 0, input = 1 };
ConvLayoutSetting conv_layout_setting(const Settings& s);  // NODEBENCH_TRAIN_CONV_LAYOUT
const char* conv_layout_setting_name(ConvLayoutSetting c);  // "auto", "input"
// The grid of the step's own batch-norm reductions (kernels/train/train_vec.hpp's BnGridTuning):
// NODEBENCH_TRAIN_BN_BLOCKS_PER_SM (whole number, 1..32) and NODEBENCH_TRAIN_BN_ROW_BYTES (128, 256
// or 512: the bytes of channel vectors an NHWC block row covers), defaults kBnBlocksPerSm and
// kBnRowBytes. For measuring other grids in the whole step; the results record both
// (settings.train_bn_blocks_per_sm, settings.train_bn_row_bytes).
kernels::BnGridTuning bn_grid_setting(const Settings& s);
// Whether the step runs NHWC: cc as major * 10 + minor, `precision` fp32, tf32 or fp16.
bool step_runs_nhwc(int cc, const std::string& precision, bool input_nhwc, ConvLayoutSetting c);

// details.fusion of a record: the setting, per activation kind the number of layers on each path,
// fused_layers (those whose ReLU / add ran inside the batch norm's passes) and the distinct reasons.
struct BnLayerPath {
  BnAct act;
  BnChoice choice;
};
nlohmann::json fusion_details(Fusion f, const std::vector<BnLayerPath>& layers);

}  // namespace nb::train
