// `nodebench advise`: the data-parallel training model (docs/ADVISE.md). Pure: no GPU, no files;
// every function is unit-tested (tests/test_advise.cpp). The command around it (reading result
// files, printing, --json) is cmd_advise.cpp.
//
// The model, for N GPUs, per-GPU batch b and gradient accumulation k:
//   step(N, b, k) = k * compute(b) + exposed all-reduce
// where the gradient all-reduce is cut into buckets launched during the backward pass
// (backward ~ 2/3 of compute) and only what does not fit under the backward pass, plus the last
// bucket (which can only start when the backward pass ends), is exposed.
#pragma once
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace nb::advise {

// Parameters of torchvision's resnet50 (25,557,032), the network the train and conv families run.
constexpr double kResnet50Params = 25557032.0;
// The backward pass's share of a training step (forward : backward ~ 1 : 2).
constexpr double kBackwardShare = 2.0 / 3.0;
// Bytes of one 224x224x3 image: uint8 (decoded JPEG) or fp32 (already normalised on the host).
constexpr double kImageBytesU8 = 224.0 * 224.0 * 3.0;
constexpr double kImageBytesF32 = kImageBytesU8 * 4.0;
// Per-hop latency of a network link when no measurement says otherwise (seconds).
constexpr double kDefaultNetworkLatencyS = 5e-6;
// A step losing at least this share to exposed communication is called all-reduce-bound.
constexpr double kCommBoundShare = 0.10;

// One point of a measured all-reduce curve: message size and bus bandwidth (GB/s, 1e9 B/s).
struct BwPoint {
  double bytes = 0;
  double busbw_gbps = 0;
  double time_s = 0;  // the measured time of one all-reduce of `bytes` (0 when unknown)
};

// The all-reduce bus bandwidth at `bytes`: linear in log2(size) between the two nearest measured
// sizes, the nearest point's value outside the measured range. Points need not be sorted;
// points with no bandwidth are ignored. Throws nb::Error when no point is usable.
double interpolate_busbw(std::vector<BwPoint> points, double bytes);

// Algorithm bandwidth from bus bandwidth for N ranks (nccl-tests' factor): busbw * N / (2(N-1)).
// N = 1: nothing crosses a link, infinite.
double algbw_from_busbw(double busbw_gbps, int n);

// The standard ring all-reduce cost: 2(N-1)/N * bytes / bw + 2(N-1) * latency (seconds), with
// bw the slowest link of the ring in GB/s. N = 1 costs 0.
double ring_allreduce_s(double bytes, int n, double bw_gbps, double latency_s);

// Hierarchical all-reduce over `nodes` nodes of `per_node` GPUs: intra-node reduce-scatter
// ((g-1)/g * bytes / intra busbw), an inter-node ring all-reduce of the node's whole gradient
// over the node's network link (every shard's ring shares it: 2(m-1)/m * bytes / inter bw +
// 2(m-1) latency), intra-node all-gather (as the reduce-scatter).
double hierarchical_allreduce_s(double bytes, int per_node, int nodes, double intra_busbw_gbps, double inter_gbps,
                                double inter_latency_s);

// Where the all-reduce time of a message comes from.
struct CommModel {
  // Measured curves, one per GPU count (from the nccl family's all-reduce records).
  struct Curve {
    int ngpus = 0;
    std::vector<BwPoint> points;
  };
  std::vector<Curve> curves;
  std::optional<double> fixed_busbw_gbps;  // what-if: one bus bandwidth for every size (no curve)
  double intra_latency_s = 0;              // per hop, inside a node
  int nodes = 1;
  std::optional<double> inter_gbps;        // the network between nodes (GB/s per node)
  double inter_latency_s = kDefaultNetworkLatencyS;
};

struct CommEstimate {
  double seconds = 0;
  std::string method;  // how it was computed, with the figures
  bool measured_count = false;  // the curve at exactly this GPU count was measured
};

// The all-reduce time of `bytes` over `per_node` GPUs on each of `model.nodes` nodes. Inside a
// node: the measured curve at that count (interpolated by size), else the curve of the largest
// measured count (ring bus bandwidth is constant in N on a uniform fabric), cost by the ring
// formula. Several nodes: the cheaper of a flat ring bottlenecked by the network and the
// hierarchical scheme. Throws nb::Error when there is nothing to go on.
CommEstimate allreduce_time(const CommModel& model, double bytes, int per_node);

// Exposed communication of one optimiser step: buckets of at most `bucket_bytes` (the last one
// holds the rest), each costing `bucket_time(size)`; every bucket but the last is launched
// during the backward pass (window: the backward time after the first bucket is ready,
// backward * (B-1)/B for B buckets), the last when it ends:
//   exposed = max(0, comm of the first B-1 buckets - window) + time of the last bucket.
struct Overlap {
  int buckets = 0;
  double comm_s = 0;       // all buckets
  double last_s = 0;       // the last bucket
  double window_s = 0;     // the backward time that can hide communication
  double exposed_s = 0;
};
template <class F>
Overlap overlap(double grad_bytes, double bucket_bytes, double backward_s, F bucket_time);

// The gradient accumulation steps that reach `global_batch` with `n` GPUs of per-GPU batch `b`:
// the smallest k with n*b*k >= global_batch (at least 1).
int accumulation_steps(int global_batch, int n, int b);

struct StepInputs {
  double compute_s = 0;       // the one-GPU step at the per-GPU batch
  int batch = 0;              // per GPU
  int accumulation = 1;       // k
  int gpus = 1;               // in total
  double exposed_comm_s = 0;  // from overlap()
  double image_bytes = kImageBytesU8;
  std::optional<double> host_pinned_gbps;    // per GPU, measured or from a profile
  std::optional<double> host_pageable_gbps;
};

struct StepPrediction {
  double step_s = 0;
  double images_per_s = 0;
  double efficiency = 0;       // N-GPU throughput / (N x 1-GPU throughput at the same batch)
  double input_pinned_s = 0;   // host-to-device time of one step's images per GPU (0: unknown)
  double input_pageable_s = 0;
  std::string bottleneck;      // "compute", "gradient all-reduce", "host input pipeline"
  std::string why;             // the figures behind the bottleneck
};

// The step, throughput, efficiency and bottleneck. The input copy overlaps compute (a prefetching
// pipeline from pinned memory): the step is the longer of compute + exposed communication and the
// pinned input time. Bottleneck: the host input pipeline when the pinned input time exceeds the
// rest; else the gradient all-reduce when exposed communication is at least kCommBoundShare of the
// step; else compute.
StepPrediction predict_step(const StepInputs& in);

// Link bandwidths for the what-if (--link), with their sources.
struct LinkFigure {
  std::string name;
  double busbw_gbps = 0;  // the all-reduce bus bandwidth assumed
  double latency_s = 0;
  std::string source;
};
const std::vector<LinkFigure>& link_table();
const LinkFigure* find_link(const std::string& name);

// Parameter server against ring all-reduce for G gradient bytes over N workers with `servers`
// servers, every machine on a link of `bw_gbps`: per step each worker sends G and receives G
// (2G / bw), each server moves 2 G N / servers (2 G N / (servers bw)); the step waits for the
// slower. Returns the PS time; the caller compares it with the all-reduce time.
double parameter_server_s(double grad_bytes, int workers, int servers, double bw_gbps, double latency_s);

}  // namespace nb::advise

// ------------------------------------------------------------------ template definition
namespace nb::advise {
template <class F>
Overlap overlap(double grad_bytes, double bucket_bytes, double backward_s, F bucket_time) {
  Overlap o;
  if (!(grad_bytes > 0) || !(bucket_bytes > 0)) return o;
  const double full = std::floor(grad_bytes / bucket_bytes);
  double rest = grad_bytes - full * bucket_bytes;
  int nfull = int(full);
  if (rest <= 0) {  // the last bucket is a full one
    rest = bucket_bytes;
    nfull -= 1;
  }
  o.buckets = nfull + 1;
  const double t_full = nfull > 0 ? bucket_time(bucket_bytes) : 0.0;
  o.last_s = bucket_time(rest);
  const double before_last = t_full * nfull;
  o.comm_s = before_last + o.last_s;
  o.window_s = backward_s * double(o.buckets - 1) / double(o.buckets);
  o.exposed_s = std::max(0.0, before_last - o.window_s) + o.last_s;
  return o;
}
}  // namespace nb::advise
