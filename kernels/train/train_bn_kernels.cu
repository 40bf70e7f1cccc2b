// Batch norm in training mode with the ReLU and the residual add fused (see train_bn_kernels.cuh):
// the elementwise passes and the launch functions; the reductions are in train_bn_reduce.cu.
#include <initializer_list>

#include "train_bn_device.cuh"

namespace nb::kernels {
namespace {

using bn::bn_pre;
using bn::kMaskFromX;
using bn::kMaskFromY;
using bn::kNoMask;
using bn::relu_passed;
using bn::Ws;

// ---- the elementwise passes: one map over the layer's elements -------------------------------
// Every vector of W elements is loaded and stored whole (16 bytes when the pointers allow), in
// either layout and whatever c and hw: the channel of each lane comes from lane_channels (two
// FastDivs, no 64-bit division). Each lane's coefficients (Op::kCoefs arrays of the table): a
// vector inside one channel (NCHW, all but those crossing a plane's end) loads its channel's once;
// an NHWC vector of W consecutive channels (c a multiple of W: every vector) loads W channels'
// of an array as one 16- or 32-byte access (through the read-only cache, as the table is small
// and read by every vector); any other vector one lane at a time.
template <int L>
__device__ __forceinline__ void ldg_lanes(const float* p, float (&f)[L]) {
  if constexpr (L % 4 == 0) {
#pragma unroll
    for (int q = 0; q < L / 4; ++q) {
      const float4 v = __ldg(reinterpret_cast<const float4*>(p) + q);
      f[4 * q] = v.x, f[4 * q + 1] = v.y, f[4 * q + 2] = v.z, f[4 * q + 3] = v.w;
    }
  } else if constexpr (L == 2) {
    const float2 v = __ldg(reinterpret_cast<const float2*>(p));
    f[0] = v.x, f[1] = v.y;
  } else {
#pragma unroll
    for (int k = 0; k < L; ++k) f[k] = __ldg(p + k);
  }
}

template <int L, class Op, int NIN, int NOUT>
__device__ __forceinline__ void run_lanes(const Op& op, uint64_t i0, const ChanDims& d, const float* table, uint32_t cs,
                                          const float (&in)[NIN][L], float (&out)[NOUT][L]) {
  constexpr int K = Op::kCoefs;
  float cf[K][L];
  uint32_t ch[L];
  if (lane_channels<L>(i0, d, ch)) {
#pragma unroll
    for (int j = 0; j < K; ++j) {
      const float v = __ldg(table + size_t(j) * cs + ch[0]);
#pragma unroll
      for (int k = 0; k < L; ++k) cf[j][k] = v;
    }
  } else if (L > 1 && d.nhwc && d.c.d % L == 0) {  // ch[0] a multiple of L, ch[k] = ch[0] + k
#pragma unroll
    for (int j = 0; j < K; ++j) ldg_lanes<L>(table + size_t(j) * cs + ch[0], cf[j]);
  } else {
#pragma unroll
    for (int j = 0; j < K; ++j)
#pragma unroll
      for (int k = 0; k < L; ++k) cf[j][k] = __ldg(table + size_t(j) * cs + ch[k]);
  }
#pragma unroll
  for (int k = 0; k < L; ++k) op.template elem<L>(cf, in, out, k);
}

// The per-channel op as vec::map_k's op: each run of L elements with its lanes' coefficients.
template <class Op>
struct ChanApply {
  ChanDims d;
  const float* table;
  uint32_t cs;
  Op op;
  template <int L, int NIN, int NOUT>
  __device__ void apply(uint64_t i0, const float (&in)[NIN][L], float (&out)[NOUT][L]) const {
    run_lanes<L>(op, i0, d, table, cs, in, out);
  }
};

// y = act((x - mean) scale + beta [+ r]).
template <bool RELU, int NIN>
struct FwdOp {
  static constexpr int kCoefs = 3;  // mean, scale, shift
  template <int L>
  __device__ void elem(const float (&cf)[kCoefs][L], const float (&in)[NIN][L], float (&out)[1][L], int k) const {
    float v = bn_pre(in[0][k], cf[0][k], cf[1][k], cf[2][k]);
    if (NIN == 2) v += in[NIN - 1][k];
    out[0][k] = RELU ? fmaxf(v, 0.f) : v;
  }
};

// dx = A g + B (x - mean) + C, g = dy masked (M), or the masked gradient the sums pass wrote to dz
// (M kNoMask). in: x, dy or dz [, y when M is kMaskFromY].
template <int M>
struct BwdOp {
  static constexpr int kIn = M == kMaskFromY ? 3 : 2;
  static constexpr int kCoefs = M == kMaskFromX ? 7 : 4;  // dx's 4 [, the forward's mean, scale, shift]
  static constexpr int kFwd = kCoefs - 3;                  // where the forward's are (kMaskFromX)
  bool half;  // the storage type, for the mask recomputed from x
  template <int L>
  __device__ void elem(const float (&cf)[kCoefs][L], const float (&in)[kIn][L], float (&out)[1][L], int k) const {
    const bool pass = M == kMaskFromY ? in[kIn - 1][k] > 0.f
                      : M == kMaskFromX
                          ? relu_passed(bn_pre(in[0][k], cf[kFwd][k], cf[kFwd + 1][k], cf[kFwd + 2][k]), half)
                          : true;
    const float g = pass ? in[1][k] : 0.f;
    out[0][k] = cf[0][k] * g + cf[1][k] * (in[0][k] - cf[2][k]) + cf[3][k];
  }
};

// The map over the layer's elements, 16 bytes a step when every pointer is aligned to it.
template <class Op, int NIN, int NOUT>
void launch_apply(cudaStream_t s, const BnShape& sh, const Ws& ws, const void* const (&in)[NIN], void* const (&out)[NOUT],
                  const Op& op) {
  const size_t elem = sh.half ? 2 : 4;
  const int width = vec_width(int(elem));
  bool ok = true;
  for (const void* p : in) ok = ok && vec::aligned_to(p, size_t(width) * elem);
  for (const void* p : out) ok = ok && vec::aligned_to(p, size_t(width) * elem);
  const uint64_t n = uint64_t(sh.n) * uint64_t(sh.c) * uint64_t(sh.hw);
  const ChanDims d = chan_dims(sh.nhwc, sh.c, sh.hw);
  vec::with_type_and_width(sh.half, ok ? width : 1, [&](auto tag, auto w) {
    using S = decltype(tag);
    constexpr int W = decltype(w)::value;
    vec::Ptrs<S, NIN, NOUT> p{};
    for (int k = 0; k < NIN; ++k) p.in[k] = static_cast<const S*>(in[k]);
    for (int k = 0; k < NOUT; ++k) p.out[k] = static_cast<S*>(out[k]);
    vec::map_k<S, W, NIN, NOUT, ChanApply<Op>><<<vec::grid_for(n / W + 1), kVecThreads, 0, s>>>(
        p, n, ChanApply<Op>{d, ws.coef, ws.cs, op});
  });
}

void forward_apply(cudaStream_t s, const BnShape& sh, const BnForward& a, const Ws& ws) {
  if (a.residual) launch_apply(s, sh, ws, {a.x, a.residual}, {a.y}, FwdOp<true, 2>{});  // the join ends in a ReLU
  else if (a.relu) launch_apply(s, sh, ws, {a.x}, {a.y}, FwdOp<true, 1>{});
  else launch_apply(s, sh, ws, {a.x}, {a.y}, FwdOp<false, 1>{});
}

void backward_apply(cudaStream_t s, const BnShape& sh, const BnBackward& a, bool from_x, const Ws& ws) {
  if (a.dz) launch_apply(s, sh, ws, {a.x, a.dz}, {a.dx}, BwdOp<kNoMask>{sh.half});
  else if (a.y) launch_apply(s, sh, ws, {a.x, a.dy, a.y}, {a.dx}, BwdOp<kMaskFromY>{sh.half});
  else if (from_x) launch_apply(s, sh, ws, {a.x, a.dy}, {a.dx}, BwdOp<kMaskFromX>{sh.half});
  else launch_apply(s, sh, ws, {a.x, a.dy}, {a.dx}, BwdOp<kNoMask>{sh.half});
}

// The geometry for these pointers: one element a step when one is not aligned to the vector
// (every buffer of the step is 256-byte aligned; this keeps another caller correct).
BnGeometry geometry_for(const BnShape& sh, const BnGeometry& g, std::initializer_list<const void*> ptrs) {
  bool ok = true;
  for (const void* p : ptrs) ok = ok && vec::aligned_to(p, size_t(g.width) * (sh.half ? 2 : 4));
  return ok ? g : bn_narrow(g, sh.c);
}

}  // namespace

void launch_bn_forward(cudaStream_t s, const BnShape& sh, const BnGeometry& g0, const BnForward& a) {
  const BnGeometry g = geometry_for(sh, g0, {a.x});
  const Ws ws(a.ws, g.chunks, sh.c);
  if (a.passes & kBnReducePass) {
    const bn::FwdFinal fin{a.gamma, a.beta, a.running_mean, a.running_var, a.save_mean, a.save_inv_std, a.factor, a.eps};
    bn::launch_stats(s, sh, g, a.x, ws, fin);
  }
  if (a.passes & kBnApplyPass) forward_apply(s, sh, a, ws);
}

void launch_bn_backward(cudaStream_t s, const BnShape& sh, const BnGeometry& g0, const BnBackward& a) {
  const BnGeometry g = geometry_for(sh, g0, {a.x, a.y, a.dy, a.dz});
  const Ws ws(a.ws, g.chunks, sh.c);
  const bool from_x = !a.y && a.relu_from_x;
  if (a.passes & kBnReducePass) {
    const int mask = a.y ? kMaskFromY : from_x ? kMaskFromX : kNoMask;
    const bn::BwdSums sa{a.x, a.y, a.dy, a.dz, mask, a.gamma, a.beta, a.save_mean, a.save_inv_std, a.dgamma, a.dbeta};
    bn::launch_sums(s, sh, g, sa, ws);
  }
  if (a.passes & kBnApplyPass) backward_apply(s, sh, a, from_x, ws);
}

}  // namespace nb::kernels
