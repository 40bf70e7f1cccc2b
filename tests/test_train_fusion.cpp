// The fused training step without a GPU: which batch-norm path each layer takes per setting,
// precision and layout, the record's details.fusion, the NODEBENCH_TRAIN_FUSION setting, how the
// kernels walk memory (16-byte vectors and their tail, the per-channel vector width, the batch-norm
// grid's coverage, the multi-tensor update's chunk table) and the memory-bound kinds' byte floor,
// each against expectations worked out here from the definitions.
#ifdef NB_HAVE_CUDNN
#include <array>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "bench/settings.hpp"
#include "kernels/train/train_vec.hpp"
#include "shared/resnet50/resnet50_net.hpp"
#include "shared/resnet50/train_fusion.hpp"

namespace nb {
namespace {

using namespace train;
using namespace kernels;

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(TrainFusionPath, Fp16NhwcTakesCudnnElsewhereTheStepsKernels) {
  for (BnAct a : {BnAct::relu, BnAct::add_relu, BnAct::none})
    EXPECT_EQ(choose_bn_path(Fusion::on, true, true, 64, a).path, BnPath::cudnn) << bn_act_name(a);
  // cuDNN's add-activation kernel needs the channels a multiple of 4; the ReLU alone does not (>= 8.2).
  const BnChoice odd = choose_bn_path(Fusion::on, true, true, 6, BnAct::add_relu);
  EXPECT_EQ(odd.path, BnPath::kernels);
  EXPECT_TRUE(has(odd.reason, "multiple of 4")) << odd.reason;
  EXPECT_EQ(choose_bn_path(Fusion::on, true, true, 6, BnAct::relu).path, BnPath::cudnn);
  const BnChoice fp32 = choose_bn_path(Fusion::on, false, true, 64, BnAct::relu);
  EXPECT_EQ(fp32.path, BnPath::kernels);
  EXPECT_TRUE(has(fp32.reason, "FP32/TF32")) << fp32.reason;
  const BnChoice nchw = choose_bn_path(Fusion::on, true, false, 64, BnAct::add_relu);
  EXPECT_EQ(nchw.path, BnPath::kernels);
  EXPECT_TRUE(has(nchw.reason, "NCHW")) << nchw.reason;
  EXPECT_EQ(choose_bn_path(Fusion::on, false, false, 2048, BnAct::none).path, BnPath::kernels);
}

// A ReLU layer whose output nothing else reads backward (the stem with the own max pool) takes
// the own kernels, which recompute the mask from the input; unfused, cuDNN's max pool reads it.
TEST(TrainFusionPath, AnOutputNotKeptTakesTheKernels) {
  for (Fusion f : {Fusion::on, Fusion::kernels})
    for (bool half : {false, true}) {
      const BnChoice c = choose_bn_path(f, half, true, 64, BnAct::relu, false);
      EXPECT_EQ(c.path, BnPath::kernels);
      EXPECT_TRUE(has(c.reason, "recompute its mask from the input")) << c.reason;
    }
  EXPECT_EQ(choose_bn_path(Fusion::off, true, true, 64, BnAct::relu, false).path, BnPath::unfused);
  EXPECT_EQ(choose_bn_path(Fusion::on, true, true, 64, BnAct::relu, true).path, BnPath::cudnn);
}

TEST(TrainFusionPath, SettingOffIsUnfusedKernelsIsKernelsEverywhere) {
  for (bool half : {false, true})
    for (bool nhwc : {false, true})
      for (BnAct a : {BnAct::relu, BnAct::add_relu, BnAct::none}) {
        EXPECT_EQ(choose_bn_path(Fusion::off, half, nhwc, 64, a).path, BnPath::unfused);
        EXPECT_EQ(choose_bn_path(Fusion::kernels, half, nhwc, 64, a).path, BnPath::kernels);
      }
  const BnChoice fb = fallback_after_not_supported("cudnnBatchNormalizationBackwardEx with X");
  EXPECT_EQ(fb.path, BnPath::kernels);
  EXPECT_TRUE(has(fb.reason, "CUDNN_STATUS_NOT_SUPPORTED for cudnnBatchNormalizationBackwardEx with X")) << fb.reason;
  EXPECT_STREQ(fusion_setting_name(Fusion::off), "0");
  EXPECT_STREQ(fusion_setting_name(Fusion::on), "1");
  EXPECT_STREQ(fusion_setting_name(Fusion::kernels), "kernels");
}

TEST(TrainFusionDetails, CountsLayersPerKindAndPathAndTheFusedOnes) {
  const BnChoice cud{BnPath::cudnn, "c"}, ker{BnPath::kernels, "k"}, unf{BnPath::unfused, "u"};
  const auto d = fusion_details(Fusion::on, {{BnAct::relu, cud}, {BnAct::relu, ker}, {BnAct::relu, unf},
                                             {BnAct::add_relu, cud}, {BnAct::none, cud}, {BnAct::none, ker}});
  EXPECT_EQ(d["setting"], "1");
  EXPECT_EQ(d["layers"]["bn_relu"], (nlohmann::json{{"cudnn", 1}, {"kernels", 1}, {"unfused", 1}}));
  EXPECT_EQ(d["layers"]["bn_add_relu"]["cudnn"], 1);
  EXPECT_EQ(d["layers"]["bn_add_relu"]["kernels"], 0);
  EXPECT_EQ(d["layers"]["bn"]["kernels"], 1);
  // Fused: a ReLU or an add inside the batch norm's passes; a plain batch norm fuses nothing.
  EXPECT_EQ(d["fused_layers"], 3);
  EXPECT_EQ(d["batch_norm_layers"], 6);
  EXPECT_EQ(d["reasons"], (nlohmann::json{"c", "k", "u"}));
}

TEST(TrainFusionSetting, ZeroOneKernelsAndABadValue) {
  EXPECT_EQ(fusion_setting(Settings::from_map({})), Fusion::on);
  EXPECT_EQ(fusion_setting(Settings::from_map({{"NODEBENCH_TRAIN_FUSION", "0"}})), Fusion::off);
  EXPECT_EQ(fusion_setting(Settings::from_map({{"NODEBENCH_TRAIN_FUSION", "1"}})), Fusion::on);
  const Settings k = Settings::from_map({{"NODEBENCH_TRAIN_FUSION", "kernels"}});
  EXPECT_EQ(fusion_setting(k), Fusion::kernels);
  EXPECT_EQ(k.to_json()["train_fusion"], "kernels");
  EXPECT_EQ(Settings::from_map({}).to_json()["train_fusion"], "1");
  std::vector<std::string> unknown;
  (void)Settings::from_map({{"NODEBENCH_TRAIN_FUSION", "0"}}, &unknown);
  EXPECT_TRUE(unknown.empty());
  try {
    (void)Settings::from_map({{"NODEBENCH_TRAIN_FUSION", "2"}});
    ADD_FAILURE() << "accepted 2";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "NODEBENCH_TRAIN_FUSION='2': must be 0, 1 or kernels")) << e.what();
  }
}

