// The bytes each pass of the training step's own batch norm (train_bn_kernels.cuh) must move, for
// a bandwidth figure against the GPU's copy bandwidth. Plain C++: the unit tests check it and the
// benchmark that times the passes uses it.
//
// Counted are the activation tensors a pass reads and writes, each element once (E elements of
// elem_bytes); the per-channel vectors and the partial sums are left out (they grow with the
// channels, not the elements). The passes and what they move:
//   fwd_stats   reads x                                                   E
//   fwd_apply   reads x (and the residual), writes y                      2E (3E with the add)
//   bwd_reduce  reads x and dy (and y: the mask after the add), writes    2E (4E with the add)
//               dz = the masked dy with the add (the residual's gradient)
//   bwd_apply   reads x and the masked gradient (dy; dz with the add),    3E
//               writes dx
// A ReLU without the add needs no y backward: its mask is recomputed from x.
#pragma once
#include <cstdint>

namespace nb::kernels {

enum class BnPass : int { fwd_stats = 0, fwd_apply = 1, bwd_reduce = 2, bwd_apply = 3 };
constexpr int kBnPasses = 4;
inline const char* bn_pass_name(BnPass p) {
  switch (p) {
    case BnPass::fwd_stats: return "fwd_stats";
    case BnPass::fwd_apply: return "fwd_apply";
    case BnPass::bwd_reduce: return "bwd_reduce";
    case BnPass::bwd_apply: return "bwd_apply";
  }
  return "?";
}

// Tensors of E elements a pass moves (reads + writes), for a batch norm followed by a residual add
// and a ReLU (`add`) or not.
inline int bn_pass_tensors(BnPass p, bool add) {
  switch (p) {
    case BnPass::fwd_stats: return 1;
    case BnPass::fwd_apply: return add ? 3 : 2;
    case BnPass::bwd_reduce: return add ? 4 : 2;
    case BnPass::bwd_apply: return 3;
  }
  return 0;
}

inline double bn_pass_bytes(BnPass p, int64_t elems, int elem_bytes, bool add) {
  return double(bn_pass_tensors(p, add)) * double(elems) * double(elem_bytes);
}

}  // namespace nb::kernels
