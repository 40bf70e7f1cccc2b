// ResNet-50 v1.5 as a layer list (no CUDA): the convolutions in forward order (each followed by
// its batch normalisation), the 16 bottleneck blocks that wire them (stride on the 3x3, a 1x1
// projection on the first block of each stage), the fully connected layer, the parameter count
// and the memory a training step keeps for backward. The train family (train_step.cpp) builds
// and allocates the step from this list, so the unit tests of the list test the step's plan.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace nb::resnet50 {

// One convolution without bias over a square input hw x hw: k filters of c x r x r.
struct ConvSpec {
  std::string name;
  int c = 0, k = 0, hw = 0, r = 1, stride = 1, pad = 0;
  int out_hw() const { return (hw + 2 * pad - r) / stride + 1; }
  int64_t weights() const { return int64_t(k) * c * r * r; }
  int64_t in_elems() const { return int64_t(c) * hw * hw; }    // per image
  int64_t out_elems() const { return int64_t(k) * out_hw() * out_hw(); }  // per image
};

// A bottleneck: conv1 (1x1) -> conv2 (3x3, the block's stride) -> conv3 (1x1, 4x wider), each
// with batch norm (ReLU after the first two), plus the shortcut (identity, or `down`: a strided
// 1x1 projection with batch norm), added, then ReLU. Indices into Net::convs.
struct Bottleneck {
  int conv1 = -1, conv2 = -1, conv3 = -1, down = -1;
  int stage = 0;  // 1..4
};

struct Net {
  int image_hw = 224, image_c = 3;
  std::vector<ConvSpec> convs;  // convs[0] is the 7x7 stem; the order is the forward order
  std::vector<Bottleneck> blocks;
  int pool_hw = 112, pool_out_hw = 56;  // max pool 3x3 stride 2 pad 1 after the stem
  int fc_in = 2048, classes = 1000;

  int64_t conv_weight_count() const;
  int64_t bn_parameter_count() const;  // gamma and beta of every batch norm
  int64_t fc_parameter_count() const { return int64_t(fc_in) * classes + classes; }
  int64_t parameter_count() const { return conv_weight_count() + bn_parameter_count() + fc_parameter_count(); }
  // Multiply-adds x 2 of the forward pass of one image (convolutions and FC).
  double forward_flops_per_image() const;
  // The output size after each stage (0: stem, after the max pool; 1..4: the stages) and its channels.
  int stage_out_hw(int stage) const;
  int stage_out_c(int stage) const;
};

// The network for 224 x 224 images and 1000 classes.
const Net& net();

// The elements per image of the activations a training step keeps for backward (storage type):
// the input image, every convolution's output, every batch norm's (ReLU'd) output where it is a
// convolution's input, the max pool's output, every block's output and the pooled features. The
// outputs of the last batch norm of a block and of its projection are transient (added into the
// block output at once, as frameworks do in place).
int64_t kept_activation_elems_per_image(const Net& n);
// The largest activation of one image (cuDNN describes a tensor of at most 2^31 - 1 elements).
int64_t max_activation_elems_per_image(const Net& n);

// What the step allocates, for `batch` images with `elem`-byte storage, known without a GPU: its
// planned region of activations, gradients and scratch (step_memory.hpp) without the workspaces
// and reserve spaces (those come from the GPU's algorithm choices and cuDNN's answers), the
// parameters (FP32 master, momentum, gradients and, when elem != 4, the compute copy), and the
// rest (images, batch-norm statistics, labels, logits and their gradient, the loss).
struct MemoryPlan {
  int64_t region = 0, parameters = 0, other = 0;
  int64_t total() const { return region + parameters + other; }
};
// own_max_pool: the step's own max pool keeps one byte an output (the fused paths), and the stem's
// batch norm + ReLU output is then not kept for backward.
// convert_images: the step runs NHWC on NCHW images, with their NHWC copy in its region.
MemoryPlan memory_plan(const Net& n, int64_t batch, int elem, bool own_max_pool = false, bool convert_images = false);

// The bytes the memory-bound layer kinds of one step must move at least, for `batch` images with
// `elem`-byte storage: every tensor an operation reads read once and every tensor it writes
// written once, with the ReLU and the residual add inside the batch norm's passes (so the
// elementwise kind has nothing of its own). bn: forward x and y (+ the residual read at each
// block's join), backward x, dy, the ReLU's output as its mask and dx (+ dz at the join); pool:
// the max pool forward (x, y) and backward (x, dy, dx) and the average pool both ways; update: FP32
// master weights and momentum read and written, the gradients read, the FP16 copy written. A
// floor below any real implementation's traffic (batch norm's statistics need x before the
// apply can start): the time above it is an upper bound of what any fusion could still save.
struct ByteFloor {
  int64_t bn = 0, elementwise = 0, pool = 0, update = 0;
  int64_t total() const { return bn + elementwise + pool + update; }
};
ByteFloor memory_bound_floor(const Net& n, int64_t batch, int elem);

// The host reference of the step's loss (float64): mean softmax cross-entropy over n rows of
// `classes` logits plus bias, and dlogits = scale (softmax - onehot) / n, as the GPU kernel computes.
double softmax_xent_reference(const std::vector<float>& logits, const std::vector<float>& bias,
                              const std::vector<int32_t>& labels, int classes, double scale, std::vector<double>& dlogits);

}  // namespace nb::resnet50
