// Where the training step's memory goes (family train), planned without CUDA so that the unit
// tests check it: every activation, gradient, workspace and scratch buffer of one step, the
// interval of the step's operations during which it holds something still needed, and an offset
// in one region such that no two buffers needed at the same operation overlap.
//
// Why: an activation kept for backward is dead once its layer's backward has run, and before its
// layer's forward it holds nothing yet, so the gradients and workspaces of a layer can live in
// the memory of the layers after it (forward: not yet written; backward: already consumed). The
// step used to keep three gradient buffers of the largest activation and one workspace of the
// largest convolution for the whole step beside every activation (FP16 NHWC batch 256: 1.23 GB
// and about 0.7 GB); planned, only the activations live at the start of backward stay apart,
// which is what a framework's caching allocator reaches by freeing tensors as it goes.
//
// The operations, in the order TrainStep::forward and backward issue them (train_step.cpp):
//   forward:  [the images converted to NHWC;] conv, bn of the stem; max pool; per block conv1, bn1, conv2, bn2, conv3,
//             [projection conv, bn], bn3 (+ add + ReLU); average pool; FC; loss
//   backward: FC; average pool; per block in reverse bn3, conv3, bn2, conv2, bn1,
//             [projection bn, conv], conv1; max pool; bn, conv of the stem.
// Each operation names the buffers it reads or writes; a buffer's interval runs from the first
// to the last operation that names it. The images, parameters, statistics, logits and labels live
// from step to step and stay outside the region.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "resnet50_net.hpp"

namespace nb::resnet50 {

enum class BufKind : int { activation, gradient, workspace, reserve, scratch };
constexpr int kBufKinds = 5;
const char* buf_kind_name(BufKind k);  // activations, gradients, workspace, reserve, scratch

// What one convolution layer's operations need besides its tensors: bytes of the workspace of its
// convolution forward and backward (the larger of the filter and data passes) and of its batch
// norm forward and backward, the batch norm's reserve space (cuDNN's, kept from forward to
// backward), whether the batch norm runs unfused (its add writes a scratch buffer first), and
// whether its backward recomputes the ReLU's mask from its input (then it does not read its output).
struct LayerNeeds {
  size_t ws_conv_fwd = 0, ws_conv_bwd = 0, ws_bn_fwd = 0, ws_bn_bwd = 0, reserve = 0;
  bool unfused = false;
  bool mask_from_x = false;
};

struct StepPlanInput {
  int64_t batch = 1;
  int elem = 4;                   // bytes of the storage type
  bool own_max_pool = true;       // the step's max pool (an argmax kept) or cuDNN's (reads its input and output backward)
  std::vector<LayerNeeds> layers;  // per convolution (Net::convs order); empty: none needs anything
  // The images are fed NCHW and the step runs NHWC: the stem's input is their NHWC copy, an
  // activation written at the step's start ("forward convert images") and read until the stem's
  // backward. false: the stem reads the images themselves (outside the region).
  bool convert_images = false;
  bool share = true;              // false: every buffer its own memory (for comparison)
  size_t align = 256;
};

struct PlanBuffer {
  std::string what;
  BufKind kind = BufKind::activation;
  size_t bytes = 0;
  int first = 0, last = 0;  // operations
  size_t offset = 0;
};

// The buffers of one convolution layer (indices into StepPlan::buffers; -1: none).
//   x the convolution's input (-1 for the stem: the images; their NHWC copy with convert_images), y its output, out where the batch
//   norm with its activation writes (z after a ReLU; the block output; the projection's scratch);
//   g_out the gradient at out (the batch norm backward's dy), g_y at y (its dx, the convolution
//   backward's dy), g_in at x (the convolution backward's dx; for conv1 the block input's
//   gradient), g_res the gradient at the add's other input (conv3: dz).
struct LayerBufs {
  int x = -1, y = -1, out = -1, reserve = -1, add_scratch = -1;
  int g_out = -1, g_y = -1, g_in = -1, g_res = -1;
  int ws_conv_fwd = -1, ws_bn_fwd = -1, ws_bn_bwd = -1, ws_conv_bwd = -1;
};

struct StepPlan {
  std::vector<std::string> ops;
  std::vector<PlanBuffer> buffers;
  std::vector<LayerBufs> layers;
  std::vector<int> block_out;
  int pool_out = -1, pool_argmax = -1, pooled = -1, g_pooled = -1, g_last = -1;
  size_t total = 0;      // bytes of the region
  size_t live_peak = 0;  // the most bytes needed at one operation: no placement needs less
  int peak_op = 0;
  std::array<size_t, kBufKinds> at_peak{};  // bytes needed at that operation, by kind
  std::array<size_t, kBufKinds> apart{};    // every buffer of a kind in its own memory
};

StepPlan plan_step(const Net& n, const StepPlanInput& in);

// "" when no two buffers needed at a common operation overlap in the region; else the first pair.
std::string plan_conflict(const StepPlan& p);

}  // namespace nb::resnet50
