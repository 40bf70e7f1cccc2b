// A developer tool, not a test: the bandwidth each pass of the training step's own batch norm
// reaches (kernels/train/train_bn_kernels.cuh) on every batch-norm layer shape of ResNet-50, against
// the GPU's copy bandwidth. For each layout and batch, each distinct (channels, positions, residual
// add) of the step's 53 batch norms runs its forward and backward once, then each of its four
// passes (fwd_stats, fwd_apply, bwd_reduce, bwd_apply: the reductions with their finalize, in one launch each) is timed
// alone --reps times, the L2 flushed before each, outside the events, so that the pass reads from
// device memory as the step's large layers do. --flush clean (the default) reads a buffer of twice
// the L2 (the memory family's read kernel): the L2 then holds clean lines only, and the pass's
// misses evict nothing that must be written back; --flush dirty writes that buffer
// (cudaMemsetAsync, as before 2026-12-07): the L2 is left full of dirty lines, whose write-back to
// device memory the pass's own misses then pay for (on an H100 a read-only pass wrote up to about
// 25 MB a launch, results/h100/2026-12-07-train-fp32-4/), bytes the pass does not count. Bytes are
// what the pass must move (kernels/train/bn_traffic.hpp); GB/s are 1e9 bytes per second of the
// median launch. Per pass class, the step's figure weights each shape by its layer count
// (its bytes over its time, summed over the step's layers).
// The reference: --copy-gbps (the memory family's copy figure on the same GPU, bytes read plus
// written, as the memory family counts; scripts/dev/device/train_fp32_session.sh passes it), else
// this tool's own cudaMemcpyAsync device to device of 1 GiB, counted the same way.
//   nodebench_bn_bandwidth [--layouts nchw,nhwc] [--batches 64,256] [--reps 10] [--copy-gbps G]
//                          [--blocks-per-sm N] [--row-bytes B] [--flush clean|dirty] [--shapes S] [--out FILE]
// (--blocks-per-sm and --row-bytes sweep the reductions' grid, kernels/train/train_vec.hpp's
// BnGridTuning; --shapes keeps the listed layer shapes, CxHW with +add for a residual add, e.g.
// 512x49,2048x49+add: what a profiler run of the small layers needs).
// Prints a table per layout and batch; --out writes everything as JSON. Exit 2 on bad arguments,
// 1 on a CUDA failure, 3 without a GPU.
#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <cuda_runtime_api.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/resources.hpp"
#include "kernels/memory/memory_kernels.cuh"
#include "kernels/train/bn_traffic.hpp"
#include "kernels/train/train_bn_kernels.cuh"
#include "kernels/train/train_kernels.cuh"
#include "kernels/train/train_vec.hpp"
#include "shared/resnet50/resnet50_net.hpp"

using namespace nb;
using nlohmann::json;
using kernels::BnPass;

namespace {

struct Args {
  std::vector<std::string> layouts = {"nchw", "nhwc"};
  std::vector<int> batches = {64, 256};
  int reps = 10;
  double copy_gbps = 0;
  std::string out;
  bool dirty_flush = false;  // --flush dirty: the L2 left full of dirty lines before each launch
  std::vector<std::string> shapes;  // --shapes: only these layer shapes (CxHW[+add]); empty: all
  kernels::BnGridTuning tune;  // the reductions' grid: the step's unless swept
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "nodebench_bn_bandwidth: " << why
            << "\nusage: nodebench_bn_bandwidth [--layouts nchw,nhwc] [--batches 64,256] [--reps 10] [--copy-gbps G]"
               " [--blocks-per-sm N] [--row-bytes B] [--flush clean|dirty] [--shapes S] [--out FILE]\n";
  std::exit(2);
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string t; std::getline(ss, t, ',');)
    if (!t.empty()) out.push_back(t);
  return out;
}