TEST(TrainVectors, WidthAndTail) {
  EXPECT_EQ(vec_width(2), 8);
  EXPECT_EQ(vec_width(4), 4);
  EXPECT_EQ(vec_width(16), 1);
  for (size_t n : {size_t(0), size_t(3), size_t(8), size_t(21), size_t(1000003)})
    for (int w : {1, 4, 8}) {
      const VecSplit s = vec_split(n, w);
      EXPECT_EQ(s.vectors * size_t(w) + s.tail, n) << n << " " << w;
      EXPECT_EQ(s.tail_begin, s.vectors * size_t(w));
      EXPECT_LT(s.tail, size_t(w));
    }
  EXPECT_EQ(vec_split(21, 8).vectors, 2u);
  EXPECT_EQ(vec_split(21, 8).tail, 5u);
  EXPECT_EQ(vec_split(3, 8).vectors, 0u);
  EXPECT_EQ(vec_split(5, 0).vectors, 5u);  // a width below 1 is one element a step
}

TEST(TrainVectors, ChannelWidthKeepsAVectorInOneChannelOrOneRow) {
  EXPECT_EQ(channel_vec_width(true, 64, 49, 2), 8);   // NHWC: 8 consecutive channels
  EXPECT_EQ(channel_vec_width(true, 12, 49, 2), 4);
  EXPECT_EQ(channel_vec_width(true, 6, 49, 2), 2);
  EXPECT_EQ(channel_vec_width(true, 3, 49, 4), 1);
  EXPECT_EQ(channel_vec_width(false, 64, 49, 2), 1);    // NCHW 7x7 planes: one element a step
  EXPECT_EQ(channel_vec_width(false, 64, 196, 2), 4);   // 196 = 4 x 49
  EXPECT_EQ(channel_vec_width(false, 64, 3136, 2), 8);
  EXPECT_EQ(channel_vec_width(false, 64, 196, 4), 4);
  EXPECT_EQ(channel_vec_width(false, 64, 50, 4), 2);
}

