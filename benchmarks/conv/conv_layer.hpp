// Internal to the conv family: a layer, one convolution's descriptors and buffers, and its check
// against float64 (conv_verify.cpp), used by the cases (conv.cpp).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "bench/benchmark.hpp"
#include "kernels/common/kernels.cuh"
#include "shared/cudnn/cudnn_conv.hpp"

namespace nb::conv {

using namespace cudnn;

struct Layer {
  const char* name;
  int c, k, hw, r, stride, pad, groups, count;  // square input hw x hw, filter r x r
  int out_hw() const { return (hw + 2 * pad - r) / stride + 1; }
};

// A device allocation that turns "out of memory" into a recorded "does not fit".
DeviceBuffer alloc_or_skip(CaseContext& ctx, size_t bytes, const std::string& what);

// Descriptors and buffers of one convolution of a square layer at one batch size.
struct Conv {
  const Layer& L;
  const Prec& P;
  int64_t n;
  ConvDesc d;
  int p = 0;  // output height = width
  DeviceBuffer bx, by, bw, bdy, bdx, bdw;
  static ConvShape shape_of(const Layer& l, int64_t batch) {
    return ConvShape::square(batch, l.c, l.hw, l.k, l.r, l.stride, l.pad, l.groups);
  }
  Conv(const Layer& l, const Prec& pr, bool nhwc, int64_t batch)
      : L(l), P(pr), n(batch), d(shape_of(l, batch), pr, nhwc), p(d.out_h()) {}
  size_t x_elems() const { return d.x_elems(); }
  size_t y_elems() const { return d.y_elems(); }
  size_t w_elems() const { return d.w_elems(); }
  double flops() const { return d.flops(); }
  ConvBuffers buffers() const { return {bx.get(), bw.get(), by.get(), bdy.get(), bdx.get(), bdw.get()}; }
  // Element offsets in the chosen layout.
  size_t xi(size_t in, size_t c, size_t h, size_t wd) const {
    return !d.nhwc() ? ((in * L.c + c) * L.hw + h) * L.hw + wd : ((in * L.hw + h) * L.hw + wd) * L.c + c;
  }
  size_t yi(size_t in, size_t k, size_t h, size_t wd) const {
    return !d.nhwc() ? ((in * L.k + k) * p + h) * p + wd : ((in * p + h) * p + wd) * L.k + k;
  }
  size_t wi(size_t k, size_t c, size_t r, size_t s) const {
    const size_t cg = size_t(L.c / L.groups);
    return !d.nhwc() ? ((k * cg + c) * L.r + r) * L.r + s : ((k * L.r + r) * L.r + s) * cg + c;
  }
  void allocate(CaseContext& ctx, bool backward) {
    bx = alloc_or_skip(ctx, x_elems() * P.elem, "the input");
    by = alloc_or_skip(ctx, y_elems() * P.elem, "the output");
    bw = alloc_or_skip(ctx, w_elems() * P.elem, "the filter");
    if (backward) {
      bdy = alloc_or_skip(ctx, y_elems() * P.elem, "the output gradient");
      bdx = alloc_or_skip(ctx, x_elems() * P.elem, "the input gradient");
      bdw = alloc_or_skip(ctx, w_elems() * P.elem, "the filter gradient");
    }
    cudaStream_t s = ctx.stream();
    kernels::launch_fill_random(s, bx.get(), x_elems(), P.fill, 0xC0 + uint64_t(L.c));
    kernels::launch_fill_random(s, bw.get(), w_elems(), P.fill, 0xC1 + uint64_t(L.k));
    if (backward) kernels::launch_fill_random(s, bdy.get(), y_elems(), P.fill, 0xC2 + uint64_t(L.k));
    NB_CUDA_LAUNCH();
    NB_CUDA(cudaStreamSynchronize(s));
  }
  AlgoChoice choose(const Libraries& libs, Pass pass, DeviceBuffer& ws, cudaStream_t s, const GpuInfo& g) {
    return choose_algo(libs, d, pass, buffers(), ws, s, g.name);
  }
  void run(cudnnHandle_t h, Pass pass, const AlgoChoice& ch, void* ws, cudaStream_t s) {
    run_pass(h, d, pass, ch, buffers(), ws, s);
  }
};

// Checks `samples` sampled outputs of a pass against float64 sums over the stored inputs.
// Returns the summary; adds to `failures`, `worst` the first failure.
nlohmann::json verify_pass(Conv& c, Pass pass, size_t samples, size_t& failures, std::string& worst);

}  // namespace nb::conv