double number(const std::string& opt, const std::string& v, double lo, double hi) {
  size_t used = 0;
  double d = 0;
  try {
    d = std::stod(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || !(d >= lo && d <= hi)) {
    char range[64];
    std::snprintf(range, sizeof range, "[%g, %g]", lo, hi);
    usage(opt + ": '" + v + "' is not a number in " + range);
  }
  return d;
}

// A whole number in [lo, hi] (the options that count: no fraction truncated away).
int integer(const std::string& opt, const std::string& v, int lo, int hi) {
  const double d = number(opt, v, lo, hi);
  if (d != double(int(d))) usage(opt + ": '" + v + "' is not a whole number");
  return int(d);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string o = argv[i];
    if (o == "--help" || o == "-h") {
      std::cout << "nodebench_bn_bandwidth: the bandwidth of each batch-norm pass of the training step on ResNet-50's\n"
                   "layer shapes (FP32), against the copy bandwidth. Options:\n"
                   "  --layouts L   comma list of nchw, nhwc (default both)\n"
                   "  --batches B   comma list of batch sizes (default 64,256)\n"
                   "  --reps N      timed launches per pass and shape, the median kept (default 10)\n"
                   "  --copy-gbps G the reference copy bandwidth in GB/s (read + written); default: measured here\n"
                   "  --blocks-per-sm N  the reductions' grid aims at N blocks per SM (default: the step's, "
                << kernels::kBnBlocksPerSm << ")\n"
                << "  --row-bytes B  NHWC: bytes of channel vectors a block row covers at most (default: the step's, "
                << kernels::kBnRowBytes << ")\n"
                << "  --flush F     how the L2 is emptied before each timed launch: clean (default; a read of twice\n"
                   "                the L2, so it holds clean lines) or dirty (a memset of twice the L2: the launch\n"
                   "                also pays for writing those dirty lines back)\n"
                   "  --shapes S    comma list of the layer shapes to run, CxHW with +add for a residual add\n"
                   "                (e.g. 512x49,2048x49+add); default all of ResNet-50's\n"
                   "  --out FILE    everything as JSON\n";
      std::exit(0);
    }
    if (i + 1 >= argc) usage(o + " needs a value");
    const std::string v = argv[++i];
    if (o == "--layouts") {
      a.layouts = split(v);
      if (a.layouts.empty()) usage("--layouts: empty");
      for (const auto& l : a.layouts)
        if (l != "nchw" && l != "nhwc") usage("--layouts: '" + l + "' is not nchw or nhwc");
    } else if (o == "--batches") {
      a.batches.clear();
      for (const auto& b : split(v)) a.batches.push_back(integer("--batches", b, 1, 4096));
      if (a.batches.empty()) usage("--batches: empty");
    } else if (o == "--reps") {
      a.reps = integer("--reps", v, 1, 1000);
    } else if (o == "--copy-gbps") {
      a.copy_gbps = number("--copy-gbps", v, 1e-3, 1e6);
    } else if (o == "--blocks-per-sm") {
      a.tune.blocks_per_sm = integer("--blocks-per-sm", v, 1, 64);
    } else if (o == "--row-bytes") {
      a.tune.row_bytes = integer("--row-bytes", v, 1, 4096);
    } else if (o == "--flush") {
      if (v != "clean" && v != "dirty") usage("--flush: '" + v + "' is not clean or dirty");
      a.dirty_flush = v == "dirty";
    } else if (o == "--shapes") {
      a.shapes = split(v);
      if (a.shapes.empty()) usage("--shapes: empty");
    } else if (o == "--out") {
      a.out = v;
    } else {
      usage("unknown option '" + o + "'");
    }
  }
  return a;
}

// A batch-norm layer shape of the step: channels, positions per image, residual add (+ ReLU), and
// how many of the step's layers have it.
struct Shape {
  int c = 0, hw = 0;
  bool add = false, relu = true;
  int layers = 0;
};

std::vector<Shape> step_shapes() {
  const auto& net = resnet50::net();
  std::vector<int> act(net.convs.size(), 1);  // 0 none, 1 relu, 2 add + relu (as the step sets them)
  for (const auto& b : net.blocks) {
    act[size_t(b.conv3)] = 2;
    if (b.down >= 0) act[size_t(b.down)] = 0;
  }
  std::map<std::tuple<int, int, int>, int> count;
  for (size_t i = 0; i < net.convs.size(); ++i) {
    const auto& c = net.convs[i];
    ++count[{c.k, c.out_hw() * c.out_hw(), act[i]}];
  }
  std::vector<Shape> out;
  for (const auto& [k, n] : count) out.push_back({std::get<0>(k), std::get<1>(k), std::get<2>(k) == 2, std::get<2>(k) != 0, n});
  return out;
}

std::string shape_name(const Shape& s) { return std::to_string(s.c) + "x" + std::to_string(s.hw) + (s.add ? "+add" : ""); }