// Element (n, c, p) of each layout from nested loops, against channel_of.
TEST(TrainVectors, ChannelOfEveryElement) {
  const int64_t N = 3, C = 5, HW = 6;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t p = 0; p < HW; ++p) {
        EXPECT_EQ(channel_of(uint64_t((n * HW + p) * C + c), true, C, HW), c);
        EXPECT_EQ(channel_of(uint64_t((n * C + c) * HW + p), false, C, HW), c);
      }
}

TEST(TrainBnGrid, NchwItemsCoverEachElementOfTheirChannelOnce) {
  const int64_t N = 3, C = 4, HW = 12;
  EXPECT_EQ(bn_geometry(false, N, C, HW, 2, 132).width, 4);  // FP16: 8 does not divide 12, 4 does
  for (int width : {1, 2, 4})
    for (int64_t ch = 0; ch < C; ++ch) {
      std::multiset<uint64_t> seen;
      for (uint64_t j = 0; j < uint64_t(N * HW / width); ++j)
        for (int k = 0; k < width; ++k) seen.insert(nchw_item_offset(j, ch, C, HW, width) + uint64_t(k));
      std::multiset<uint64_t> expect;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t p = 0; p < HW; ++p) expect.insert(uint64_t((n * C + ch) * HW + p));
      EXPECT_EQ(seen, expect) << "width " << width << " channel " << ch;
    }
}

// The NHWC grid: every (row, channel vector) visited once by the kernel's loops.
void expect_nhwc_coverage(const BnGeometry& g, int64_t c) {
  ASSERT_EQ(g.threads_x * g.threads_y, 256);
  ASSERT_EQ(g.threads_y & (g.threads_y - 1), 0) << "the block's tree reduction needs a power of two";
  std::map<std::pair<int64_t, int64_t>, int> hits;
  for (int bx = 0; bx < g.blocks_x; ++bx)
    for (int tx = 0; tx < g.threads_x; ++tx) {
      const int64_t cv = int64_t(bx) * g.threads_x + tx;
      if (cv >= c / g.width) continue;
      for (int by = 0; by < g.chunks; ++by)
        for (int ty = 0; ty < g.threads_y; ++ty)
          for (int64_t r = int64_t(by) * g.threads_y + ty; r < g.rows; r += int64_t(g.chunks) * g.threads_y) ++hits[{r, cv}];
    }
  EXPECT_EQ(int64_t(hits.size()), g.rows * (c / g.width));
  for (const auto& [k, v] : hits) ASSERT_EQ(v, 1) << k.first << " " << k.second;
}

TEST(TrainBnGrid, NhwcCoversEveryRowAndChannelOnce) {
  const BnGeometry a = bn_geometry(true, 2, 64, 49, 2, 4);  // 8 channel vectors: 8 x 32 threads
  EXPECT_EQ(a.width, 8);
  EXPECT_EQ(a.threads_x, 8);
  EXPECT_EQ(a.blocks_x, 1);
  expect_nhwc_coverage(a, 64);
  const BnGeometry b = bn_geometry(true, 3, 2048, 9, 2, 4, BnGridTuning{4, 512});  // 256 vectors: 32 x 8 threads, 8 blocks across
  EXPECT_EQ(b.threads_x, 32);
  EXPECT_EQ(b.blocks_x, 8);
  expect_nhwc_coverage(b, 2048);
  const BnGeometry odd = bn_geometry(true, 2, 96, 5, 4, 4);  // 24 vectors of 4: 32-wide blocks, some idle
  expect_nhwc_coverage(odd, 96);
  expect_nhwc_coverage(bn_narrow(b, 2048), 2048);  // one element a step: the same rows, 2048 channels
  EXPECT_EQ(bn_narrow(b, 2048).blocks_x, 2048 / 32);
  // Rows of 128 bytes: 25 vectors of 4 floats in 8-wide blocks, the fourth block has one.
  const BnGeometry ragged = bn_geometry(true, 2, 100, 5, 4, 4, BnGridTuning{4, 128});
  EXPECT_EQ(ragged.threads_x, 8);
  EXPECT_EQ(ragged.blocks_x, 4);
  expect_nhwc_coverage(ragged, 100);
  expect_nhwc_coverage(bn_narrow(ragged, 100), 100);
  EXPECT_EQ(bn_narrow(ragged, 100).blocks_x, 13);  // ceil(100 / 8)
}

