// The arithmetic of how the training step's own kernels walk memory (family train): 16-byte
// vectors with a scalar tail, the vector width of a per-channel pass, the batch-norm reduction's
// grid and the multi-tensor update's chunk table. Plain C++ (host and device), so that the unit
// tests check it without a GPU; the kernels (train_kernels.cu, train_bn_kernels.cu) use the same
// functions.
#pragma once
#include <cstddef>
#include <cmath>
#include <cstdint>
#include <vector>

#if defined(__CUDACC__)
#define NB_VEC_HD __host__ __device__
#else
#define NB_VEC_HD
#endif

namespace nb::kernels {

constexpr int kVecBytes = 16;  // one LDG.128 / STG.128 per thread and step
constexpr unsigned kVecThreads = 256;

// Elements per 16-byte access: 4 FP32, 8 FP16.
NB_VEC_HD constexpr int vec_width(int elem_bytes) { return elem_bytes >= kVecBytes ? 1 : kVecBytes / elem_bytes; }

// n elements as `vectors` vectors of `width` elements ([0, tail_begin)) and a scalar tail
// [tail_begin, n) of tail < width elements.
struct VecSplit {
  size_t vectors = 0, tail_begin = 0, tail = 0;
};
NB_VEC_HD inline VecSplit vec_split(size_t n, int width) {
  VecSplit s;
  const size_t w = width < 1 ? 1 : size_t(width);
  s.vectors = n / w;
  s.tail_begin = s.vectors * w;
  s.tail = n - s.tail_begin;
  return s;
}

// The width of a per-channel pass (batch norm's apply, average pool's backward) over an n x c x hw
// tensor: the largest power of two w <= 16 / elem_bytes such that each w-element vector has one
// channel (nchw: w divides hw, so a vector never crosses a channel plane) or w consecutive
// channels of one position (nhwc: w divides c). ResNet-50's 7x7 planes (49) take w = 1 in NCHW.
NB_VEC_HD inline int channel_vec_width(bool nhwc, int64_t c, int64_t hw, int elem_bytes) {
  const int64_t along = nhwc ? c : hw;
  int w = vec_width(elem_bytes);
  while (w > 1 && (along % w) != 0) w /= 2;
  return w;
}

// Division by a divisor fixed at launch (1 <= d < 2^32) of a numerator below 2^63, as a
// multiply-high, an add and a shift instead of a 64-bit division (dozens of instructions on a
// GPU: per element of a memory-bound pass that is as much time as the memory's). The round-up
// method of Granlund and Montgomery (1994): s = ceil(log2 d), m = floor(2^64 (2^s - d) / d) + 1,
// then n / d = (mulhi64(n, m) + n) >> s, exact for every n < 2^64 as long as the sum does not
// overflow (mulhi64(n, m) < n, so n < 2^63 is enough). make_fast_div is host code.
struct FastDiv {
  uint64_t d = 1, m = 1;
  int s = 0;
};
inline FastDiv make_fast_div(uint64_t d) {
  __extension__ typedef unsigned __int128 u128;
  FastDiv f;
  f.d = d < 1 ? 1 : d;
  while ((uint64_t(1) << f.s) < f.d) ++f.s;
  f.m = uint64_t((u128(1) << 64) * u128((uint64_t(1) << f.s) - f.d) / f.d) + 1;
  return f;
}
NB_VEC_HD inline uint64_t fast_div(uint64_t n, const FastDiv& f) {
#if defined(__CUDA_ARCH__)
  const uint64_t hi = __umul64hi(n, f.m);
#else
  __extension__ typedef unsigned __int128 u128;
  const uint64_t hi = uint64_t((u128(n) * f.m) >> 64);
#endif
  return (hi + n) >> f.s;
}
NB_VEC_HD inline uint64_t fast_mod(uint64_t n, const FastDiv& f) { return n - fast_div(n, f) * f.d; }

// An n x c x hw tensor's dimensions as the per-element passes divide by them.
struct ChanDims {
  bool nhwc = false;
  FastDiv c, hw;
};
inline ChanDims chan_dims(bool nhwc, int64_t c, int64_t hw) { return {nhwc, make_fast_div(uint64_t(c)), make_fast_div(uint64_t(hw))}; }

// The channels of the L consecutive elements i0 .. i0 + L - 1 of such a tensor (any L, any c and
// hw: a vector may cross channel planes in NCHW, or wrap around the channels in NHWC); returns
// whether they are all one channel (NCHW: the vector inside one plane), so that a pass loads
// that channel's coefficients once.
template <int L>
NB_VEC_HD inline bool lane_channels(uint64_t i0, const ChanDims& d, uint32_t (&ch)[L]) {
  const uint32_t c = uint32_t(d.c.d);
  if (d.nhwc) {
    ch[0] = uint32_t(fast_mod(i0, d.c));
#pragma unroll
    for (int k = 1; k < L; ++k) ch[k] = ch[k - 1] + 1 == c ? 0u : ch[k - 1] + 1;
    return L == 1 || c == 1;
  }
  const uint64_t plane = fast_div(i0, d.hw);
  uint64_t off = i0 - plane * d.hw.d;
  ch[0] = uint32_t(fast_mod(plane, d.c));
  const bool one = off + uint64_t(L) <= d.hw.d;
#pragma unroll
  for (int k = 1; k < L; ++k) {
    ch[k] = ch[k - 1];
    if (++off == d.hw.d) off = 0, ch[k] = ch[k] + 1 == c ? 0u : ch[k] + 1;
  }
  return one;
}

// The channel of element i of an n x c x hw tensor.
NB_VEC_HD inline int64_t channel_of(uint64_t i, bool nhwc, int64_t c, int64_t hw) {
  return nhwc ? int64_t(i % uint64_t(c)) : int64_t((i / uint64_t(hw)) % uint64_t(c));
}

// NCHW batch-norm reduction: the offset of item j of channel ch, items walking the n planes of
// that channel in width-element vectors (hw / width of them per plane).
NB_VEC_HD inline uint64_t nchw_item_offset(uint64_t j, int64_t ch, int64_t c, int64_t hw, int width) {
  const uint64_t per_plane = uint64_t(hw / width);
  const uint64_t img = j / per_plane, v = j - img * per_plane;
  return (img * uint64_t(c) + uint64_t(ch)) * uint64_t(hw) + v * uint64_t(width);
}

// The same offsets walked: a thread of an NCHW reduction visits items j, j + step, j + 2 step, ...
// of its channel; NchwWalk keeps item j's offset and its place in its plane, so each next item
// costs a few additions (nchw_stride, once per launch on the host) instead of a 64-bit division and
// multiplications. hw a multiple of width (channel_vec_width makes it one in NCHW).
struct NchwStride {
  uint64_t off = 0;   // the offset's change for a step that stays within its image's plane
  uint64_t wrap = 0;  // the further change when the step passes the plane's end: to the next image
  uint32_t v = 0;     // items the step moves within a plane: step % per_plane
  uint32_t per_plane = 1;
};
NB_VEC_HD inline NchwStride nchw_stride(uint64_t step, int64_t c, int64_t hw, int width) {
  NchwStride s;
  s.per_plane = uint32_t(hw / width);
  const uint64_t images = step / s.per_plane;
  s.v = uint32_t(step - images * s.per_plane);
  s.off = images * uint64_t(c) * uint64_t(hw) + uint64_t(s.v) * uint64_t(width);
  s.wrap = uint64_t(c) * uint64_t(hw) - uint64_t(hw);  // plane end of image i to plane start of i + 1
  return s;
}
struct NchwWalk {
  uint64_t off = 0;
  uint32_t v = 0;
  // Item j of channel ch (per_plane: hw / width items a plane; image j / per_plane, place
  // j % per_plane).
  NB_VEC_HD void start(uint64_t j, uint64_t ch, uint64_t c, uint64_t hw, int width, const FastDiv& per_plane) {
    const uint64_t image = fast_div(j, per_plane), place = j - image * per_plane.d;
    v = uint32_t(place);
    off = (image * c + ch) * hw + place * uint64_t(width);
  }
  NB_VEC_HD void advance(const NchwStride& s) {
    off += s.off;
    v += s.v;
    if (v >= s.per_plane) v -= s.per_plane, off += s.wrap;
  }
};

// The grid of batch norm's reductions (statistics forward, the two sums backward), one launch
// each. Each block writes one partial result per channel it covers and chunk (blockIdx.y); the
// last of a column's `chunks` blocks to finish (an atomic ticket per column, kBnMaxColumns of
// them) combines the column's partials and writes the per-channel results, so no second kernel
// (NCHW, one chunk: each block writes its channel's results from its own summary, no partials).
//   nhwc: the tensor is rows = n * hw rows of c channels; threads_x threads cover threads_x
//         consecutive channel vectors of `width` channels, threads_y rows at a time; blocks_x
//         blocks across the channel vectors;
//   nchw: one block column per channel (blocks_x = c), threads_x = 256 threads walk its items.
struct BnGeometry {
  bool nhwc = false;
  int width = 1;
  int threads_x = 1, threads_y = 1;
  int blocks_x = 1, chunks = 1;
  int64_t rows = 0;   // nhwc: n * hw
  int64_t items = 0;  // nchw: items per channel, n * hw / width
};
constexpr int kBnMaxChunks = 1024;
// Block columns with a ticket each: a wider grid (c above it in NCHW) runs one chunk, where each
// block is its column's last and needs none.
constexpr int kBnMaxColumns = 1 << 16;
// Blocks per multiprocessor the reductions aim at (256 threads each: half an SM's threads on the
// GPUs from sm_61 on, so registers never limit the grid to fewer resident blocks).
constexpr int kBnBlocksPerSm = 4;
// Bytes of channel vectors the threads_x threads of an NHWC block row cover at most: 128 (one
// line, four 32-byte sectors: 8 threads of 16-byte vectors). Wider rows (512: a warp of vectors)
// give fewer block columns with more chunks each, so a column's last block combines more partials
// (with 32 vectors of 4 floats, 528 chunks of 128 channels); measured on an H100 with
// nodebench_bn_bandwidth (results/h100/2026-12-07-bn-grid/), the NHWC statistics pass is faster
// with 128-byte rows at b64 and b256 and the NHWC passes together at b64, the same at b256 within
// the runs' spread. Other widths: NODEBENCH_TRAIN_BN_ROW_BYTES, --row-bytes of the tool.
constexpr int kBnRowBytes = 128;

// What the reductions' grid aims at; the defaults are the step's, other values are for the
// bandwidth tool's sweeps (nodebench_bn_bandwidth --blocks-per-sm, --row-bytes).
struct BnGridTuning {
  int blocks_per_sm = kBnBlocksPerSm;
  int row_bytes = kBnRowBytes;
};

// Vectors of `width` elements each thread of the statistics pass loads before it adds them (its
// loads in flight): 16 elements, at least 4 vectors. The grid gives each thread at least this many,
// so a small layer (7x7 planes: scalar loads in NCHW) issues all its loads at once instead of
// spreading a few over many blocks that then wait on each other's partials.
NB_VEC_HD constexpr int bn_stats_unroll(int width) { return width >= 4 ? 4 : 16 / (width < 1 ? 1 : width); }

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// `sms`: the GPU's multiprocessors (the grid aims at tune.blocks_per_sm blocks per SM), each thread at
// least bn_stats_unroll(width) vectors; never more than kBnMaxChunks chunks, one chunk when the
// columns (also those of the one-element-a-step grid, bn_narrow) outnumber the tickets. NHWC rows
// of threads_x vectors span at most tune.row_bytes.
inline BnGeometry bn_geometry(bool nhwc, int64_t n, int64_t c, int64_t hw, int elem_bytes, int sms,
                              BnGridTuning tune = {}) {
  BnGeometry g;
  g.nhwc = nhwc;
  g.width = channel_vec_width(nhwc, c, hw, elem_bytes);
  const int64_t target = int64_t(tune.blocks_per_sm < 1 ? 1 : tune.blocks_per_sm) * int64_t(sms < 1 ? 1 : sms),
                per_thread = bn_stats_unroll(g.width);
  auto clamp = [](int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; };
  int64_t columns = c;
  if (nhwc) {
    const int64_t cvs = c / g.width;
    int tx = 1;
    const int64_t vec_bytes = int64_t(g.width) * elem_bytes;
    while (tx < cvs && tx < 32 && (tx * 2) * vec_bytes <= tune.row_bytes) tx *= 2;
    g.threads_x = tx;
    g.threads_y = int(kVecThreads) / tx;
    g.blocks_x = int(ceil_div(cvs, tx));
    g.rows = n * hw;
    columns = ceil_div(c, tx);
    const int64_t by_work = ceil_div(g.rows, int64_t(g.threads_y) * per_thread);
    g.chunks = int(clamp(ceil_div(target, g.blocks_x), 1, clamp(by_work, 1, kBnMaxChunks)));
  } else {
    g.threads_x = int(kVecThreads);
    g.threads_y = 1;
    g.blocks_x = int(c);
    g.items = n * (hw / g.width);
    const int64_t by_work = ceil_div(g.items, int64_t(kVecThreads) * per_thread);
    g.chunks = int(clamp(ceil_div(target, c), 1, clamp(by_work, 1, kBnMaxChunks)));
  }
  if (columns > kBnMaxColumns) g.chunks = 1;
  return g;
}

// The same grid one element a step (for a pointer not aligned to the vector): the same chunks,
// so the same workspace.
inline BnGeometry bn_narrow(BnGeometry g, int64_t c) {
  if (g.width <= 1) return g;
  if (g.nhwc) g.blocks_x = int(ceil_div(c, g.threads_x));
  else g.items *= g.width;
  g.width = 1;
  return g;
}

// Bytes of batch norm's own workspace for a layer of c channels: the coefficient table first,
// kBnCoefs arrays of bn_coef_stride(c) floats (a coefficient of every channel, so that the W
// consecutive channels of an NHWC vector load theirs as one 16- or 32-byte access: forward the
// mean, scale and shift; backward the 4 coefficients of dx, then the forward's mean, scale and
// shift for a ReLU mask recomputed from x), at the workspace's first kBnWsAlign-byte boundary
// (kBnWsAlign bytes of room for a workspace that does not start on one), then 3 partial floats
// per chunk and channel.
constexpr int kBnCoefs = 7;
constexpr size_t kBnWsAlign = 32;
inline int64_t bn_coef_stride(int64_t c) { return (c + 7) / 8 * 8; }
inline size_t bn_workspace_bytes(const BnGeometry& g, int64_t c) {
  return (3 * size_t(g.chunks) * size_t(c) + size_t(kBnCoefs) * size_t(bn_coef_stride(c))) * sizeof(float) + kBnWsAlign;
}

// ---- max pooling (window k, stride s, padding p) ----------------------------------------------
// The outputs along one axis whose window covers input position i: [lo, hi] (empty when lo > hi);
// output o covers inputs o s - p .. o s - p + k - 1.
NB_VEC_HD inline void pool_cover(int i, int k, int s, int p, int out, int& lo, int& hi) {
  const int a = i + p - k + 1;
  lo = a <= 0 ? 0 : (a + s - 1) / s;
  hi = (i + p) / s;
  if (hi > out - 1) hi = out - 1;
}

// ---- batch norm's arithmetic, shared by its kernels (train_bn_kernels.cu) and the unit tests ----
// Chan et al.'s combination of two (count, mean, sum of squared deviations) summaries into the
// first: exact in exact arithmetic, and without the cancellation of sum(x^2) - sum(x)^2 / n.
template <class F>
NB_VEC_HD inline void chan_combine(F& na, F& ma, F& qa, F nb, F mb, F qb) {
  if (nb == F(0)) return;
  if (na == F(0)) {
    na = nb, ma = mb, qa = qb;
    return;
  }
  const F n = na + nb, d = mb - ma, f = nb / n;
  ma += d * f;
  qa += qb + d * d * na * f;
  na = n;
}

// The chunks' (count, mean, M2) partials of one channel combined in FP64 as shifted sums around k
// (the first chunk's mean, so that the sums are of the order of the spread, not of the mean):
// v = {N = sum n, s1 = sum n (m - k), s2 = sum (M2 + n (m - k)^2)}; then mean = k + s1 / N and
// M2 = s2 - s1^2 / N, exact in exact arithmetic. Additions only (no division per chunk), so the
// threads of a block each add a share of the chunks and a tree adds their v.
NB_VEC_HD inline void bn_shifted_add(double (&v)[3], double k, double n, double mean, double m2) {
  const double d = mean - k;
  v[0] += n;
  v[1] += n * d;
  v[2] += m2 + n * d * d;
}
NB_VEC_HD inline void bn_shifted_result(const double (&v)[3], double k, double& mean, double& m2) {
  mean = v[0] > 0 ? k + v[1] / v[0] : 0;
  const double q = v[0] > 0 ? v[2] - v[1] * v[1] / v[0] : 0;
  m2 = q > 0 ? q : 0;
}

// The scale gamma inv_std of a channel as the forward applies it: from the saved (FP32) inverse
// standard deviation, so that a backward that recomputes the forward's output from x (the ReLU's
// mask without the output kept) gets the same value bit for bit.
NB_VEC_HD inline float bn_scale(float gamma, float save_inv) { return float(double(gamma) * double(save_inv)); }

// From a channel's (count, mean, M2): cuDNN's saved mean and inverse standard deviation
// 1 / sqrt(var + eps) with the biased variance M2 / n, the running averages (the variance's
// unbiased, M2 / (n - 1), as cuDNN and PyTorch keep it), and the apply's coefficients
// y = (x - coef[0]) coef[1] + coef[2].
NB_VEC_HD inline void bn_forward_finalize(double n, double mean, double m2, float gamma, float beta, double eps,
                                          double factor, float& run_mean, float& run_var, float& save_mean,
                                          float& save_inv, float (&coef)[3]) {
  const double var = n > 0 ? m2 / n : 0, inv = 1.0 / sqrt(var + eps);
  save_mean = float(mean);
  save_inv = float(inv);
  run_mean = float((1 - factor) * run_mean + factor * mean);
  run_var = float((1 - factor) * run_var + factor * (n > 1 ? m2 / (n - 1) : var));
  coef[0] = float(mean);
  coef[1] = bn_scale(gamma, save_inv);
  coef[2] = beta;
}

// Backward from the channel's sums sg = sum(g) and sgx = sum(g xhat) over its `count` elements
// (g the gradient at the batch norm's output, xhat = (x - mean) inv): dgamma = sgx, dbeta = sg and
// dx = gamma inv (g - sg / count - xhat sgx / count), computed as
// dx = coef[0] g + coef[1] (x - coef[2]) + coef[3].
NB_VEC_HD inline void bn_backward_coefficients(double sg, double sgx, double count, float gamma, float mean, float inv,
                                               float& dgamma, float& dbeta, float (&coef)[4]) {
  const double a = double(gamma) * inv;
  dgamma = float(sgx);
  dbeta = float(sg);
  coef[0] = float(a);
  coef[1] = float(-a * inv * sgx / count);
  coef[2] = mean;
  coef[3] = float(-a * sg / count);
}

// The multi-tensor update: every tensor (a contiguous parameter segment: master weights, momentum,
// gradients of one storage type) cut into chunks of at most chunk_elems elements, one block each,
// so that one launch updates all of them. chunk_elems is rounded up to a multiple of every vector
// width (kMtChunkAlign), so each chunk but a tensor's last starts and ends on a vector boundary.
struct MtChunk {
  uint32_t tensor = 0;
  uint64_t begin = 0, count = 0;
};
constexpr uint64_t kMtChunkElems = uint64_t(1) << 16;
constexpr uint64_t kMtChunkAlign = 8;  // the widest vector: 8 FP16
inline std::vector<MtChunk> mt_chunks(const std::vector<size_t>& sizes, uint64_t chunk_elems = kMtChunkElems) {
  std::vector<MtChunk> out;
  if (chunk_elems == 0) chunk_elems = kMtChunkElems;
  chunk_elems = (chunk_elems + kMtChunkAlign - 1) / kMtChunkAlign * kMtChunkAlign;
  for (size_t t = 0; t < sizes.size(); ++t)
    for (uint64_t b = 0; b < sizes[t]; b += chunk_elems)
      out.push_back({uint32_t(t), b, (sizes[t] - b) < chunk_elems ? uint64_t(sizes[t] - b) : chunk_elems});
  return out;
}

// Whether a chunk starting at element `begin` can be walked in `width`-element vectors: each
// non-null pointer of its tensor (elements of elem_bytes[i] bytes) is aligned to `width` of its
// elements there. Otherwise the chunk runs one element a step: right for any pointer a caller
// passes (the step's buffers are all aligned; a sub-range need not be), only slower.
NB_VEC_HD inline bool mt_chunk_vectorizable(const void* const* ptrs, const int* elem_bytes, int n, uint64_t begin,
                                            int width) {
  for (int i = 0; i < n; ++i) {
    if (!ptrs[i]) continue;
    const uint64_t bytes = uint64_t(width) * uint64_t(elem_bytes[i]);
    const uint64_t at = uint64_t(reinterpret_cast<uintptr_t>(ptrs[i])) + begin * uint64_t(elem_bytes[i]);
    if (bytes > 1 && at % bytes != 0) return false;
  }
  return true;
}

}  // namespace nb::kernels