// The step's shapes named in `names` (all when empty); a name that is none of them: exit 2 naming
// the ones there are.
std::vector<Shape> selected_shapes(const std::vector<std::string>& names) {
  const auto all = step_shapes();
  if (names.empty()) return all;
  std::vector<Shape> out;
  for (const auto& n : names) {
    const auto it = std::find_if(all.begin(), all.end(), [&](const Shape& s) { return shape_name(s) == n; });
    if (it == all.end()) {
      std::string known;
      for (const auto& s : all) known += (known.empty() ? "" : ", ") + shape_name(s);
      usage("--shapes: '" + n + "' is not a batch-norm shape of ResNet-50 (" + known + ")");
    }
    if (std::none_of(out.begin(), out.end(), [&](const Shape& s) { return shape_name(s) == n; })) out.push_back(*it);
  }
  return out;
}

struct Events {
  cudaEvent_t a = nullptr, b = nullptr;
  Events() {
    NB_CUDA(cudaEventCreate(&a));
    NB_CUDA(cudaEventCreate(&b));
  }
  ~Events() {
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
};

// What empties the L2 before a timed launch: a buffer of twice the L2, read (clean) or written
// (dirty), and the read kernel's per-block partial sums.
struct Flush {
  float* buf = nullptr;
  size_t bytes = 0;
  float* partial = nullptr;
  unsigned blocks = 0;
  bool dirty = false;
  void run(cudaStream_t s, int i) const {
    if (dirty) NB_CUDA(cudaMemsetAsync(buf, i & 0xff, bytes, s));
    else kernels::launch_stream(s, kernels::StreamOp::read, buf, nullptr, nullptr, 0.f, bytes / 16, partial, blocks, 256);
    NB_CUDA(cudaGetLastError());
  }
};

// Median seconds of `reps` launches of f, each after an L2 flush outside the timed interval.
template <class F>
double timed(cudaStream_t s, const Flush& flush, int reps, F&& f) {
  Events e;
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    flush.run(s, i);
    NB_CUDA(cudaEventRecord(e.a, s));
    f();
    NB_CUDA(cudaGetLastError());
    NB_CUDA(cudaEventRecord(e.b, s));
    NB_CUDA(cudaEventSynchronize(e.b));
    float ms = 0;
    NB_CUDA(cudaEventElapsedTime(&ms, e.a, e.b));
    t.push_back(double(ms) * 1e-3);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

double memcpy_gbps(cudaStream_t s) {
  const size_t bytes = size_t(1) << 30;
  DeviceBuffer a(bytes), b(bytes);
  NB_CUDA(cudaMemsetAsync(a.get(), 1, bytes, s));
  Events e;
  NB_CUDA(cudaMemcpyAsync(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice, s));  // warm
  NB_CUDA(cudaEventRecord(e.a, s));
  for (int i = 0; i < 5; ++i) NB_CUDA(cudaMemcpyAsync(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice, s));
  NB_CUDA(cudaEventRecord(e.b, s));
  NB_CUDA(cudaEventSynchronize(e.b));
  float ms = 0;
  NB_CUDA(cudaEventElapsedTime(&ms, e.a, e.b));
  return 2.0 * double(bytes) * 5 / (double(ms) * 1e-3) / 1e9;
}

// One shape at one batch: the four passes' seconds.
std::array<double, kernels::kBnPasses> run_shape(cudaStream_t s, const Shape& sh, int batch, bool nhwc, int sms,
                                                 kernels::BnGridTuning tune, const Flush& flush, int reps) {
  const size_t e = size_t(batch) * size_t(sh.c) * size_t(sh.hw), c = size_t(sh.c);
  kernels::BnShape shape{batch, sh.c, sh.hw, nhwc, false};
  const kernels::BnGeometry geo = kernels::bn_geometry(nhwc, batch, sh.c, sh.hw, 4, sms, tune);
  DeviceBuffer x(e * 4), r(e * 4), y(e * 4), dy(e * 4), dx(e * 4), dz(e * 4), ch(c * 4 * 10),
      ws(kernels::bn_workspace_bytes(geo, sh.c));
  float* p = static_cast<float*>(ch.get());
  float *gamma = p, *beta = p + c, *rm = p + 2 * c, *rv = p + 3 * c, *sm = p + 4 * c, *si = p + 5 * c, *dg = p + 6 * c,
        *db = p + 7 * c;
  kernels::launch_init_uniform(s, static_cast<float*>(x.get()), e, 2.f, 1);
  kernels::launch_init_uniform(s, static_cast<float*>(r.get()), e, 1.f, 2);
  kernels::launch_init_uniform(s, static_cast<float*>(dy.get()), e, 1.f, 3);
  kernels::launch_fill_value(s, gamma, c, 1.f);
  kernels::launch_fill_value(s, beta, c, 0.1f);
  kernels::launch_fill_value(s, rm, c, 0.f);
  kernels::launch_fill_value(s, rv, c, 1.f);
  NB_CUDA(cudaGetLastError());
  kernels::BnForward f;
  f.x = x.get(), f.residual = sh.add ? r.get() : nullptr, f.y = y.get(), f.relu = sh.relu;
  f.gamma = gamma, f.beta = beta, f.running_mean = rm, f.running_var = rv, f.save_mean = sm, f.save_inv_std = si;
  f.ws = ws.get();
  // As the step's layers call them (train_bn_layer.cpp): a ReLU's mask from x, y read after the add.
  kernels::BnBackward b;
  b.x = x.get(), b.y = sh.add ? y.get() : nullptr, b.relu_from_x = sh.relu && !sh.add, b.beta = beta;
  b.dy = dy.get(), b.dx = dx.get(), b.dz = sh.add ? dz.get() : nullptr;
  b.gamma = gamma, b.save_mean = sm, b.save_inv_std = si, b.dgamma = dg, b.dbeta = db, b.ws = ws.get();
  kernels::launch_bn_forward(s, shape, geo, f);
  kernels::launch_bn_backward(s, shape, geo, b);
  NB_CUDA(cudaStreamSynchronize(s));
  std::array<double, kernels::kBnPasses> t{};
  for (int k = 0; k < kernels::kBnPasses; ++k) {
    const BnPass pass = BnPass(k);
    const unsigned which = pass == BnPass::fwd_stats || pass == BnPass::bwd_reduce ? kernels::kBnReducePass
                                                                                    : kernels::kBnApplyPass;
    t[size_t(k)] = timed(s, flush, reps, [&] {
      if (pass == BnPass::fwd_stats || pass == BnPass::fwd_apply) {
        kernels::BnForward a = f;
        a.passes = which;
        kernels::launch_bn_forward(s, shape, geo, a);
      } else {
        kernels::BnBackward a = b;
        a.passes = which;
        kernels::launch_bn_backward(s, shape, geo, a);
      }
    });
  }
  return t;
}

std::string fixed(double v, int d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", d, v);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  const auto shapes = selected_shapes(a.shapes);  // a bad name exits 2 before the GPU is looked for
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) {
    std::cerr << "nodebench_bn_bandwidth: no CUDA device\n";
    return 3;
  }
  try {
    cudaDeviceProp prop{};
    NB_CUDA(cudaGetDeviceProperties(&prop, 0));
    Stream st;
    const cudaStream_t s = st.get();
    const size_t flush_bytes = std::max<size_t>(2 * size_t(prop.l2CacheSize), size_t(64) << 20) / 16 * 16;
    const unsigned flush_blocks = unsigned(4 * prop.multiProcessorCount);
    DeviceBuffer flush_buf(flush_bytes), flush_partial(size_t(flush_blocks) * sizeof(float));
    NB_CUDA(cudaMemsetAsync(flush_buf.get(), 0, flush_bytes, s));  // what the clean flush reads: defined values
    const Flush flush{static_cast<float*>(flush_buf.get()), flush_bytes, static_cast<float*>(flush_partial.get()),
                      flush_blocks, a.dirty_flush};
    const double own_copy = memcpy_gbps(s);
    const double ref = a.copy_gbps > 0 ? a.copy_gbps : own_copy;
    json doc = {{"tool", "nodebench_bn_bandwidth"},
                {"device", prop.name},
                {"precision", "fp32"},
                {"reps", a.reps},
                {"blocks_per_sm", a.tune.blocks_per_sm},
                {"row_bytes", a.tune.row_bytes},
                {"l2_flush_bytes", flush_bytes},
                {"l2_flush", a.dirty_flush ? "dirty" : "clean"},
                {"shapes", a.shapes.empty() ? json("all") : json(a.shapes)},
                {"memcpy_d2d_gbps", own_copy},
                {"reference_gbps", ref},
                {"reference", a.copy_gbps > 0 ? "--copy-gbps (the memory family's copy)" : "memcpy_d2d_gbps (1 GiB)"},
                {"rows", json::array()},
                {"step", json::array()}};
    std::printf("batch-norm passes, FP32, %s; reference %.0f GB/s (%s); L2 flush %s\n", prop.name, ref,
                a.copy_gbps > 0 ? "memory family copy" : "cudaMemcpy D2D", a.dirty_flush ? "dirty" : "clean");
    for (const auto& layout : a.layouts)
      for (int batch : a.batches) {
        const bool nhwc = layout == "nhwc";
        double bytes[kernels::kBnPasses] = {}, secs[kernels::kBnPasses] = {}, worst[kernels::kBnPasses];
        std::string worst_at[kernels::kBnPasses];
        std::fill(std::begin(worst), std::end(worst), 1e30);
        for (const Shape& sh : shapes) {
          const auto t = run_shape(s, sh, batch, nhwc, prop.multiProcessorCount, a.tune, flush, a.reps);
          const int64_t e = int64_t(batch) * sh.c * sh.hw;
          json row = {{"layout", layout}, {"batch", batch}, {"c", sh.c}, {"hw", sh.hw}, {"add", sh.add},
                      {"relu", sh.relu}, {"layers", sh.layers}, {"elems", e}};
          for (int k = 0; k < kernels::kBnPasses; ++k) {
            const double by = kernels::bn_pass_bytes(BnPass(k), e, 4, sh.add), gbps = by / t[size_t(k)] / 1e9;
            row[kernels::bn_pass_name(BnPass(k))] = {{"bytes", by}, {"us", t[size_t(k)] * 1e6}, {"gbps", gbps},
                                                      {"ratio", gbps / ref}};
            bytes[k] += by * sh.layers, secs[k] += t[size_t(k)] * sh.layers;
            if (gbps / ref < worst[k]) {
              worst[k] = gbps / ref;
              worst_at[k] = shape_name(sh);
            }
          }
          doc["rows"].push_back(row);
        }
        std::printf("%s b%d: %-10s %9s %9s %8s %7s  %s\n", layout.c_str(), batch, "pass", "step ms", "GB/s", "ratio",
                    "worst", "worst at");
        json step = {{"layout", layout}, {"batch", batch}};
        double all_b = 0, all_s = 0;
        for (int k = 0; k < kernels::kBnPasses; ++k) {
          const double gbps = bytes[k] / secs[k] / 1e9;
          all_b += bytes[k], all_s += secs[k];
          step[kernels::bn_pass_name(BnPass(k))] = {{"bytes", bytes[k]}, {"ms", secs[k] * 1e3}, {"gbps", gbps},
                                                     {"ratio", gbps / ref}, {"worst_ratio", worst[k]},
                                                     {"worst_shape", worst_at[k]}};
          std::printf("%*s %-10s %9s %9s %8s %7s  %s\n", int(layout.size() + std::to_string(batch).size() + 3), "",
                      kernels::bn_pass_name(BnPass(k)), fixed(secs[k] * 1e3, 3).c_str(), fixed(gbps, 0).c_str(),
                      fixed(gbps / ref, 3).c_str(), fixed(worst[k], 3).c_str(), worst_at[k].c_str());
        }
        step["all"] = {{"bytes", all_b}, {"ms", all_s * 1e3}, {"gbps", all_b / all_s / 1e9}, {"ratio", all_b / all_s / 1e9 / ref}};
        std::printf("%*s %-10s %9s %9s %8s\n", int(layout.size() + std::to_string(batch).size() + 3), "", "all",
                    fixed(all_s * 1e3, 3).c_str(), fixed(all_b / all_s / 1e9, 0).c_str(),
                    fixed(all_b / all_s / 1e9 / ref, 3).c_str());
        doc["step"].push_back(step);
      }
    if (!a.out.empty()) {
      std::ofstream f(a.out);
      f << doc.dump(2) << "\n";
      if (!f) {
        std::cerr << "nodebench_bn_bandwidth: cannot write " << a.out << "\n";
        return 1;
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "nodebench_bn_bandwidth: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