TEST(TrainBnGrid, NhwcRowsSpanAtMostTheirBytes) {
  // Rows of 512 bytes: a warp of vectors whatever their width (32 x 16 bytes).
  const BnGridTuning wide{4, 512};
  EXPECT_EQ(bn_geometry(true, 8, 2048, 49, 4, 132, wide).threads_x, 32);
  EXPECT_EQ(bn_geometry(true, 8, 63, 49, 4, 132, wide).threads_x, 32);
  EXPECT_EQ(bn_geometry(true, 8, 12, 49, 4, 132, wide).threads_x, 4);
  for (int elem : {2, 4})
    for (int64_t c = 1; c <= 4200; ++c) {  // the smallest power of two >= min(vectors, 32)
      const BnGeometry g = bn_geometry(true, 8, c, 49, elem, 132, wide);
      const int64_t want = std::min<int64_t>(c / g.width, 32);
      ASSERT_TRUE(g.threads_x >= want && g.threads_x < 2 * want) << c << " channels: " << g.threads_x;
      ASSERT_EQ(g.threads_x & (g.threads_x - 1), 0);
    }
  // The step's rows (kBnRowBytes), at most 128 bytes: threads_x x width x element bytes <= 128, and
  // no wider than the channel vectors there are (rounded up to a power of two), at most a warp.
  EXPECT_EQ(kBnRowBytes, 128);
  struct Case {
    int64_t c;
    int elem, width, tx;
  };
  for (const Case k : {Case{2048, 4, 4, 8}, Case{2048, 2, 8, 8}, Case{63, 4, 1, 32}, Case{1026, 4, 2, 16},
                       Case{1026, 2, 2, 32}, Case{12, 4, 4, 4}, Case{4, 4, 4, 1}}) {
    const BnGeometry g = bn_geometry(true, 8, k.c, 49, k.elem, 132);
    EXPECT_EQ(g.width, k.width) << k.c;
    EXPECT_EQ(g.threads_x, k.tx) << k.c << " channels of " << k.elem << " bytes";
    EXPECT_EQ(g.threads_y, 256 / k.tx);
    expect_nhwc_coverage(g, k.c);
  }
  // Twice the blocks per SM, twice the chunks (8 block columns: 66 -> 132, enough rows).
  EXPECT_EQ(bn_geometry(true, 256, 256, 3136, 4, 132, BnGridTuning{8, kBnRowBytes}).chunks,
            2 * bn_geometry(true, 256, 256, 3136, 4, 132).chunks);
  EXPECT_EQ(bn_geometry(true, 256, 256, 3136, 4, 132).chunks, 66);  // 64 vectors of 4 floats, 8 a row: ceil(528 / 8)
}

TEST(TrainBnGrid, ChunksFillTheGpuWithinTheirLimit) {
  // The stem at batch 256, FP16 NHWC on 132 SMs: one block across the 64 channels, so 4 x 132
  // chunks (each thread still has 3.2M / (528 x 32) > 8 rows).
  const BnGeometry stem = bn_geometry(true, 256, 64, 112 * 112, 2, 132);
  EXPECT_EQ(stem.rows, 256 * 112 * 112);
  EXPECT_EQ(stem.chunks, 528);
  // Little work: each thread at least bn_stats_unroll(8) = 4 rows, so few chunks: 98 rows / (8 x 4)
  // -> 4 with 32-wide rows, 98 / (32 x 4) -> 1 with 8-wide ones (rows of 128 bytes).
  EXPECT_EQ(bn_geometry(true, 2, 2048, 49, 2, 132, BnGridTuning{4, 512}).chunks, 4);
  EXPECT_EQ(bn_geometry(true, 2, 2048, 49, 2, 132).chunks, 1);
  // FP32 NCHW 512 x 7x7 at batch 64: scalar loads (49 odd), 16 a thread, so the 3136 items of a
  // channel are one block's (256 x 16 = 4096 >= 3136): one chunk, no partials to combine.
  const BnGeometry small = bn_geometry(false, 64, 512, 49, 4, 132);
  EXPECT_EQ(small.width, 1);
  EXPECT_EQ(small.chunks, 1);
  // 256 x 14x14: 4-wide (196 = 4 x 49), 4 a thread: 3136 items / 1024 -> 4 chunks, within ceil(528 / 256) = 3.
  EXPECT_EQ(bn_geometry(false, 64, 256, 196, 4, 132).chunks, 3);
  EXPECT_EQ(bn_stats_unroll(1), 16);
  EXPECT_EQ(bn_stats_unroll(2), 8);
  EXPECT_EQ(bn_stats_unroll(4), 4);
  EXPECT_EQ(bn_stats_unroll(8), 4);
  // More block columns than tickets: one chunk (every block its column's last), NCHW and NHWC.
  EXPECT_EQ(bn_geometry(false, 64, kBnMaxColumns + 1, 4096, 4, 100000).chunks, 1);
  EXPECT_GT(bn_geometry(false, 64, kBnMaxColumns, 4096, 4, 100000).chunks, 1);
  // NHWC FP32, 4-wide: 32 threads across, so c / 32 columns (those of the one-element grid).
  EXPECT_EQ(bn_geometry(true, 64, int64_t(32) * kBnMaxColumns + 4, 1, 4, 1 << 20, BnGridTuning{4, 512}).chunks, 1);
  EXPECT_GT(bn_geometry(true, 64, int64_t(32) * kBnMaxColumns, 1, 4, 1 << 20, BnGridTuning{4, 512}).chunks, 1);
  // Rows of 128 bytes: 8 threads across, c / 8 columns; 256 rows, 2 chunks where the tickets suffice.
  EXPECT_EQ(bn_geometry(true, 256, int64_t(8) * kBnMaxColumns + 4, 1, 4, 1 << 20, BnGridTuning{4, 128}).chunks, 1);
  EXPECT_GT(bn_geometry(true, 256, int64_t(8) * kBnMaxColumns, 1, 4, 1 << 20, BnGridTuning{4, 128}).chunks, 1);
  // NCHW, FP32 stem at batch 256: 64 channels x ceil(528 / 64) = 9 chunks.
  const BnGeometry n = bn_geometry(false, 256, 64, 112 * 112, 4, 132);
  EXPECT_EQ(n.blocks_x, 64);
  EXPECT_EQ(n.items, 256 * 112 * 112 / 4);
  EXPECT_EQ(n.chunks, 9);
  EXPECT_EQ(bn_geometry(true, 100000, 64, 12544, 2, 100000).chunks, kBnMaxChunks);
  EXPECT_EQ(bn_narrow(n, 64).items, 256 * 112 * 112);
  EXPECT_EQ(bn_narrow(n, 64).chunks, n.chunks);  // the same workspace
  // 3 partials per chunk and channel, 7 coefficient arrays of 64 channels, 32 bytes to align the table.
  EXPECT_EQ(bn_workspace_bytes(n, 64), size_t(3 * 9 * 64 + 7 * 64) * 4 + 32);
  // Each coefficient array a whole number of 32-byte rows (8 FP16 channels of an NHWC vector).
  EXPECT_EQ(bn_coef_stride(37), 40);
  EXPECT_EQ(bn_coef_stride(64), 64);
  EXPECT_EQ(bn_coef_stride(1), 8);
  EXPECT_EQ(bn_workspace_bytes(bn_geometry(false, 3, 37, 81, 4, 132), 37), size_t(3 * 1 * 37 + 7 * 40) * 4 + 32);
}

