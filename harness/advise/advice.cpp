#include "advise/advice.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <set>
#include <sstream>

#include "advise/advise_overhead.hpp"
#include "base/error.hpp"
#include "node/profiles.hpp"

namespace nb {
namespace advise {
namespace {

using nlohmann::json;

// ResNet-50 training work per 224x224 image: forward 4.1 GMAC = 8.2 GFLOP, backward twice that.
constexpr double kTrainFlopsPerImage = 3.0 * 8.2e9;
// What-if: the share of the profile's peak a ResNet-50 training step is assumed to sustain. An
// assumption, not a measurement (no GPU of a profile's kind was measured for it; docs/ADVISE.md),
// and labelled so wherever it is used; --step-ms replaces it with a measured step.
constexpr double kProfileComputeShare = 0.40;
// What-if: host-to-device copies are assumed to reach these shares of the PCIe rate (pinned, pageable).
constexpr double kPinnedShareOfPcie = 0.8;
constexpr double kPageableShareOfPcie = 0.4;
const char* kProfileLabel = "predicted from profile, not measured";

std::string fmt(double v, int prec = 1) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(prec) << v;
  return os.str();
}

const DeviceProfile* find_profile(const ProfileDb& db, const std::string& name) {
  for (const auto& p : db.profiles())
    if (p.name == name) return &p;
  return db.find(name);
}

double number(const DeviceProfile& p, const char* key) {
  auto it = p.numbers.find(key);
  return it == p.numbers.end() ? 0.0 : it->second;
}

struct Setup {
  CommModel comm;
  std::vector<StepSource> steps;
  bool what_if = false;
  std::string label = "predicted from measured results";
  std::optional<double> pinned, pageable;
  std::string host_source;
  std::vector<std::string> assumptions;
  std::vector<std::string> fp16;  // statements' figures
  std::optional<bool> fp16_pays;
};

Setup what_if_setup(const Inputs& in, const AdviseOptions& o) {
  Setup s;
  s.what_if = true;
  s.label = kProfileLabel;
  if (o.link.empty()) throw Error("--profile needs --link (pcie-gen3, pcie-gen4 or nvlink)");
  if (o.gpus.empty()) throw Error("--profile needs --gpus N (the GPU count of the what-if)");
  const ProfileDb db = ProfileDb::builtin();
  const DeviceProfile* p = find_profile(db, o.profile);
  if (!p) {
    std::string known;
    for (const auto& q : db.profiles()) known += (known.empty() ? "" : ", ") + q.name;
    throw Error("--profile: '" + o.profile + "' is not a device profile (known: " + known + ")");
  }
  const LinkFigure* link = find_link(o.link);
  if (!link) throw Error("--link: '" + o.link + "' is not pcie-gen3, pcie-gen4 or nvlink");
  s.comm.fixed_busbw_gbps = link->busbw_gbps;
  s.comm.intra_latency_s = link->latency_s;
  // The all-reduce measured in the result files given with the what-if (a two-socket node's ring
  // across the sockets) bounds the link table's figure at the counts it covers.
  for (const auto& c : in.curves) s.comm.curves.push_back(c);
  if (!in.curves.empty())
    s.assumptions.push_back("the all-reduce measured in the result files bounds the link's figure at " +
                            std::string("their GPU counts and above (the slower of the two is used)"));
  s.assumptions.push_back("link " + link->name + ": " + fmt(link->busbw_gbps) + " GB/s all-reduce bus bandwidth, " +
                          fmt(link->latency_s * 1e6) + " us per hop (" + link->source + ")");
  const double fp32 = number(*p, "fp32_tflops");
  const double tensor = std::max(number(*p, "fp16_tensor_tflops"), number(*p, "fp16_tflops"));
  const bool fp16 = tensor > 1.5 * fp32;
  s.fp16_pays = fp16;
  s.fp16.push_back("the " + p->name + "'s FP16 rate " +
                   fmt(tensor, 2) + " TFLOP/s against FP32 " + fmt(fp32, 2) + " TFLOP/s (profile: " + p->source +
                   "; " + kProfileLabel + ")");
  const double tflops = fp16 ? tensor : fp32;
  const int batch = o.batch.value_or(64);
  StepSource st;
  st.precision = o.step_ms ? "framework" : (fp16 ? "fp16" : "fp32");
  st.layout = "-";
  st.batch = batch;
  if (o.step_ms) {
    st.step_s = *o.step_ms * 1e-3;
    st.source = "--step-ms " + fmt(*o.step_ms, 2);
  } else {
    if (!(tflops > 0)) throw Error("--profile: '" + p->name + "' has no FP32 or FP16 rate to predict a step from");
    st.step_s = batch * kTrainFlopsPerImage / (tflops * 1e12 * kProfileComputeShare);
    st.source = "profile " + p->name + ": " + fmt(batch, 0) + " images x 24.6 GFLOP at an assumed " +
                fmt(100 * kProfileComputeShare, 0) + "% of " + fmt(tflops, 2) + " TFLOP/s (" + st.precision +
                "; an assumption, not measured)";
  }
  s.steps.push_back(st);
  if (auto pc = pcie_gbps(unsigned(number(*p, "pcie_gen")), unsigned(number(*p, "pcie_width")))) {
    s.pinned = *pc * kPinnedShareOfPcie;
    s.pageable = *pc * kPageableShareOfPcie;
    s.host_source = "PCIe gen " + fmt(number(*p, "pcie_gen"), 0) + " x" + fmt(number(*p, "pcie_width"), 0) + " " +
                    fmt(*pc) + " GB/s: assumed pinned " + fmt(100 * kPinnedShareOfPcie, 0) + "%, pageable " +
                    fmt(100 * kPageableShareOfPcie, 0) + "% of it (" + kProfileLabel + ")";
  }
  s.assumptions.push_back("what-if step time: ResNet-50 training 24.6 GFLOP per image at an assumed " +
                          fmt(100 * kProfileComputeShare, 0) +
                          "% of the profile's peak (an assumption, not a measurement: give --step-ms with a "
                          "measured step to replace it)");
  return s;
}

Setup measured_setup(const Inputs& in, const AdviseOptions& o) {
  Setup s;
  if (in.nccl_settings.size() > 1) {
    std::string all;
    for (const auto& x : in.nccl_settings) all += (all.empty() ? "" : " | ") + x;
    throw Error("the all-reduce records were measured under different NCCL settings (" + all +
                "): give the files of one setting (one transport) at a time");
  }
  for (const auto& c : in.curves) s.comm.curves.push_back(c);
  s.pinned = in.pinned_gbps;
  s.pageable = in.pageable_gbps;
  s.host_source = in.host_source;
  if (o.step_ms) {
    if (!o.batch) throw Error("--step-ms needs --batch (the per-GPU batch that step time is for)");
    StepSource st;
    st.precision = "framework";
    st.layout = "-";
    st.batch = *o.batch;
    st.step_s = *o.step_ms * 1e-3;
    st.source = "--step-ms " + fmt(*o.step_ms, 2);
    s.steps.push_back(st);
  } else {
    s.steps = in.steps;
    if (o.batch) {
      s.steps.erase(std::remove_if(s.steps.begin(), s.steps.end(), [&](const StepSource& x) { return x.batch != *o.batch; }),
                    s.steps.end());
    }
    if (s.steps.empty())
      throw Error("no usable step time in the result files: no ok train/resnet50 or conv/resnet50 train record" +
                  std::string(o.batch ? " at --batch " + std::to_string(*o.batch) : "") +
                  " (or give --step-ms and --batch)");
    // Rows whose step is a partial one: the note of the family it came from, once per kind.
    std::set<std::string> noted;
    for (const auto& x : s.steps)
      if (x.partial && noted.insert(x.kind).second)
        if (const auto it = in.partial_step_notes.find(x.kind); it != in.partial_step_notes.end() && !it->second.empty())
          s.assumptions.push_back(it->second);
  }
  for (const auto& v : in.fp16_verdicts) {  // pays only where no GPU's verdict says otherwise
    s.fp16.push_back("measured verdict " + v);
    if (v.rfind("pays", 0) == 0) s.fp16_pays = s.fp16_pays.value_or(true);
    else s.fp16_pays = false;
  }
  // The training step itself in both precisions, where both were measured.
  for (const auto& a : in.steps)
    for (const auto& b : in.steps)
      if (a.precision == "fp16" && b.precision == "fp32" && a.layout == b.layout && a.batch == b.batch)
        s.fp16.push_back("ResNet-50 step at batch " + std::to_string(a.batch) + " (" + a.layout + "): FP16 " +
                         fmt(a.step_s * 1e3, 2) + " ms against FP32 " + fmt(b.step_s * 1e3, 2) + " ms (" +
                         fmt(b.step_s / a.step_s, 2) + "x; " + a.source + ", " + b.source + ")");
  if (!in.curve_dtype.empty())
    s.assumptions.push_back("all-reduce curve: nccl all_reduce " + in.curve_dtype +
                            " records (NCCL settings: " + (in.nccl_settings.empty() ? std::string("not recorded") : *in.nccl_settings.begin()) +
                            "), bus bandwidth interpolated in log2(size) between measured sizes, constant "
                            "outside them; counts beyond the measured ones keep the largest count's bus bandwidth");
  return s;
}

}  // namespace

std::vector<int> parse_counts(const std::string& text) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty() || item.size() > 6 ||
        !std::all_of(item.begin(), item.end(), [](unsigned char c) { return std::isdigit(c); }) || std::stoi(item) < 1)
      throw Error("--gpus: '" + item + "' is not a GPU count (expected a list like 1,2,4)");
    out.push_back(std::stoi(item));
  }
  if (out.empty()) throw Error("--gpus: empty list");
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

