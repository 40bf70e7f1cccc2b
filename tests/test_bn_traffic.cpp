// The arithmetic of the training step's batch-norm passes that needs no GPU: the FastDiv their
// elementwise passes and NCHW reductions divide with (against the division operator), the channel
// of each lane of a vector (against the layout's nested loops), and the bytes each pass must move
// (kernels/train/bn_traffic.hpp, against the tensors each pass reads and writes, listed here).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "kernels/train/bn_traffic.hpp"
#include "kernels/train/train_vec.hpp"

namespace nb::kernels {
namespace {

TEST(BnFastDiv, MatchesTheDivisionOperator) {
  std::vector<uint64_t> divisors = {1, 2, 3, 5, 7, 9, 25, 49, 64, 81, 196, 784, 3136, 12544, 1000003,
                                    (1ull << 31) - 1, 1ull << 31, (1ull << 32) - 1};
  std::mt19937_64 rng(42);
  for (int i = 0; i < 200; ++i) divisors.push_back(1 + rng() % ((1ull << 32) - 1));
  for (uint64_t d : divisors) {
    const FastDiv f = make_fast_div(d);
    std::vector<uint64_t> ns = {0, 1, d - 1, d, d + 1, 2 * d - 1, 2 * d, (1ull << 32) - 1, 1ull << 32, (1ull << 63) - 1,
                                (1ull << 63) - d};
    for (int k = 0; k < 300; ++k) ns.push_back(rng() >> (1 + rng() % 63));  // every magnitude below 2^63
    for (uint64_t n : ns) {
      ASSERT_EQ(fast_div(n, f), n / d) << n << " / " << d;
      ASSERT_EQ(fast_mod(n, f), n % d) << n << " % " << d;
    }
  }
  EXPECT_EQ(make_fast_div(0).d, 1u);  // a zero divisor is taken as 1, never a division by zero
}

// The channel of each element of an n x c x hw tensor, from the layout's nested loops.
std::vector<uint32_t> channels_by_loops(int64_t n, int64_t c, int64_t hw, bool nhwc) {
  std::vector<uint32_t> out(size_t(n * c * hw));
  for (int64_t img = 0; img < n; ++img)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < hw; ++p) out[size_t(nhwc ? (img * hw + p) * c + ch : (img * c + ch) * hw + p)] = uint32_t(ch);
  return out;
}

template <int L>
void expect_lanes(int64_t n, int64_t c, int64_t hw, bool nhwc) {
  const auto ref = channels_by_loops(n, c, hw, nhwc);
  const ChanDims d = chan_dims(nhwc, c, hw);
  for (uint64_t i0 = 0; i0 + L <= ref.size(); ++i0) {
    uint32_t ch[L];
    const bool one = lane_channels<L>(i0, d, ch);
    bool same = true;
    for (int k = 0; k < L; ++k) {
      ASSERT_EQ(ch[k], ref[i0 + uint64_t(k)]) << (nhwc ? "nhwc" : "nchw") << " c" << c << " hw" << hw << " at " << i0
                                              << " lane " << k;
      same = same && ch[k] == ch[0];
    }
    // "One channel" is a promise the pass relies on (it loads lane 0's coefficients for all):
    // never made for lanes of two channels; made for every NCHW vector inside one plane.
    if (one) ASSERT_TRUE(same) << i0;
    if (!nhwc) ASSERT_EQ(one, (i0 % uint64_t(hw)) + L <= uint64_t(hw)) << i0;
  }
}

TEST(BnLaneChannels, EveryLaneOfEveryVectorInBothLayouts) {
  // Odd shapes: c below and not a multiple of the vector, hw 1 and odd, one image; ResNet-50's 7x7.
  const int64_t shapes[][3] = {{2, 5, 3}, {1, 3, 1}, {3, 1, 7}, {2, 2, 2}, {1, 37, 9}, {2, 64, 49}, {1, 6, 25}};
  for (const auto& s : shapes)
    for (bool nhwc : {false, true}) {
      expect_lanes<1>(s[0], s[1], s[2], nhwc);
      expect_lanes<4>(s[0], s[1], s[2], nhwc);
      expect_lanes<8>(s[0], s[1], s[2], nhwc);
    }
}

TEST(BnLaneChannels, NchwWalkVisitsThePlainOffsets) {
  // A thread of the NCHW reductions starts at item j0 (< step) of its channel, its image found by
  // the FastDiv, then walks by the grid's step; every offset is nchw_item_offset's. Steps below,
  // at and above a plane's items, and many planes at once.
  const int64_t N = 7, C = 5;
  for (int64_t hw : {1, 7, 12, 49})
    for (int width : {1, 2, 4}) {
      if (hw % width) continue;
      const uint64_t per_plane = uint64_t(hw / width), items = uint64_t(N) * per_plane;
      const FastDiv pp = make_fast_div(per_plane);
      for (uint64_t step : {uint64_t(1), uint64_t(3), per_plane - 1 + (per_plane == 1), per_plane, per_plane + 1,
                            3 * per_plane + 2, items - 1 + (items == 1), items + 5}) {
        const NchwStride st = nchw_stride(step, C, hw, width);
        std::set<uint64_t> seen;
        for (int64_t ch = 0; ch < C; ++ch)
          for (uint64_t j0 = 0; j0 < step && j0 < items; ++j0) {
            NchwWalk w;
            w.start(j0, uint64_t(ch), uint64_t(C), uint64_t(hw), width, pp);
            for (uint64_t j = j0; j < items; j += step, w.advance(st)) {
              ASSERT_EQ(w.off, nchw_item_offset(j, ch, C, hw, width)) << hw << " " << width << " " << step << " " << j;
              ASSERT_TRUE(seen.insert(w.off).second) << "visited twice: " << w.off;
            }
          }
        EXPECT_EQ(seen.size(), size_t(N * C * hw / width)) << hw << " " << width << " " << step;  // every vector once
      }
    }
}

// What each pass reads and writes, as the kernels' launches pass their tensors.
struct PassTensors {
  std::vector<const char*> reads, writes;
};
PassTensors tensors_of(BnPass p, bool add) {
  switch (p) {
    case BnPass::fwd_stats: return {{"x"}, {}};
    case BnPass::fwd_apply: return add ? PassTensors{{"x", "residual"}, {"y"}} : PassTensors{{"x"}, {"y"}};
    case BnPass::bwd_reduce: return add ? PassTensors{{"x", "dy", "y"}, {"dz"}} : PassTensors{{"x", "dy"}, {}};
    case BnPass::bwd_apply: return add ? PassTensors{{"x", "dz"}, {"dx"}} : PassTensors{{"x", "dy"}, {"dx"}};
  }
  return {};
}

TEST(BnTraffic, BytesAreTheTensorsEachPassMoves) {
  const int64_t stem_b256 = int64_t(256) * 64 * 112 * 112;
  for (bool add : {false, true})
    for (int p = 0; p < kBnPasses; ++p) {
      const PassTensors t = tensors_of(BnPass(p), add);
      const size_t moved = t.reads.size() + t.writes.size();
      EXPECT_EQ(bn_pass_tensors(BnPass(p), add), int(moved)) << bn_pass_name(BnPass(p)) << " add " << add;
      for (int elem : {2, 4})
        EXPECT_DOUBLE_EQ(bn_pass_bytes(BnPass(p), stem_b256, elem, add), double(moved) * double(stem_b256) * elem);
    }
  // Backward at most two passes over the data, each tensor of a pass once: 5 tensors without the
  // add (x and dy twice, dx), 7 with it (the first pass writes dz, the second reads it back).
  int bwd = 0, bwd_add = 0;
  for (BnPass p : {BnPass::bwd_reduce, BnPass::bwd_apply}) bwd += bn_pass_tensors(p, false), bwd_add += bn_pass_tensors(p, true);
  EXPECT_EQ(bwd, 5);
  EXPECT_EQ(bwd_add, 7);
  EXPECT_STREQ(bn_pass_name(BnPass::bwd_apply), "bwd_apply");
}

}  // namespace
}  // namespace nb::kernels