TEST(TrainUpdateTable, ChunksCoverEachElementOnceOnVectorBoundaries) {
  const std::vector<size_t> sizes = {100000, 70, 0, 65536};
  const auto t = mt_chunks(sizes);
  ASSERT_EQ(t.size(), 4u);  // 2 + 1 + 0 + 1
  EXPECT_EQ(t[0].tensor, 0u);
  EXPECT_EQ(t[1].begin, 65536u);
  EXPECT_EQ(t[1].count, 100000u - 65536u);
  EXPECT_EQ(t[2].tensor, 1u);
  EXPECT_EQ(t[2].count, 70u);
  EXPECT_EQ(t[3].tensor, 3u);
  EXPECT_EQ(t[3].count, 65536u);
  std::vector<std::vector<int>> hits(sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) hits[i].assign(sizes[i], 0);
  for (const auto& ch : t) {
    EXPECT_EQ(ch.begin % 8, 0u);
    EXPECT_LE(ch.count, kMtChunkElems);
    for (uint64_t e = ch.begin; e < ch.begin + ch.count; ++e) ++hits[ch.tensor].at(e);
  }
  for (const auto& h : hits)
    for (int v : h) ASSERT_EQ(v, 1);
  // A chunk size that is not a multiple of the widest vector (8 FP16) is rounded up to one, so
  // every chunk of a tensor but its last starts and ends on a vector boundary: 10 = 8 + 2.
  const auto small = mt_chunks({10, 21}, 4);
  ASSERT_EQ(small.size(), 5u);  // 8 + 2, then 8 + 8 + 5
  for (const auto& ch : small) EXPECT_EQ(ch.begin % kMtChunkAlign, 0u) << ch.tensor << " " << ch.begin;
  EXPECT_EQ(small[1].count, 2u);
  EXPECT_EQ(small[4].begin, 16u);
  EXPECT_EQ(small[4].count, 5u);
  EXPECT_EQ(mt_chunks({24}, 9).size(), 2u);  // 9 -> 16: 16 + 8
}

// Fake addresses (never dereferenced): the decision of the update's kernels between 16-byte
// vectors and one element a step, per chunk, from each pointer's alignment at the chunk's start.
const void* at_address(uintptr_t a) { return reinterpret_cast<const void*>(a); }

