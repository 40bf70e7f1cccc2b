// The training step's batch-norm paths (see train_fusion.hpp).
#include "train_fusion.hpp"

#include <set>

#include "bench/settings.hpp"

namespace nb::train {

using nlohmann::json;

namespace {
const SettingRegistrar kFusion({"NODEBENCH_TRAIN_FUSION", SettingKind::choice, "train_fusion", "1", 0, false,
                                "=0|1|kernels the train step's batch norm with its ReLU/add: 0 unfused, 1 fused (default), "
                                "kernels: fused by the step's own kernels everywhere",
                                "train", false, false, nullptr, "", {"0", "1", "kernels"}});
const SettingRegistrar kConvLayout({"NODEBENCH_TRAIN_CONV_LAYOUT", SettingKind::choice, "train_conv_layout", "auto", 0,
                                    false,
                                    "=auto|input the layout the train step's convolutions run in: auto (default) runs an "
                                    "NCHW step in NHWC on tensor cores (cc >= 7.0, tf32/fp16), converting the images each "
                                    "step; input: the images' layout",
                                    "train", false, false, nullptr, "--conv-layout", {"auto", "input"}});
const SettingRegistrar kBnBlocks({"NODEBENCH_TRAIN_BN_BLOCKS_PER_SM", SettingKind::integer, "train_bn_blocks_per_sm",
                                   kernels::kBnBlocksPerSm, 32, false,
                                   "=N blocks per multiprocessor the train step's own batch-norm reductions aim at "
                                   "(default " + std::to_string(kernels::kBnBlocksPerSm) + ", at most 32)",
                                   "train"});
const SettingRegistrar kBnRowBytes({"NODEBENCH_TRAIN_BN_ROW_BYTES", SettingKind::choice, "train_bn_row_bytes",
                                    std::to_string(kernels::kBnRowBytes), 0, false,
                                    "=128|256|512 bytes of channel vectors a row of the train step's NHWC batch-norm "
                                    "reductions covers (default " + std::to_string(kernels::kBnRowBytes) + ")",
                                    "train", false, false, nullptr, "", {"128", "256", "512"}});
}  // namespace

ConvLayoutSetting conv_layout_setting(const Settings& s) {
  return s.choice("NODEBENCH_TRAIN_CONV_LAYOUT") == "input" ? ConvLayoutSetting::input : ConvLayoutSetting::automatic;
}
kernels::BnGridTuning bn_grid_setting(const Settings& s) {
  kernels::BnGridTuning t;
  t.blocks_per_sm = int(s.integer("NODEBENCH_TRAIN_BN_BLOCKS_PER_SM"));
  t.row_bytes = std::stoi(s.choice("NODEBENCH_TRAIN_BN_ROW_BYTES"));
  return t;
}
const char* conv_layout_setting_name(ConvLayoutSetting c) { return c == ConvLayoutSetting::input ? "input" : "auto"; }

bool step_runs_nhwc(int cc, const std::string& precision, bool input_nhwc, ConvLayoutSetting c) {
  if (input_nhwc || c == ConvLayoutSetting::input) return input_nhwc;
  const bool tensor_op = precision == "tf32" || precision == "fp16";
  return cc >= 70 && tensor_op;
}

Fusion fusion_setting(const Settings& s) {
  const std::string v = s.choice("NODEBENCH_TRAIN_FUSION");
  return v == "0" ? Fusion::off : v == "kernels" ? Fusion::kernels : Fusion::on;
}

const char* fusion_setting_name(Fusion f) {
  return f == Fusion::off ? "0" : f == Fusion::on ? "1" : "kernels";
}
const char* bn_act_name(BnAct a) { return a == BnAct::none ? "bn" : a == BnAct::relu ? "bn_relu" : "bn_add_relu"; }
const char* bn_path_name(BnPath p) {
  return p == BnPath::unfused ? "unfused" : p == BnPath::cudnn ? "cudnn" : "kernels";
}

BnChoice choose_bn_path(Fusion f, bool half, bool nhwc, int64_t channels, BnAct act, bool output_kept) {
  if (f == Fusion::off)
    return {BnPath::unfused, "NODEBENCH_TRAIN_FUSION=0: cuDNN's batch norm, then separate ReLU / add kernels"};
  if (act == BnAct::relu && !output_kept)
    return {BnPath::kernels, "the ReLU's output is read by nothing else in backward: the step's own kernels recompute "
                             "its mask from the input, and the output is not kept"};
  if (f == Fusion::kernels) return {BnPath::kernels, "NODEBENCH_TRAIN_FUSION=kernels: the step's own kernels"};
  if (half && nhwc) {
    if (act == BnAct::add_relu && channels % 4 != 0)
      return {BnPath::kernels, "cuDNN's CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION needs the channels a multiple of 4"};
    return {BnPath::cudnn, act == BnAct::none ? "FP16 NHWC: cuDNN's persistent batch norm (nothing to fuse)"
                                              : "FP16 NHWC: cuDNN's fused batch norm (persistent mode)"};
  }
  // cuDNN fuses the activation and the add only into its persistent FP16 NHWC kernel.
  const std::string why = std::string(half ? "NCHW" : "FP32/TF32") +
                          ": cuDNN fuses batch norm with ReLU and add only for FP16 NHWC; the step's own kernels";
  return {BnPath::kernels, act == BnAct::none ? why + " (as the fused layers of this precision and layout)" : why};
}

BnChoice fallback_after_not_supported(const std::string& call, const std::string& status) {
  return {BnPath::kernels, "cuDNN answered " + status + " for " + call + ": the step's own kernels"};
}

json fusion_details(Fusion f, const std::vector<BnLayerPath>& layers) {
  json kinds = json::object();
  std::set<std::string> reasons;
  int fused = 0;
  for (const auto& l : layers) {
    json& k = kinds[bn_act_name(l.act)];
    if (k.is_null()) k = {{"unfused", 0}, {"cudnn", 0}, {"kernels", 0}};
    k[bn_path_name(l.choice.path)] = k[bn_path_name(l.choice.path)].get<int>() + 1;
    if (l.act != BnAct::none && l.choice.path != BnPath::unfused) ++fused;
    if (!l.choice.reason.empty()) reasons.insert(l.choice.reason);
  }
  return {{"setting", fusion_setting_name(f)}, {"layers", kinds}, {"fused_layers", fused},
          {"batch_norm_layers", layers.size()}, {"reasons", json(std::vector<std::string>(reasons.begin(), reasons.end()))}};
}

}  // namespace nb::train