namespace {

// The gradient and input sizes the rows are predicted with.
struct Sizes {
  double params = 0, grad_bytes = 0, bucket = 0, image_bytes = 0;
};

Sizes sizes_of(const AdviseOptions& o) {
  Sizes z;
  z.params = o.params.value_or(kResnet50Params);
  z.grad_bytes = z.params * (o.grad_dtype == "fp16" ? 2.0 : 4.0);
  z.bucket = o.bucket_mib * 1048576.0;
  z.image_bytes = o.image_dtype == "fp32" ? kImageBytesF32 : kImageBytesU8;
  return z;
}

// The GPU counts per node: --gpus, else 1, every measured all-reduce count and every train_dp count.
// Throws when more than one GPU (or node) needs an all-reduce that nothing predicts.
std::vector<int> gpu_counts(const Inputs& in, const AdviseOptions& o, const Setup& s) {
  std::vector<int> counts;
  if (!o.gpus.empty()) {
    counts = parse_counts(o.gpus);
  } else {
    std::set<int> c{1};
    for (const auto& cv : s.comm.curves) c.insert(cv.ngpus);
    for (const auto& d : in.dp)
      if (d.gpus % o.nodes == 0) c.insert(d.gpus / o.nodes);
    counts.assign(c.begin(), c.end());
  }
  bool need_comm = o.nodes > 1;
  for (int n : counts) need_comm = need_comm || n > 1;
  if (need_comm && !s.comm.fixed_busbw_gbps && s.comm.curves.empty() && !(o.nodes > 1 && std::all_of(counts.begin(), counts.end(), [](int n) { return n == 1; })))
    throw Error("no usable all-reduce records (nccl family, all_reduce over 2 or more GPUs, status ok) in the result "
                "files: nothing to predict the gradient all-reduce from");
  return counts;
}

void add_model_assumptions(Setup& s, const Inputs& in, const AdviseOptions& o, const Sizes& z) {
  s.assumptions.push_back("gradient: " + fmt(z.params, 0) + " parameters" + (o.params ? "" : " (ResNet-50)") + " x " +
                          (o.grad_dtype == "fp16" ? "2 bytes (FP16 gradients)" : "4 bytes (FP32 gradients, as AMP keeps)") +
                          " = " + fmt(z.grad_bytes / 1048576.0) + " MiB, in " + fmt(o.bucket_mib) + " MiB buckets");
  s.assumptions.push_back("backward pass = 2/3 of the one-GPU step; every bucket but the last overlaps it, the last is "
                          "exposed; with accumulation k only the last micro-step's backward overlaps");
  s.assumptions.push_back("input: " + fmt(z.image_bytes, 0) + " bytes per image (" + o.image_dtype +
                          " 224x224x3), copied per GPU over its own host link, overlapped with compute");
  std::string left_out;
  for (const auto& c : left_out_costs()) left_out += (left_out.empty() ? "" : "; ") + c;
  s.assumptions.push_back("efficiency: an upper bound set by communication and input (the exposed gradient "
                          "all-reduce and the host copy); left out, each making a real step slower: " + left_out);
  // Decoding is judged apart, by the input line, when the input family's records are given.
  s.assumptions.back() += in.input_pipeline.measured()
                              ? "; JPEG decoding and augmentation on the CPU are judged apart by the input line, from the "
                                "input family's records (one worker per core, the step's rate to feed)"
                              : " (run the input family to judge decoding on the CPU)";
}

// One row: the step `st` over `n` GPUs per node with accumulation `k`, and the train_dp record of
// the same shape where one was measured.
json advice_row(const Inputs& in, const AdviseOptions& o, const Setup& s, const Sizes& z, const StepSource& st, int n,
                int k) {
  const int total = n * o.nodes;
  auto bucket_time = [&](double bytes) { return allreduce_time(s.comm, bytes, n).seconds; };
  const Overlap ov = overlap(z.grad_bytes, z.bucket, kBackwardShare * st.step_s, bucket_time);
  const CommEstimate whole = allreduce_time(s.comm, z.grad_bytes, n);
  StepInputs si;
  si.compute_s = st.step_s;
  si.batch = st.batch;
  si.accumulation = k;
  si.gpus = total;
  si.exposed_comm_s = total > 1 ? ov.exposed_s : 0.0;
  si.image_bytes = z.image_bytes;
  si.host_pinned_gbps = s.pinned;
  si.host_pageable_gbps = s.pageable;
  const StepPrediction p = predict_step(si);
  json row = {{"precision", st.precision}, {"layout", st.layout}, {"batch", st.batch}, {"accumulation", k},
              {"gpus", total}, {"gpus_per_node", n}, {"nodes", o.nodes}, {"compute_ms", st.step_s * 1e3},
              {"step_ms", p.step_s * 1e3}, {"images_per_s", p.images_per_s}, {"efficiency", p.efficiency},
              {"allreduce_ms", whole.seconds * 1e3}, {kRowExposedComm.name(), si.exposed_comm_s * 1e3},
              {"buckets", ov.buckets}, {"input_pinned_ms", p.input_pinned_s * 1e3},
              {"input_pageable_ms", p.input_pageable_s * 1e3}, {"bottleneck", p.bottleneck}, {"why", p.why},
              {"comm_method", whole.method}, {"step_source", st.source},
              {kRowPeakMemory.name(), st.peak_memory_bytes ? json(*st.peak_memory_bytes) : json(nullptr)},
              {"step_kind", s.what_if && !o.step_ms ? "profile" : o.step_ms ? "framework" : st.kind},
              {"label", s.label},
              {"measured", nullptr}};
  for (const auto& d : in.dp)
    if (d.precision == st.precision && d.layout == st.layout && d.batch == st.batch && d.gpus == total &&
        d.accumulation == k) {
      row["measured"] = {{"id", d.id}, {"images_per_s", d.images_per_s},
                         {"efficiency", d.efficiency ? json(*d.efficiency) : json(nullptr)},
                         {"error_pct", 100.0 * (p.images_per_s - d.images_per_s) / d.images_per_s}};
    }
  return row;
}

// Every step at every count, with the accumulation the global batch asks for and each one measured.
json advice_rows(const Inputs& in, const AdviseOptions& o, const Setup& s, const Sizes& z, const std::vector<int>& counts) {
  json rows = json::array();
  for (const auto& st : s.steps)
    for (int n : counts) {
      const int total = n * o.nodes;
      std::set<int> ks{o.global_batch ? accumulation_steps(*o.global_batch, total, st.batch) : 1};
      for (const auto& d : in.dp)
        if (d.precision == st.precision && d.layout == st.layout && d.batch == st.batch && d.gpus == total)
          ks.insert(d.accumulation);
      for (int k : ks) rows.push_back(advice_row(in, o, s, z, st, n, k));
    }
  return rows;
}

// The train records' peak memory per (precision, layout, batch), for the larger-batch statement.
json train_memory(const Inputs& in) {
  json out = json::array();
  for (const auto& s : in.steps)
    if (s.peak_memory_bytes)
      out.push_back({{"precision", s.precision}, {"layout", s.layout}, {"batch", s.batch},
                     {kRowPeakMemory.name(), *s.peak_memory_bytes}, {"source", s.source}});
  return out;
}

}  // namespace