TEST(TrainUpdateTable, VectorsOnlyWhereEveryPointerIsAlignedAtTheChunk) {
  // The update's pointers: w, v (FP32), g (FP16), copy (FP16); 4 elements a step.
  const int elem[4] = {4, 4, 2, 2};
  const void* aligned[4] = {at_address(0x10000), at_address(0x20000), at_address(0x30000), at_address(0x40000)};
  EXPECT_TRUE(mt_chunk_vectorizable(aligned, elem, 4, 0, 4));
  EXPECT_TRUE(mt_chunk_vectorizable(aligned, elem, 4, 65536, 4));
  EXPECT_TRUE(mt_chunk_vectorizable(aligned, elem, 4, 8, 4));
  // Element 2: w + 8 bytes is not on a 16-byte float4 boundary (g + 4 bytes not on 8 either).
  EXPECT_FALSE(mt_chunk_vectorizable(aligned, elem, 4, 2, 4));
  // One pointer off by one element: FP16 gradients 2 bytes past 8-byte alignment.
  const void* g_off[4] = {aligned[0], aligned[1], at_address(0x30002), aligned[3]};
  EXPECT_FALSE(mt_chunk_vectorizable(g_off, elem, 4, 0, 4));
  // A master-weight pointer 8 bytes off 16: FP32 w's float4 would straddle; the FP16 g at 8-byte
  // alignment alone would pass, so the test fails an implementation that checks one element size.
  const void* w_off[4] = {at_address(0x10008), aligned[1], aligned[2], aligned[3]};
  EXPECT_FALSE(mt_chunk_vectorizable(w_off, elem, 4, 0, 4));
  // Chunk start 4 elements in: w + 16 bytes, g + 8 bytes: both aligned to their 4-element vectors.
  EXPECT_TRUE(mt_chunk_vectorizable(aligned, elem, 4, 4, 4));
  // No FP16 copy (FP32 training): a null pointer is not checked.
  const void* no_copy[4] = {aligned[0], aligned[1], aligned[2], nullptr};
  EXPECT_TRUE(mt_chunk_vectorizable(no_copy, elem, 4, 4, 4));
  // The non-finite check: 8 FP16 at once needs 16 bytes at the chunk's start.
  const int half[1] = {2};
  const void* g16[1] = {at_address(0x30000)};
  const void* g8[1] = {at_address(0x30008)};
  EXPECT_TRUE(mt_chunk_vectorizable(g16, half, 1, 8, 8));
  EXPECT_FALSE(mt_chunk_vectorizable(g16, half, 1, 4, 8));
  EXPECT_FALSE(mt_chunk_vectorizable(g8, half, 1, 0, 8));
  EXPECT_TRUE(mt_chunk_vectorizable(g8, half, 1, 4, 8));  // 0x30008 + 8 bytes = 0x30010
  EXPECT_TRUE(mt_chunk_vectorizable(g8, half, 1, 3, 1));  // one element a step: always
}

// The max pool's backward gathers, for each input position, the outputs whose window covers it:
// against every output's window enumerated, for the step's 3x3 stride 2 pad 1 and other shapes.
TEST(TrainMaxPool, CoverIsExactlyTheWindowsHoldingAnInput) {
  struct Case {
    int in, k, s, p;
  };
  for (const Case cs : {Case{112, 3, 2, 1}, Case{7, 3, 2, 1}, Case{9, 2, 2, 0}, Case{10, 3, 1, 1}, Case{11, 5, 3, 2}}) {
    const int out = (cs.in + 2 * cs.p - cs.k) / cs.s + 1;
    for (int i = 0; i < cs.in; ++i) {
      std::set<int> want;
      for (int o = 0; o < out; ++o)
        if (o * cs.s - cs.p <= i && i <= o * cs.s - cs.p + cs.k - 1) want.insert(o);
      int lo = 0, hi = -1;
      pool_cover(i, cs.k, cs.s, cs.p, out, lo, hi);
      std::set<int> got;
      for (int o = lo; o <= hi; ++o) got.insert(o);
      ASSERT_EQ(got, want) << "input " << i << " of " << cs.in << ", k " << cs.k << " s " << cs.s << " p " << cs.p;
    }
  }
}

// The batch-norm kernels' arithmetic on the host, as the kernels run it: per-thread shifted sums
// (x - first value) in FP32 turned into (count, mean, M2), combined by Chan's formula across
// "threads" and "chunks", the finalize, the apply; then backward's sums and coefficients.
// Against float64 from the definitions: a two-pass mean and variance, and dx by central finite
// differences of L = sum(dy * relu(BN(x))) (an independent expectation for the formula of dx).
struct HostBn {
  std::vector<double> x, dy;
  double gamma = 1.3, beta = -0.2, eps = 1e-5;
};

