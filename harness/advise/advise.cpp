#include "advise/advise.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "base/error.hpp"

namespace nb::advise {

double interpolate_busbw(std::vector<BwPoint> points, double bytes) {
  points.erase(std::remove_if(points.begin(), points.end(),
                              [](const BwPoint& p) { return !(p.bytes > 0) || !(p.busbw_gbps > 0); }),
               points.end());
  if (points.empty()) throw Error("no all-reduce point with a bus bandwidth to interpolate from");
  std::sort(points.begin(), points.end(), [](const BwPoint& a, const BwPoint& b) { return a.bytes < b.bytes; });
  if (bytes <= points.front().bytes) return points.front().busbw_gbps;
  if (bytes >= points.back().bytes) return points.back().busbw_gbps;
  for (size_t i = 1; i < points.size(); ++i) {
    const BwPoint& lo = points[i - 1];
    const BwPoint& hi = points[i];
    if (bytes <= hi.bytes) {
      if (hi.bytes == lo.bytes) return hi.busbw_gbps;
      const double t = (std::log2(bytes) - std::log2(lo.bytes)) / (std::log2(hi.bytes) - std::log2(lo.bytes));
      return lo.busbw_gbps + t * (hi.busbw_gbps - lo.busbw_gbps);
    }
  }
  return points.back().busbw_gbps;
}

double algbw_from_busbw(double busbw_gbps, int n) {
  if (n <= 1) return std::numeric_limits<double>::infinity();
  return busbw_gbps * double(n) / (2.0 * double(n - 1));
}

double ring_allreduce_s(double bytes, int n, double bw_gbps, double latency_s) {
  if (n <= 1 || bytes <= 0) return 0.0;
  if (!(bw_gbps > 0)) throw Error("ring all-reduce: the link bandwidth must be positive");
  return 2.0 * double(n - 1) / double(n) * bytes / (bw_gbps * 1e9) + 2.0 * double(n - 1) * latency_s;
}

double hierarchical_allreduce_s(double bytes, int per_node, int nodes, double intra_busbw_gbps, double inter_gbps,
                                double inter_latency_s) {
  if (bytes <= 0) return 0.0;
  double intra = 0;
  if (per_node > 1) {
    if (!(intra_busbw_gbps > 0)) throw Error("hierarchical all-reduce: the intra-node bandwidth must be positive");
    intra = double(per_node - 1) / double(per_node) * bytes / (intra_busbw_gbps * 1e9);  // reduce-scatter
  }
  const double inter = ring_allreduce_s(bytes, nodes, inter_gbps, inter_latency_s);
  return intra + inter + intra;  // reduce-scatter, inter-node all-reduce, all-gather
}

namespace {

const CommModel::Curve* curve_for(const CommModel& m, int n, bool& exact) {
  const CommModel::Curve* best = nullptr;
  exact = false;
  for (const auto& c : m.curves) {
    if (c.ngpus < 2) continue;
    bool usable = false;
    for (const auto& p : c.points) usable = usable || p.busbw_gbps > 0;
    if (!usable) continue;
    if (c.ngpus == n) {
      exact = true;
      return &c;
    }
    // Otherwise the largest measured count (nearest to what a bigger node's ring looks like).
    if (!best || c.ngpus > best->ngpus) best = &c;
  }
  return best;
}

std::string fmt(double v, int prec = 1) {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(prec);
  os << v;
  return os.str();
}

}  // namespace

CommEstimate allreduce_time(const CommModel& m, double bytes, int per_node) {
  CommEstimate e;
  const int total = per_node * std::max(1, m.nodes);
  if (total <= 1 || bytes <= 0) {
    e.method = "one GPU: no all-reduce";
    e.measured_count = true;
    return e;
  }
  double intra_busbw = 0;
  std::string intra_src;
  if (per_node > 1 || m.nodes > 1) {
    if (m.fixed_busbw_gbps) {
      intra_busbw = *m.fixed_busbw_gbps;
      intra_src = "bus bandwidth " + fmt(intra_busbw) + " GB/s (link table)";
      // What-if with result files: an all-reduce measured on this node at this many GPUs or fewer
      // (the largest such count) bounds the ring where it is slower than the link table's figure:
      // on a two-socket node the ring crosses the sockets, which a uniform link does not show.
      const CommModel::Curve* measured = nullptr;
      for (const auto& c : m.curves)
        if (c.ngpus >= 2 && c.ngpus <= per_node && !c.points.empty() && (!measured || c.ngpus > measured->ngpus))
          measured = &c;
      if (measured) {
        const double bw = interpolate_busbw(measured->points, bytes);
        if (bw > 0 && bw < intra_busbw) {
          intra_busbw = bw;
          intra_src = "bus bandwidth " + fmt(bw) + " GB/s measured over " + std::to_string(measured->ngpus) +
                      " GPUs of the result files (their ring's slowest link, e.g. across CPU sockets), below the "
                      "link table's " + fmt(*m.fixed_busbw_gbps) + " GB/s";
        }
      }
    } else {
      bool exact = false;
      const CommModel::Curve* c = curve_for(m, per_node, exact);
      if (!c) {
        if (per_node > 1 || !m.inter_gbps)
          throw Error("no measured all-reduce over two or more GPUs (nccl family) to predict from");
      } else {
        intra_busbw = interpolate_busbw(c->points, bytes);
        e.measured_count = exact && m.nodes == 1;
        intra_src = "bus bandwidth " + fmt(intra_busbw) + " GB/s at " + fmt(bytes / 1048576.0) + " MiB, measured at " +
                    std::to_string(c->ngpus) + " GPUs" + (exact ? "" : " (taken as constant in the GPU count)");
      }
    }
  }
  if (m.nodes <= 1) {
    e.seconds = ring_allreduce_s(bytes, per_node, intra_busbw, m.intra_latency_s);
    e.method = "ring over " + std::to_string(per_node) + " GPUs, " + intra_src;
    return e;
  }
  if (!m.inter_gbps) throw Error("--nodes above 1 needs --inter-node-gbps (the network between nodes)");
  const double flat = ring_allreduce_s(bytes, total, *m.inter_gbps, m.inter_latency_s);
  const double hier = hierarchical_allreduce_s(bytes, per_node, m.nodes, intra_busbw, *m.inter_gbps, m.inter_latency_s);
  e.measured_count = false;
  if (hier <= flat || per_node == 1) {
    e.seconds = std::min(hier, flat);
    e.method = "hierarchical (intra-node reduce-scatter, ring over " + std::to_string(m.nodes) + " nodes at " +
               fmt(*m.inter_gbps) + " GB/s, all-gather)" + (intra_src.empty() ? "" : ", " + intra_src) +
               "; flat ring " + fmt(flat * 1e3, 2) + " ms";
  } else {
    e.seconds = flat;
    e.method = "flat ring over " + std::to_string(total) + " GPUs bottlenecked by the network at " +
               fmt(*m.inter_gbps) + " GB/s; hierarchical " + fmt(hier * 1e3, 2) + " ms";
  }
  return e;
}

int accumulation_steps(int global_batch, int n, int b) {
  if (n <= 0 || b <= 0) throw Error("accumulation: GPU count and batch must be positive");
  const long long per_step = (long long)n * b;
  if (global_batch <= per_step) return 1;
  return int((global_batch + per_step - 1) / per_step);
}

StepPrediction predict_step(const StepInputs& in) {
  if (!(in.compute_s > 0)) throw Error("step model: the one-GPU step time must be positive");
  if (in.batch <= 0 || in.accumulation <= 0 || in.gpus <= 0)
    throw Error("step model: batch, accumulation and GPU count must be positive");
  StepPrediction p;
  const double k = in.accumulation;
  const double compute = k * in.compute_s;
  const double images_per_gpu = k * in.batch;
  if (in.host_pinned_gbps && *in.host_pinned_gbps > 0)
    p.input_pinned_s = images_per_gpu * in.image_bytes / (*in.host_pinned_gbps * 1e9);
  if (in.host_pageable_gbps && *in.host_pageable_gbps > 0)
    p.input_pageable_s = images_per_gpu * in.image_bytes / (*in.host_pageable_gbps * 1e9);
  const double device = compute + std::max(0.0, in.exposed_comm_s);
  p.step_s = std::max(device, p.input_pinned_s);
  p.images_per_s = double(in.gpus) * images_per_gpu / p.step_s;
  const double one_gpu = double(in.batch) / in.compute_s;
  p.efficiency = p.images_per_s / (double(in.gpus) * one_gpu);
  if (p.input_pinned_s > device) {
    p.bottleneck = "host input pipeline";
    p.why = "copying " + fmt(images_per_gpu, 0) + " images per GPU takes " + fmt(p.input_pinned_s * 1e3, 2) +
            " ms from pinned memory against " + fmt(device * 1e3, 2) + " ms of compute and exposed all-reduce";
  } else if (in.exposed_comm_s >= kCommBoundShare * p.step_s && in.exposed_comm_s > 0) {
    p.bottleneck = "gradient all-reduce";
    p.why = "exposed all-reduce " + fmt(in.exposed_comm_s * 1e3, 2) + " ms is " +
            fmt(100.0 * in.exposed_comm_s / p.step_s) + "% of the " + fmt(p.step_s * 1e3, 2) + " ms step";
  } else {
    p.bottleneck = "compute";
    p.why = "compute " + fmt(compute * 1e3, 2) + " ms of the " + fmt(p.step_s * 1e3, 2) + " ms step (exposed all-reduce " +
            fmt(in.exposed_comm_s * 1e3, 2) + " ms" +
            (p.input_pinned_s > 0 ? ", pinned input " + fmt(p.input_pinned_s * 1e3, 2) + " ms overlapped" : "") + ")";
  }
  return p;
}

const std::vector<LinkFigure>& link_table() {
  // Bus bandwidths an all-reduce reaches in practice, below the links' theoretical rates.
  static const std::vector<LinkFigure> t = {
      {"pcie-gen3", 10.0, 10e-6,
       "PCIe 3.0 x16: 15.75 GB/s per direction theoretical (PCI-SIG 3.0 base specification, 8 GT/s, 128b/130b); "
       "an all-reduce through host bridges and switches reaches about 10 GB/s bus bandwidth"},
      {"pcie-gen4", 20.0, 8e-6,
       "PCIe 4.0 x16: 31.5 GB/s per direction theoretical (PCI-SIG 4.0 base specification, 16 GT/s); "
       "about 20 GB/s all-reduce bus bandwidth"},
      {"nvlink", 120.0, 5e-6,
       "NVLink 2 (V100 SXM2, 6 links): 150 GB/s per direction per GPU (NVIDIA V100 datasheet); about 120 GB/s "
       "all-reduce bus bandwidth over an NVLink ring"},
  };
  return t;
}

const LinkFigure* find_link(const std::string& name) {
  for (const auto& l : link_table())
    if (l.name == name) return &l;
  return nullptr;
}

double parameter_server_s(double grad_bytes, int workers, int servers, double bw_gbps, double latency_s) {
  if (workers <= 0 || servers <= 0 || !(bw_gbps > 0)) throw Error("parameter server: counts and bandwidth must be positive");
  const double worker = 2.0 * grad_bytes / (bw_gbps * 1e9);
  const double server = 2.0 * grad_bytes * double(workers) / (double(servers) * bw_gbps * 1e9);
  return std::max(worker, server) + 2.0 * latency_s;
}

}  // namespace nb::advise