json build_advice(const Inputs& in, const AdviseOptions& o) {
  if (!o.link.empty() && o.profile.empty()) throw Error("--link is for the what-if: give --profile too");
  if (o.nodes > 1 && !o.inter_node_gbps)
    throw Error("--nodes " + std::to_string(o.nodes) + ": more than one node needs --inter-node-gbps");
  Setup s = o.profile.empty() ? measured_setup(in, o) : what_if_setup(in, o);
  s.comm.nodes = o.nodes;
  s.comm.inter_gbps = o.inter_node_gbps;
  const std::vector<int> counts = gpu_counts(in, o, s);
  const Sizes z = sizes_of(o);
  add_model_assumptions(s, in, o, z);
  json rows = advice_rows(in, o, s, z, counts);
  if (const int n = apply_measured_overhead(rows, in.dp))
    s.assumptions.push_back("measured step overhead: " + std::to_string(n) + " row(s) of more than one GPU also show "
                            "the bound with the overhead a train_dp record measured added to the step "
                            "(efficiency_with_overhead; each row's measured_overhead says from which record and how)");
  json advice = {{"schema", "nodebench.advise"}, {"schema_version", 1}, {"label", s.label},
                 {"files", o.files},             {"rows", rows},      {"assumptions", s.assumptions}};
  advice["efficiency_definition"] = efficiency_definition();
  advice["inputs"] = {{"grad_bytes", z.grad_bytes},
                      {"params", z.params},
                      {"grad_dtype", o.grad_dtype},
                      {"bucket_mib", o.bucket_mib},
                      {"image_bytes", z.image_bytes},
                      {"nodes", o.nodes},
                      {"inter_node_gbps", o.inter_node_gbps ? json(*o.inter_node_gbps) : json(nullptr)},
                      {"host_pinned_gbps", s.pinned ? json(*s.pinned) : json(nullptr)},
                      {"host_pageable_gbps", s.pageable ? json(*s.pageable) : json(nullptr)},
                      {"host_source", s.host_source},
                      {"global_batch", o.global_batch ? json(*o.global_batch) : json(nullptr)},
                      {"gpu_memory_bytes", in.gpu_memory_bytes ? json(*in.gpu_memory_bytes) : json(nullptr)},
                      {"gpu_memory_note", in.gpu_memory_note},
                      {"train_memory", train_memory(in)},
                      {"what_if", s.what_if ? json({{"profile", o.profile}, {"link", o.link}}) : json(nullptr)}};
  std::set<std::string> partial_kinds;
  if (!s.what_if && !o.step_ms)
    for (const auto& st : s.steps)
      if (st.partial) partial_kinds.insert(st.kind);
  advice["recommendation"] = recommend(advice, s.comm, s.fp16, s.fp16_pays, o, in.input_pipeline, partial_kinds);
  return advice;
}

}  // namespace advise

}  // namespace nb