// y = relu(gamma (x - mean) / sqrt(var + eps) + beta) in float64.
std::vector<double> bn_relu_ref(const HostBn& h, const std::vector<double>& x) {
  double mean = 0, var = 0;
  for (double v : x) mean += v;
  mean /= double(x.size());
  for (double v : x) var += (v - mean) * (v - mean);
  var /= double(x.size());
  std::vector<double> y;
  for (double v : x) y.push_back(std::max(0.0, h.gamma * (v - mean) / std::sqrt(var + h.eps) + h.beta));
  return y;
}

TEST(TrainBnMath, StatisticsApplyAndGradientMatchFloat64) {
  HostBn h;
  uint64_t state = 12345;
  auto rnd = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return double(state >> 11) / double(1ull << 53) * 2 - 1;
  };
  const int n = 333;
  // Values exact in FP32 (what the kernels load), the mean far from 0 against the spread.
  for (int i = 0; i < n; ++i) h.x.push_back(double(float(1000.0 + 0.5 * rnd()))), h.dy.push_back(rnd());
  // Forward: 5 chunks of 3 threads, each thread a strided share, summaries as the kernels hold them.
  float cn = 0, cm = 0, cq = 0;
  double dn = 0, dm = 0, dq = 0;
  std::vector<std::array<double, 3>> parts;  // each chunk's (count, mean, M2)
  for (int chunk = 0; chunk < 5; ++chunk) {
    float bn = 0, bm = 0, bq = 0;
    for (int t = 0; t < 3; ++t) {
      float k = 0, s = 0, q = 0;
      int cnt = 0;
      for (int i = chunk * 3 + t; i < n; i += 15) {
        const float v = float(h.x[size_t(i)]);
        if (cnt == 0) k = v;
        s += v - k, q += (v - k) * (v - k), ++cnt;
      }
      const float tn = float(cnt), tm = cnt ? k + s / tn : 0.f, tq = cnt ? std::max(q - s * s / tn, 0.f) : 0.f;
      chan_combine(bn, bm, bq, tn, tm, tq);
    }
    chan_combine(dn, dm, dq, double(bn), double(bm), double(bq));
    chan_combine(cn, cm, cq, bn, bm, bq);
    parts.push_back({bn, bm, bq});
  }
  // The kernels' finalize: the chunks as shifted sums in FP64 around the first chunk's mean, each
  // of 2 threads adding every other chunk, then their sums added.
  double sv[2][3] = {};
  for (size_t g = 0; g < parts.size(); ++g) bn_shifted_add(sv[g % 2], parts[0][1], parts[g][0], parts[g][1], parts[g][2]);
  const double tot[3] = {sv[0][0] + sv[1][0], sv[0][1] + sv[1][1], sv[0][2] + sv[1][2]};
  double smean = 0, sm2 = 0;
  bn_shifted_result(tot, parts[0][1], smean, sm2);
  double mean = 0, m2 = 0;
  for (double v : h.x) mean += v;
  mean /= n;
  for (double v : h.x) m2 += (v - mean) * (v - mean);
  EXPECT_EQ(dn, n);
  EXPECT_NEAR(dm, mean, 6.2e-5);  // one FP32 unit at 1000: the blocks combine in FP32
  EXPECT_NEAR(dq / n, m2 / n, 1e-4 * m2 / n);  // where sum(x^2) - sum(x)^2 / n in FP32 would lose it all
  EXPECT_EQ(tot[0], n);
  EXPECT_NEAR(smean, mean, 6.2e-5);
  EXPECT_NEAR(sm2 / n, m2 / n, 1e-4 * m2 / n);
  EXPECT_NEAR(smean, dm, 1e-9 * std::abs(dm));  // the same result as Chan's combination in FP64
  EXPECT_NEAR(sm2, dq, 1e-9 * dq);
  float run_mean = 0, run_var = 1, save_mean = 0, save_inv = 0, fc[3];
  bn_forward_finalize(dn, dm, dq, float(h.gamma), float(h.beta), h.eps, 0.1, run_mean, run_var, save_mean, save_inv, fc);
  EXPECT_NEAR(save_inv, 1 / std::sqrt(m2 / n + h.eps), 1e-4 / std::sqrt(m2 / n));
  EXPECT_NEAR(run_mean, 0.1 * mean, 1e-4);
  EXPECT_NEAR(run_var, 0.9 + 0.1 * m2 / (n - 1), 1e-6);  // the unbiased variance (biased: 2.5e-5 less)
  const auto yref = bn_relu_ref(h, h.x);
  for (int i = 0; i < n; ++i) {
    const float y = std::max(0.f, (float(h.x[size_t(i)]) - fc[0]) * fc[1] + fc[2]);
    ASSERT_NEAR(y, yref[size_t(i)], 5e-3) << i;
  }
  // Backward: the sums over g = dy masked by y > 0, and dx from the coefficients.
  double sg = 0, sgx = 0;
  for (int i = 0; i < n; ++i) {
    const float y = std::max(0.f, (float(h.x[size_t(i)]) - fc[0]) * fc[1] + fc[2]);
    const float g = y > 0 ? float(h.dy[size_t(i)]) : 0.f;
    sg += g, sgx += g * (float(h.x[size_t(i)]) - save_mean) * save_inv;
  }
  float dgamma = 0, dbeta = 0, bc[4];
  bn_backward_coefficients(sg, sgx, n, float(h.gamma), save_mean, save_inv, dgamma, dbeta, bc);
  double worst = 0, scale = 0;
  for (int i : {0, 7, 100, 211, 332}) {
    auto loss = [&](double xi) {
      std::vector<double> x = h.x;
      x[size_t(i)] = xi;
      const auto y = bn_relu_ref(h, x);
      double l = 0;
      for (int j = 0; j < n; ++j) l += h.dy[size_t(j)] * y[size_t(j)];
      return l;
    };
    const double step = 1e-6, fd = (loss(h.x[size_t(i)] + step) - loss(h.x[size_t(i)] - step)) / (2 * step);
    const float yi = std::max(0.f, (float(h.x[size_t(i)]) - fc[0]) * fc[1] + fc[2]);
    const float g = yi > 0 ? float(h.dy[size_t(i)]) : 0.f;
    const double dx = bc[0] * g + bc[1] * (float(h.x[size_t(i)]) - bc[2]) + bc[3];
    worst = std::max(worst, std::fabs(dx - fd));
    scale = std::max(scale, std::fabs(fd));
  }
  EXPECT_GT(scale, 0.1);
  EXPECT_LE(worst, 2e-3 * scale) << "dx from the coefficients against finite differences";
  // dgamma and dbeta against their definitions: sum(g xhat) and sum(g).
  EXPECT_FLOAT_EQ(dgamma, float(sgx));
  EXPECT_FLOAT_EQ(dbeta, float(sg));
}

