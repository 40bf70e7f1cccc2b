// The training step's memory plan (see step_memory.hpp).
#include "step_memory.hpp"

#include <algorithm>
#include <climits>
#include <initializer_list>
#include <numeric>
#include <stdexcept>

namespace nb::resnet50 {

const char* buf_kind_name(BufKind k) {
  static const char* n[kBufKinds] = {"activations", "gradients", "workspace", "reserve", "scratch"};
  return n[int(k)];
}

namespace {

class Builder {
 public:
  explicit Builder(const Net& n, const StepPlanInput& in) : n_(n), in_(in) { p.layers.resize(n.convs.size()); }
  StepPlan p;

  int buf(const std::string& what, BufKind k, size_t bytes) {
    if (!bytes) return -1;
    p.buffers.push_back({what, k, bytes, INT_MAX, -1, 0});
    return int(p.buffers.size()) - 1;
  }
  // Bytes of `elems` elements per image in the storage type, for the batch.
  size_t act(int64_t elems) const { return size_t(elems) * size_t(in_.batch) * size_t(in_.elem); }
  LayerNeeds need(size_t i) const { return i < in_.layers.size() ? in_.layers[i] : LayerNeeds{}; }
  // An operation that reads or writes these buffers.
  void op(const std::string& name, std::initializer_list<int> ids) {
    const int t = int(p.ops.size());
    p.ops.push_back(name);
    for (int id : ids) {
      if (id < 0) continue;
      PlanBuffer& b = p.buffers[size_t(id)];
      b.first = std::min(b.first, t), b.last = std::max(b.last, t);
    }
  }
  const Net& n_;
  const StepPlanInput& in_;
};

// A layer's own buffers: its convolution's output, its reserve space and its workspaces.
void layer_buffers(Builder& B, size_t i) {
  const ConvSpec& c = B.n_.convs[i];
  const LayerNeeds nd = B.need(i);
  LayerBufs& L = B.p.layers[i];
  L.y = B.buf(c.name + " output", BufKind::activation, B.act(c.out_elems()));
  L.reserve = B.buf(c.name + " batch-norm reserve space", BufKind::reserve, nd.reserve);
  L.ws_conv_fwd = B.buf(c.name + " forward workspace", BufKind::workspace, nd.ws_conv_fwd);
  L.ws_bn_fwd = B.buf(c.name + " batch-norm forward workspace", BufKind::workspace, nd.ws_bn_fwd);
  L.ws_bn_bwd = B.buf(c.name + " batch-norm backward workspace", BufKind::workspace, nd.ws_bn_bwd);
  L.ws_conv_bwd = B.buf(c.name + " backward workspace", BufKind::workspace, nd.ws_conv_bwd);
}

void conv_fwd(Builder& B, size_t i) {
  const LayerBufs& L = B.p.layers[i];
  B.op("forward conv " + B.n_.convs[i].name, {L.x, L.y, L.ws_conv_fwd});
}
void bn_fwd(Builder& B, size_t i, int residual = -1) {
  const LayerBufs& L = B.p.layers[i];
  B.op("forward bn " + B.n_.convs[i].name, {L.y, L.out, L.reserve, L.ws_bn_fwd, residual, L.add_scratch});
}
// The batch norm's backward reads its output as the ReLU's mask (not after the projection's, nor
// when it recomputes the mask from its input).
void bn_bwd(Builder& B, size_t i, bool relu) {
  const LayerBufs& L = B.p.layers[i];
  const bool mask = relu && !B.need(i).mask_from_x;
  B.op("backward bn " + B.n_.convs[i].name, {L.y, mask ? L.out : -1, L.reserve, L.g_out, L.g_y, L.g_res, L.ws_bn_bwd});
}
void conv_bwd(Builder& B, size_t i) {
  const LayerBufs& L = B.p.layers[i];
  B.op("backward conv " + B.n_.convs[i].name, {L.x, L.g_y, L.g_in, L.ws_conv_bwd});
}

// The forward's buffers and operations.
void forward(Builder& B) {
  const Net& n = B.n_;
  auto& Ls = B.p.layers;
  for (size_t i = 0; i < n.convs.size(); ++i) layer_buffers(B, i);
  Ls[0].out = B.buf("conv1 batch-norm + ReLU output", BufKind::activation, B.act(n.convs[0].out_elems()));
  const int64_t pooled_elems = int64_t(n.convs[0].k) * n.pool_out_hw * n.pool_out_hw;
  B.p.pool_out = B.buf("max pool output", BufKind::activation, B.act(pooled_elems));
  if (B.in_.own_max_pool)
    B.p.pool_argmax = B.buf("max pool argmax", BufKind::activation, size_t(pooled_elems) * size_t(B.in_.batch));
  if (B.in_.convert_images) {
    Ls[0].x = B.buf("the images in NHWC (converted from NCHW)", BufKind::activation, B.act(n.convs[0].in_elems()));
    B.op("forward convert images", {Ls[0].x});
  }
  conv_fwd(B, 0);
  bn_fwd(B, 0);
  B.op("forward max pool", {Ls[0].out, B.p.pool_out, B.p.pool_argmax});
  int x = B.p.pool_out;
  for (const Bottleneck& b : n.blocks) {
    const auto c1 = size_t(b.conv1), c2 = size_t(b.conv2), c3 = size_t(b.conv3);
    Ls[c1].x = x;
    Ls[c1].out = B.buf(n.convs[c1].name + " batch-norm + ReLU output", BufKind::activation, B.act(n.convs[c1].out_elems()));
    Ls[c2].x = Ls[c1].out;
    Ls[c2].out = B.buf(n.convs[c2].name + " batch-norm + ReLU output", BufKind::activation, B.act(n.convs[c2].out_elems()));
    Ls[c3].x = Ls[c2].out;
    Ls[c3].out = B.buf(n.convs[c3].name + " block output", BufKind::activation, B.act(n.convs[c3].out_elems()));
    if (B.need(c3).unfused)
      Ls[c3].add_scratch = B.buf(n.convs[c3].name + " batch-norm output before the add", BufKind::scratch,
                                 B.act(n.convs[c3].out_elems()));
    for (size_t i : {c1, c2}) {
      conv_fwd(B, i);
      bn_fwd(B, i);
    }
    conv_fwd(B, c3);
    int residual = x;
    if (b.down >= 0) {
      const auto d = size_t(b.down);
      Ls[d].x = x;
      Ls[d].out = B.buf(n.convs[d].name + " batch-norm output", BufKind::scratch, B.act(n.convs[d].out_elems()));
      conv_fwd(B, d);
      bn_fwd(B, d);
      residual = Ls[d].out;
    }
    bn_fwd(B, c3, residual);
    x = Ls[c3].out;
    B.p.block_out.push_back(x);
  }
  B.p.pooled = B.buf("pooled features", BufKind::activation, B.act(n.fc_in));
  B.op("forward average pool", {x, B.p.pooled});
  B.op("forward fc", {B.p.pooled});
}

// One block's backward: its gradient buffers (g_out of conv3 is the one coming in) and operations.
void block_backward(Builder& B, const Bottleneck& b, int g_in_block_out) {
  const Net& n = B.n_;
  auto& Ls = B.p.layers;
  const auto c1 = size_t(b.conv1), c2 = size_t(b.conv2), c3 = size_t(b.conv3);
  auto grad = [&](size_t i, const char* at, int64_t elems) {
    return B.buf("gradient at " + n.convs[i].name + "'s " + at, BufKind::gradient, B.act(elems));
  };
  Ls[c3].g_out = g_in_block_out;
  Ls[c3].g_y = grad(c3, "output", n.convs[c3].out_elems());
  Ls[c3].g_res = grad(c3, "residual (the block input on the identity path)", n.convs[c3].out_elems());
  Ls[c3].g_in = Ls[c2].g_out = grad(c2, "batch-norm output", n.convs[c2].out_elems());
  Ls[c2].g_y = grad(c2, "output", n.convs[c2].out_elems());
  Ls[c2].g_in = Ls[c1].g_out = grad(c1, "batch-norm output", n.convs[c1].out_elems());
  Ls[c1].g_y = grad(c1, "output", n.convs[c1].out_elems());
  bn_bwd(B, c3, true);
  conv_bwd(B, c3);
  bn_bwd(B, c2, true);
  conv_bwd(B, c2);
  bn_bwd(B, c1, true);
  if (b.down >= 0) {
    const auto d = size_t(b.down);
    Ls[d].g_out = Ls[c3].g_res;
    Ls[d].g_y = grad(d, "output", n.convs[d].out_elems());
    Ls[d].g_in = grad(c1, "input (the block input)", n.convs[c1].in_elems());
    Ls[c1].g_in = Ls[d].g_in;
    bn_bwd(B, d, false);
    conv_bwd(B, d);
  } else {
    if (n.convs[c1].in_elems() != n.convs[c3].out_elems()) throw std::logic_error("an identity block changes its shape");
    Ls[c1].g_in = Ls[c3].g_res;  // conv1's input gradient is added to the shortcut's
  }
  conv_bwd(B, c1);
}

void backward(Builder& B) {
  const Net& n = B.n_;
  auto& Ls = B.p.layers;
  const int hw = n.stage_out_hw(4);
  B.p.g_pooled = B.buf("gradient at the pooled features", BufKind::gradient, B.act(n.fc_in));
  B.p.g_last = B.buf("gradient at the last block output", BufKind::gradient, B.act(int64_t(n.fc_in) * hw * hw));
  B.op("backward fc", {B.p.pooled, B.p.g_pooled});
  B.op("backward average pool", {B.p.g_pooled, B.p.g_last});
  int g = B.p.g_last;
  for (size_t bi = n.blocks.size(); bi-- > 0;) {
    block_backward(B, n.blocks[bi], g);
    g = Ls[size_t(n.blocks[bi].conv1)].g_in;
  }
  Ls[0].g_out = B.buf("gradient at conv1's batch-norm output", BufKind::gradient, B.act(n.convs[0].out_elems()));
  Ls[0].g_y = B.buf("gradient at conv1's output", BufKind::gradient, B.act(n.convs[0].out_elems()));
  // cuDNN's max pool backward reads its forward's input and output; the step's own reads its argmax.
  if (B.in_.own_max_pool) B.op("backward max pool", {g, B.p.pool_argmax, Ls[0].g_out});
  else B.op("backward max pool", {g, B.p.pool_out, Ls[0].out, Ls[0].g_out});
  bn_bwd(B, 0, true);
  conv_bwd(B, 0);
}

bool live_together(const PlanBuffer& a, const PlanBuffer& b) { return a.first <= b.last && b.first <= a.last; }

// Greedy by size (as TensorFlow Lite's arena planner): the largest buffer first, each at the lowest
// offset where it overlaps no buffer already placed that is needed at a common operation.
void place(StepPlan& p, size_t align, bool share) {
  std::vector<size_t> order(p.buffers.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return p.buffers[a].bytes != p.buffers[b].bytes ? p.buffers[a].bytes > p.buffers[b].bytes
                                                    : p.buffers[a].first < p.buffers[b].first;
  });
  auto padded = [&](size_t bytes) { return (bytes + align - 1) / align * align; };
  std::vector<size_t> placed;
  p.total = 0;
  for (size_t id : order) {
    PlanBuffer& b = p.buffers[id];
    std::vector<std::pair<size_t, size_t>> taken;  // (offset, end) of the conflicting ones
    for (size_t o : placed)
      if (!share || live_together(p.buffers[o], b)) taken.push_back({p.buffers[o].offset, p.buffers[o].offset + padded(p.buffers[o].bytes)});
    std::sort(taken.begin(), taken.end());
    size_t at = 0;
    for (const auto& [o, e] : taken) {
      if (o >= at + padded(b.bytes)) break;
      at = std::max(at, e);
    }
    b.offset = at;
    p.total = std::max(p.total, at + padded(b.bytes));
    placed.push_back(id);
  }
}

void summarize(StepPlan& p, size_t align) {
  std::vector<size_t> live(p.ops.size(), 0);
  for (const PlanBuffer& b : p.buffers) {
    const size_t bytes = (b.bytes + align - 1) / align * align;
    p.apart[size_t(b.kind)] += bytes;
    for (int t = b.first; t <= b.last; ++t) live[size_t(t)] += bytes;
  }
  p.peak_op = int(std::max_element(live.begin(), live.end()) - live.begin());
  p.live_peak = live[size_t(p.peak_op)];
  for (const PlanBuffer& b : p.buffers)
    if (b.first <= p.peak_op && p.peak_op <= b.last) p.at_peak[size_t(b.kind)] += (b.bytes + align - 1) / align * align;
}

}  // namespace

StepPlan plan_step(const Net& n, const StepPlanInput& in) {
  Builder B(n, in);
  forward(B);
  backward(B);
  for (const PlanBuffer& b : B.p.buffers)
    if (b.last < 0) throw std::logic_error("the step's memory plan has a buffer no operation uses: " + b.what);
  place(B.p, in.align, in.share);
  summarize(B.p, in.align);
  return std::move(B.p);
}

std::string plan_conflict(const StepPlan& p) {
  for (size_t a = 0; a < p.buffers.size(); ++a)
    for (size_t b = a + 1; b < p.buffers.size(); ++b) {
      const PlanBuffer &x = p.buffers[a], &y = p.buffers[b];
      if (!live_together(x, y)) continue;
      if (x.offset < y.offset + y.bytes && y.offset < x.offset + x.bytes)
        return x.what + " and " + y.what + " overlap, both needed at " + p.ops[size_t(std::max(x.first, y.first))];
    }
  return "";
}

}  // namespace nb::resnet50
