// The training step's memory plan without a GPU (shared/resnet50/step_memory.hpp): no two buffers
// needed at a common operation overlap, at every batch, storage type and path; each tensor lives
// from the operation that writes it to the last one that reads it; the region is the most the step
// needs at one operation, and that is where a hand count from the architecture puts it (the start
// of backward: every kept activation, the argmax and the first gradients); apart, every buffer
// takes its own memory. Workspaces and reserve spaces are made up here (their real sizes come
// from the GPU), large enough to matter.
#ifdef NB_HAVE_CUDNN
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "shared/resnet50/resnet50_net.hpp"
#include "shared/resnet50/step_memory.hpp"

namespace nb {
namespace {

using namespace resnet50;

// Workspaces of a third of a layer's output for its convolutions, 64 KiB for batch norm, a
// reserve of one bit an element where cuDNN's fused calls would run (FP16).
StepPlanInput input(int64_t batch, int elem, bool fused) {
  StepPlanInput in;
  in.batch = batch, in.elem = elem, in.own_max_pool = fused;
  for (const auto& c : net().convs) {
    const size_t out = size_t(c.out_elems() * batch * elem);
    in.layers.push_back({out / 3, out / 3, 65536, 65536, fused && elem == 2 ? out / elem / 8 : 0, !fused});
  }
  in.layers[0].mask_from_x = fused;  // the stem, as the step runs it with its own max pool
  in.layers[0].reserve = 0;          // on the own kernels
  return in;
}

size_t padded(size_t b) { return (b + 255) / 256 * 256; }

TEST(StepMemory, NoTwoBuffersNeededTogetherOverlap) {
  for (int64_t batch : {1, 3, 32, 256})
    for (int elem : {2, 4})
      for (bool fused : {true, false}) {
        const StepPlan p = plan_step(net(), input(batch, elem, fused));
        EXPECT_EQ(plan_conflict(p), "") << "batch " << batch << " elem " << elem << " fused " << fused;
        for (const auto& b : p.buffers) EXPECT_LE(b.offset + b.bytes, p.total) << b.what;
      }
}

const PlanBuffer& buf(const StepPlan& p, int id) { return p.buffers.at(size_t(id)); }
const std::string& first_op(const StepPlan& p, int id) { return p.ops[size_t(buf(p, id).first)]; }
const std::string& last_op(const StepPlan& p, int id) { return p.ops[size_t(buf(p, id).last)]; }

// Each tensor from its writer to its last reader, as TrainStep::forward and backward run them.
TEST(StepMemory, EachTensorLivesFromItsWriterToItsLastReader) {
  const StepPlan p = plan_step(net(), input(8, 2, true));
  const Net& n = net();
  for (size_t i = 0; i < n.convs.size(); ++i) {
    const std::string& name = n.convs[i].name;
    const LayerBufs& L = p.layers[i];
    EXPECT_EQ(first_op(p, L.y), "forward conv " + name);
    EXPECT_EQ(last_op(p, L.y), "backward bn " + name);  // batch norm's backward reads its input
    EXPECT_EQ(first_op(p, L.g_y), "backward bn " + name);
    EXPECT_EQ(last_op(p, L.g_y), "backward conv " + name);
    EXPECT_EQ(buf(p, L.ws_conv_fwd).first, buf(p, L.ws_conv_fwd).last) << "a workspace lives for its operation";
  }
  for (size_t bi = 0; bi < n.blocks.size(); ++bi) {
    const Bottleneck& b = n.blocks[bi];
    const std::string c1 = n.convs[size_t(b.conv1)].name, c2 = n.convs[size_t(b.conv2)].name,
                      c3 = n.convs[size_t(b.conv3)].name;
    // conv1's ReLU'd output: conv2's input (its filter gradient) and conv1's batch norm's mask.
    EXPECT_EQ(last_op(p, p.layers[size_t(b.conv1)].out), "backward bn " + c1);
    // The block output: the next block's input, and conv3's mask after the add (read last).
    EXPECT_EQ(first_op(p, p.block_out[bi]), "forward bn " + c3);
    EXPECT_EQ(last_op(p, p.block_out[bi]), "backward bn " + c3);
    // The gradient at the block's input is read by the block below's conv3 batch norm (or the max pool).
    const int g_in = p.layers[size_t(b.conv1)].g_in;
    EXPECT_EQ(last_op(p, g_in), bi ? "backward bn " + n.convs[size_t(n.blocks[bi - 1].conv3)].name : "backward max pool");
    if (b.down >= 0) {
      EXPECT_EQ(first_op(p, g_in), "backward conv " + n.convs[size_t(b.down)].name);
      EXPECT_EQ(last_op(p, p.layers[size_t(b.down)].out), "forward bn " + c3) << "the projection's output: the add's";
    } else {
      EXPECT_EQ(g_in, p.layers[size_t(b.conv3)].g_res) << "conv1's input gradient adds onto the shortcut's";
    }
    EXPECT_EQ(first_op(p, p.layers[size_t(b.conv2)].out), "forward bn " + c2);
  }
  EXPECT_EQ(last_op(p, p.pool_argmax), "backward max pool");
  // The stem's ReLU'd output: the max pool's input only; its mask is recomputed from the input.
  EXPECT_EQ(last_op(p, p.layers[0].out), "forward max pool");
  EXPECT_EQ(last_op(p, p.pooled), "backward fc");  // the FC's weight gradient reads its input
}

// The most needed at once, counted by hand: at the first backward operation that writes a
// block's gradients (conv3's batch norm of the last block), every kept activation but the images
// (outside the region), the pooled features (the FC's backward, before it, read them last) and
// the stem's ReLU'd output (its mask recomputed from its input), the max pool's argmax, the reserve spaces, the three gradients of
// 2048 x 7 x 7 then live (at the last block's output, at conv3's output, at the shortcut) and that
// operation's workspace.
TEST(StepMemory, TheRegionIsWhatTheStartOfBackwardNeeds) {
  const Net& n = net();
  for (int elem : {2, 4}) {
    const int64_t N = 64;
    const StepPlanInput in = input(N, elem, true);
    const StepPlan p = plan_step(n, in);
    const int64_t kept = (kept_activation_elems_per_image(n) - 3 * 224 * 224 - 2048 - 64 * 112 * 112) * N * elem;
    size_t reserves = 0;
    for (const auto& l : in.layers) reserves += padded(l.reserve);
    const size_t expect = size_t(kept) + size_t(64 * 56 * 56 * N) + reserves + 3 * size_t(2048 * 49 * N * elem) + 65536;
    EXPECT_EQ(p.ops[size_t(p.peak_op)], "backward bn " + n.convs[size_t(n.blocks.back().conv3)].name);
    // At batch 64 every tensor is a whole number of the plan's 256-byte units.
    EXPECT_EQ(p.live_peak, expect);
    EXPECT_EQ(p.total, p.live_peak) << "the placement needs no more than the most live at once";
    std::printf("elem %d batch %lld: region %.3f GB, at its peak %.3f GB activations, %.3f GB gradients, apart %.3f GB\n",
                elem, (long long)N, double(p.total) / 1e9, double(p.at_peak[0]) / 1e9, double(p.at_peak[1]) / 1e9,
                double(p.apart[0] + p.apart[1] + p.apart[2] + p.apart[3] + p.apart[4]) / 1e9);
  }
}

TEST(StepMemory, ApartEveryBufferHasItsOwnMemory) {
  StepPlanInput in = input(4, 4, false);
  in.share = false;
  const StepPlan p = plan_step(net(), in);
  size_t sum = 0;
  for (const auto& b : p.buffers) sum += padded(b.bytes);
  EXPECT_EQ(p.total, sum);
  size_t apart = 0;
  for (size_t k : p.apart) apart += k;
  EXPECT_EQ(apart, sum);
  EXPECT_EQ(plan_conflict(p), "");
  EXPECT_LT(plan_step(net(), input(4, 4, false)).total, p.total / 2) << "sharing saves most of it";
}

TEST(StepMemory, TheUnfusedPathKeepsWhatCudnnsMaxPoolReads) {
  const StepPlan fused = plan_step(net(), input(4, 2, true)), unfused = plan_step(net(), input(4, 2, false));
  EXPECT_GE(fused.pool_argmax, 0);
  EXPECT_LT(unfused.pool_argmax, 0);
  EXPECT_EQ(last_op(unfused, unfused.pool_out), "backward max pool");
  EXPECT_EQ(last_op(unfused, unfused.layers[0].out), "backward bn conv1");
  for (const auto& b : net().blocks) EXPECT_GE(unfused.layers[size_t(b.conv3)].add_scratch, 0);
  for (const auto& b : net().blocks) EXPECT_LT(fused.layers[size_t(b.conv3)].add_scratch, 0);
}

// An NHWC step fed NCHW images: their NHWC copy is the stem's input, written first and read until
// the stem's backward (the step's last operation before the update), so it shares memory with
// nothing and the region grows by its bytes.
TEST(StepMemory, ConvertedImagesLiveThroughTheWholeStep) {
  for (int elem : {2, 4}) {
    StepPlanInput in = input(8, elem, true);
    const StepPlan plain = plan_step(net(), in);
    in.convert_images = true;
    const StepPlan conv = plan_step(net(), in);
    EXPECT_LT(plain.layers[0].x, 0);  // the images themselves, outside the region
    ASSERT_GE(conv.layers[0].x, 0);
    const PlanBuffer& b = buf(conv, conv.layers[0].x);
    EXPECT_EQ(b.bytes, size_t(8) * 3 * 224 * 224 * size_t(elem));
    EXPECT_EQ(first_op(conv, conv.layers[0].x), "forward convert images");
    EXPECT_EQ(conv.ops.front(), "forward convert images");
    EXPECT_EQ(last_op(conv, conv.layers[0].x), "backward conv conv1");
    EXPECT_EQ(conv.ops.size(), plain.ops.size() + 1);
    EXPECT_EQ(plan_conflict(conv), "");
    EXPECT_EQ(conv.live_peak, plain.live_peak + padded(b.bytes));
    EXPECT_EQ(conv.buffers.size(), plain.buffers.size() + 1);
  }
  // memory_plan: the same copy in the region.
  EXPECT_EQ(memory_plan(net(), 8, 4, true, true).region - memory_plan(net(), 8, 4, true).region, 8 * 3 * 224 * 224 * 4);
}

}  // namespace
}  // namespace nb
#endif