// The byte floor against a count by stage: per image, the outputs of the layers followed by a
// ReLU (stem, conv1, conv2), by the add and ReLU (conv3) and by nothing (the projections).
TEST(TrainByteFloor, MatchesAHandCountByStage) {
  int64_t relu = 64 * 112 * 112, join = 0, proj = 0;
  const int64_t mids[4] = {64, 128, 256, 512}, counts[4] = {3, 4, 6, 3}, in_hw[4] = {56, 56, 28, 14};
  for (int s = 0; s < 4; ++s) {
    const int64_t m = mids[s], hi = in_hw[s], ho = s == 0 ? 56 : hi / 2;
    relu += m * hi * hi + m * ho * ho + (counts[s] - 1) * 2 * m * ho * ho;
    join += counts[s] * 4 * m * ho * ho;
    proj += 4 * m * ho * ho;
  }
  const auto f1 = resnet50::memory_bound_floor(resnet50::net(), 1, 2);
  // forward x, y (+ residual); backward x, dy, mask, dx (+ dz; no mask for a projection).
  EXPECT_EQ(f1.bn, (6 * relu + 8 * join + 5 * proj) * 2);
  EXPECT_EQ(f1.elementwise, 0);
  const int64_t stem = 64 * 112 * 112, pooled = 64 * 56 * 56, last = 2048 * 49, feat = 2048;
  EXPECT_EQ(f1.pool, (3 * stem + 2 * pooled + 2 * (last + feat)) * 2);
  const int64_t fp32 = resnet50::net().bn_parameter_count() + 1000, compute = 25557032 - fp32;
  EXPECT_EQ(f1.update, compute * (16 + 2 + 2) + fp32 * 20);  // FP16 gradient read, FP16 copy written
  const auto f64 = resnet50::memory_bound_floor(resnet50::net(), 64, 2);
  EXPECT_EQ(f64.bn, 64 * f1.bn);
  EXPECT_EQ(f64.update, f1.update);  // independent of the batch
  EXPECT_EQ(resnet50::memory_bound_floor(resnet50::net(), 1, 4).update, 25557032 * 20);  // FP32: no copy
  EXPECT_EQ(f1.total(), f1.bn + f1.pool + f1.update);
}

}  // namespace
}  // namespace nb
#endif
