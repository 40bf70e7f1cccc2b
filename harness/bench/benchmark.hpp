// The interface between a benchmark family and the harness.
//
// A family lists its cases for a suite; each case declares its axes (params), says whether it
// can run on a GPU (and why not), and runs: setup, then ctx.measure() around the timed work,
// then ctx.set_throughput() to declare the work one launch does, then verification.
// The harness turns the work into metrics and percent of peak, captures clocks, and writes the
// record. A case that cannot run calls ctx.skip(reason, kind); a wrong result calls ctx.wrong(why).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "node/environment.hpp"
#include "base/error.hpp"
#include "bench/measure.hpp"
#include "base/status.hpp"
#include "bench/algo_choice.hpp"
#include "bench/metric.hpp"
#include "bench/metric_registry.hpp"
#include "bench/resources_store.hpp"
#include "bench/settings.hpp"

namespace nb {

enum class Suite { quick, full };
std::optional<Suite> parse_suite(const std::string& s);
std::string to_string(Suite s);

struct Availability {
  bool ok = true;
  std::string reason;  // why not, when !ok
  ReasonKind kind = ReasonKind::none;  // the skipped record's reason_kind, when !ok
  static Availability yes() { return {}; }
  static Availability no(std::string why, ReasonKind k = ReasonKind::unsupported) { return {false, std::move(why), k}; }
};

// Thrown by ctx.skip(); the harness records the case as skipped with the reason and its kind.
struct SkipCase {
  SkipCase(std::string why, ReasonKind k) : reason(std::move(why)), kind(k) {}
  std::string reason;
  ReasonKind kind;
};

class CaseContext;

// What a case predicts it costs (the run's estimate of time left and --budget, run/estimate.hpp):
// `setup_s` (allocation, algorithm search, verification, warm-up) and `sample_s` (its timed
// sampling; scaled when a budget shortens sampling). `kind` groups cases that run at one pace:
// the estimate calibrates each kind by the cases of it done so far.
struct CaseCost {
  std::string kind;
  double setup_s = 0;
  double sample_s = 0;
  // A case of a batch sweep that stops at its plateau (bench/sweep.hpp): the sweep's name (one per
  // series, e.g. "train/fp16/nhwc") and the case's batch, so that the estimate counts the sweep's
  // later cases only as far as the sweep is predicted to go.
  std::string sweep;
  int64_t batch = 0;
  double total() const { return setup_s + sample_s; }
};

// What a case's cost is predicted from.
struct CostInput {
  const GpuInfo& gpu;
  const MeasureConfig& cfg;
  int gpus = 1;  // the GPUs a multi-GPU case runs over
};

struct Case {
  std::string family;
  std::string name;  // unique within the family; built from params
  nlohmann::json params = nlohmann::json::object();
  // Whether the case can run on a GPU, known before any work (null: runs anywhere); a host-only
  // case's is judged on the run's first GPU (not at all in a run without one), by the run and its estimate.
  std::function<Availability(const GpuInfo&)> available;
  std::function<void(CaseContext&)> run;
  std::optional<L2Mode> l2;  // the family's default when the user did not choose
  // Runs once over every selected GPU (ctx.gpus()) instead of once per GPU; `min_gpus` says
  // how many it needs (fewer: skipped with the reason).
  bool multi_gpu = false;
  int min_gpus = 1;
  // Measures the host, not a GPU (CPU cores decoding images): runs once per run, needs no GPU
  // (a run whose cases are all host-only runs without one), and its record has `gpus: []`. Its
  // context has the run's GPUs in gpus() (none without a GPU) and no GPU of its own: it times
  // itself (set_measurement) and may not call gpu(), measure() or stream().
  bool host_only = false;
  // Set from the family (Family::shares_host) when cases are selected.
  bool shares_host = false;
  // A per-GPU case that runs on the first selected GPU only: what it measures is the host's, the
  // same from every GPU (the latency-bound small host copies), so that a node of many GPUs does
  // not pay it once per GPU. The plan says so (docs/SCHEMA.md, "plan").
  bool first_gpu_only = false;
  // Its predicted cost (bench/cost.hpp) on a GPU with a sampling config, over `gpus` GPUs (a
  // multi-GPU case; 1 for the others); null: the default (the sampling cap and a fixed setup,
  // kind = family).
  std::function<CaseCost(const CostInput&)> cost;
  std::string id() const { return family + "/" + name; }
};

// A case builder from declared axes (as nvbench's add_int64_axis / add_string_axis): the cases
// are the cartesian product of the axes in declaration order (the last varies fastest), less the
// points `where` drops; a case's params are what its axis values set, its name the labels of its
// values joined by '/' (or a template, name()), so that families declare their cases instead of
// building names and params in nested loops. A suite of several such sets is their cases one
// after the other (append_cases).
struct AxisValue {
  nlohmann::json params = nlohmann::json::object();  // what the value sets: one param or several
  std::string label;                                  // its part of the case name ("": none)
};
struct AxisPoint {
  nlohmann::json params = nlohmann::json::object();
  std::map<std::string, std::string> labels;  // by axis
  std::string name;
  int64_t int64(const std::string& param) const { return params.at(param).get<int64_t>(); }
  std::string str(const std::string& param) const { return params.at(param).get<std::string>(); }
  bool has(const std::string& param) const { return params.contains(param); }
};
class Axes {
 public:
  Axes& add_string(const std::string& name, const std::vector<std::string>& values);
  // Named in the case name as `prefix` + value, e.g. "b" -> b64.
  Axes& add_int64(const std::string& name, const std::vector<int64_t>& values, const std::string& prefix = "");
  // Byte counts, named 8B, 64KiB, 1MiB, 4GiB.
  Axes& add_bytes(const std::string& name, const std::vector<int64_t>& values);
  // An axis whose values each set one or more params (a shape sets m, n and k) and carry their
  // own label; `name` names the axis (for the template), not a param.
  Axes& add_values(const std::string& name, const std::vector<AxisValue>& values);
  // A param every point has, not part of the name.
  Axes& set(const std::string& param, nlohmann::json value);
  // Keeps only the points `keep` accepts (called with the point's params and labels).
  Axes& where(std::function<bool(const AxisPoint&)> keep);
  // The case name from a template: "{x}" is the label of axis x, or where no axis named x has a
  // label (a param set()) the value of param x (e.g. "layer/{layer}/{precision}/b{batch}"). Default: every non-empty label
  // in declaration order, joined by '/'. An unknown name throws nb::Error.
  Axes& name(std::string tmpl);
  std::vector<AxisPoint> points() const;
  // One case per point with family, name and params set; `fill` sets the rest (run, available...).
  std::vector<Case> cases(const std::string& family, const std::function<void(const AxisPoint&, Case&)>& fill) const;

 private:
  struct Axis {
    std::string name;
    std::vector<AxisValue> values;
  };
  std::string name_of(const AxisPoint& p) const;
  std::vector<Axis> axes_;
  std::vector<std::function<bool(const AxisPoint&)>> keep_;
  std::string template_;
};
// Appends `more` to `out` (the cases of a suite declared as several products).
void append_cases(std::vector<Case>& out, std::vector<Case> more);
std::string bytes_label(int64_t bytes);

// A validation check a family declares (docs/VALIDATE.md), so that what the family knows lives in
// its own file: at level 2 `nodebench validate` runs the quick-suite cases `runs_case` accepts
// (the largest by params.bytes), and judges, per GPU, the largest record `judges` accepts with
// `value` against the threshold `id` (thresholds.json) of the GPU's model: failed or wrong
// records fail the check, skipped ones skip it. A check of the node as a whole (peer pairs,
// collectives) sets `node` instead of `judges`/`value`: it names what to judge from the whole
// document.
struct CheckInput {
  const nlohmann::json& environment;  // the result file's environment
  int gpu;
  std::string unit;                   // the threshold's unit: percent_of_peak, percent_of_link, gbps, ...
};
// One judgement a node check asks for: a record against the threshold `id` of `model_gpu`'s model.
struct Judgement {
  std::string id;                          // threshold key, e.g. "p2p.nvlink"
  std::optional<int> gpu, peer;            // what the check is reported for (nullopt: the node)
  int model_gpu = 0;                       // whose model's thresholds apply
  const nlohmann::json* record = nullptr;  // null: "no <what> record in this run"
  std::string what;
  std::string skip;                        // not empty: not judged, for this reason
  std::function<std::optional<double>(const nlohmann::json& record, std::string& how)> value;
};
struct NodeCheckInput {
  const nlohmann::json& doc;    // the result document
  const std::vector<int>& gpus;  // the GPUs validated
  std::function<std::string(const std::string& id, int gpu)> unit;  // the threshold's unit for that GPU's model
};
struct ValidationCheck {
  std::string id;    // threshold key, e.g. "memory.copy"; for a node check, the id it is skipped under
  std::string what;  // a phrase for the evidence ("no <what> record in this run")
  std::string fix;   // what to do when it fails below its threshold
  int min_level = 2;       // judged from this validation level
  int required_level = 0;  // from this level a family not built is reported (0: never)
  int min_gpus = 1;        // fewer GPUs: skipped ("needs two GPUs"), and its case not planned
  std::function<bool(const Case&)> runs_case;
  std::function<bool(const nlohmann::json& record)> judges;
  // The value in the threshold's unit, and `how` it was read; nullopt when it cannot be judged.
  std::function<std::optional<double>(const nlohmann::json& record, const CheckInput& in, std::string& how)> value;
  std::function<std::vector<Judgement>(const NodeCheckInput& in)> node;
  // A node check whose thresholds are chosen per link class: the keys' prefix, e.g. "p2p." for
  // p2p.nvlink, p2p.pcie, p2p.sys (a lowercase word after it); empty: its one key is `id`.
  std::string keys_prefix;
  // Whether `key` is a threshold key of this check.
  bool has_key(const std::string& key) const;
};

// A family's threshold keys (docs/VALIDATE.md): its benchmarks/<family>/thresholds.json, the
// defaults and per-model overrides of its checks' keys in the format of the core's
// harness/profiles/thresholds.json, built into the binary with the family (nb_family THRESHOLDS,
// cmake/NodebenchLayers.cmake) and merged over the core file by the threshold loader.
struct ThresholdFragment {
  std::string family;
  std::string origin;  // the file it was built from, e.g. benchmarks/gemm/thresholds.json
  const char* json = nullptr;
};
std::vector<ThresholdFragment>& threshold_fragments();
struct ThresholdsRegistrar {
  explicit ThresholdsRegistrar(ThresholdFragment f) { threshold_fragments().push_back(std::move(f)); }
};

class Family {
 public:
  virtual ~Family() = default;
  virtual std::string name() const = 0;
  virtual std::string description() const = 0;
  virtual std::vector<Case> cases(Suite suite) const = 0;
  // Whether its cases contend for something all GPUs of a node share (the host link, host
  // memory, the CPU's timing of latencies): such cases run one GPU at a time. The others run on
  // every selected GPU at once (one host thread per GPU), and their records say so (`mode`).
  virtual bool shares_host() const { return false; }
  // Whether its cases run only when the family is named (--family, `nodebench burn`): a case that
  // runs for minutes is in no suite's default selection nor in `validate --level 3`.
  virtual bool explicit_only() const { return false; }
  // Its validation checks (level 2 and up).
  virtual std::vector<ValidationCheck> validation_checks() const { return {}; }
};

// An analysis over the run's records (a verdict, a recommendation), declared by the family file
// that knows it and run by run_plan after the cases when `applies` says the records hold its
// input. Its result goes to the file's `analysis[key]`; `lines` are printed after the summary.
struct AnalysisContext {
  std::vector<const GpuInfo*> gpus;  // the GPUs of the run
  double memory_fraction = 0.9;      // --memory-fraction
  int global_batch = 256;            // --global-batch
  nlohmann::json environment;        // the result's environment (under MPI with ranks and nodes)
};
struct Analysis {
  std::string key;
  std::function<bool(const nlohmann::json& records)> applies;
  std::function<nlohmann::json(const nlohmann::json& records, const AnalysisContext& ctx)> run;
  std::function<std::vector<std::string>(const nlohmann::json& result)> lines;
};
std::vector<Analysis>& analysis_registry();
struct AnalysisRegistrar {
  explicit AnalysisRegistrar(Analysis a) { analysis_registry().push_back(std::move(a)); }
};

// Families register themselves with a static Registrar in their own file.
std::vector<std::unique_ptr<Family>>& family_registry();
struct Registrar {
  explicit Registrar(std::unique_ptr<Family> f) { family_registry().push_back(std::move(f)); }
};

struct CasePart;

// What a case reports besides its timing.
struct CaseOutput {
  nlohmann::json metrics = nlohmann::json::object();  // by name; the unit from the name's suffix
  std::vector<Metric> typed_metrics;                  // set with CaseContext::metric: unit and direction
  nlohmann::json details = nlohmann::json::object();
  std::optional<Measurement> measurement;
  MeasureConfig config;
  // Work per launch, in the unit of `metric` x seconds: e.g. tflops: 2mnk / 1e12.
  std::string throughput_metric;
  double work_per_launch = 0;
  std::string peak_key;
  // The case's figure of merit, written into the record (`primary_metric`, `primary_better`);
  // empty: the throughput metric (higher is better), else latency_us or time_us (lower).
  std::string primary_metric;
  bool primary_higher = true;
  bool wrong = false;
  std::string wrong_reason;
  // Flags the family sets on the record, after the harness's own (docs/SCHEMA.md: e.g. single_rank).
  std::vector<std::string> flags;
  // Further records the case emits (a multi-GPU case: one per GPU pair, per GPU count); when
  // there are parts, the case's own record is written only if it timed something itself or
  // did not finish ok. `extra_params`: params known only at run time (the GPU count), merged
  // into the record's params. `analysis`: merged (JSON merge patch) into the file's analysis.
  std::vector<CasePart> parts;
  nlohmann::json extra_params = nlohmann::json::object();
  nlohmann::json analysis = nlohmann::json::object();
  // A metric the family declared (bench/metric.hpp's MetricDecl, in its <family>_metrics.hpp):
  // there is no way to write one by a name alone.
  void metric(const MetricDecl& decl, double value) { typed_metrics.push_back(decl.with(value)); }
  // A metric whose name holds a run-time key (one per GPU): `decl`'s name for `key`.
  void metric(const KeyedMetricDecl& decl, const std::string& key, double value) {
    typed_metrics.push_back(decl.with(key, value));
  }
  // The throughput the harness computes from the median time (see CaseContext::set_throughput).
  void set_throughput(const MetricDecl& metric, double work, const std::string& key) {
    throughput_metric = metric.name();
    work_per_launch = work;
    peak_key = key;
  }
};

// One further record of a case: id "<family>/<case>/<name>", params the case's and these.
struct CasePart {
  std::string name;
  nlohmann::json params = nlohmann::json::object();
  std::vector<int> gpus;        // the GPUs the record is about
  Status status = Status::ok;   // ok, skipped, failed; wrong comes from out.wrong
  std::string reason;
  ReasonKind reason_kind = ReasonKind::none;  // set with a status other than ok (none: by the status alone)
  double duration_s = -1;       // < 0: the case's
  CaseOutput out;
};

// Records an exception out of a part's work on the part (see outcome_of).
inline void set_outcome(CasePart& part, const std::exception& e) {
  const Outcome o = outcome_of(e);
  part.status = o.status;
  part.reason = o.reason;
  part.reason_kind = o.kind;
  part.out.measurement.reset();
}

// What the Session lends a case besides its GPU: the settings in force, the resources it keeps
// between cases (per GPU and for the whole session) and the algorithm cache.
struct CaseServices {
  const Settings* settings = nullptr;
  ResourceStore* gpu_resources = nullptr;
  ResourceStore* session_resources = nullptr;
  AlgoCache* algo_cache = nullptr;
  // What a family keeps on this GPU while its cases run one after another (host buffers whose
  // page-locking costs more than the copies): emptied when a case of another family runs here.
  ResourceStore* family_resources = nullptr;
  // Whether the run was asked to stop (Ctrl-C); null or empty: never.
  const std::function<bool()>* stop_requested = nullptr;
};

class CaseContext {
 public:
  CaseContext(const GpuInfo& gpu, const Nvml& nvml, Measurer& measurer, cudaStream_t stream,
              MeasureConfig cfg, std::vector<const GpuInfo*> gpus, CaseServices services)
      : gpu_(&gpu), nvml_(nvml), measurer_(&measurer), stream_(stream), gpus_(std::move(gpus)), services_(services) {
    out_.config = cfg;
    if (gpus_.empty()) gpus_.push_back(gpu_);
    if (!services_.settings || !services_.gpu_resources || !services_.session_resources || !services_.algo_cache)
      throw Error("CaseContext: the session's services are incomplete");
  }
  // A host-only case's context (Case::host_only): the run's GPUs, possibly none, and no GPU of
  // its own (so no per-GPU resources either).
  CaseContext(const Nvml& nvml, MeasureConfig cfg, std::vector<const GpuInfo*> gpus, CaseServices services)
      : nvml_(nvml), gpus_(std::move(gpus)), services_(services) {
    out_.config = cfg;
    if (!services_.settings || !services_.session_resources || !services_.algo_cache)
      throw Error("CaseContext: the session's services are incomplete");
  }
  bool host_only() const { return gpu_ == nullptr; }
  const Settings& settings() const { return *services_.settings; }
  // What a family keeps on this GPU between cases (library handles, algorithm choices): made on
  // first use with this GPU current, destroyed with the Session.
  ResourceStore& gpu_resources() {
    if (!services_.gpu_resources) throw Error("a host-only case has no GPU resources");
    return *services_.gpu_resources;
  }
  // What a family keeps on this GPU for its next cases: made on first use with this GPU current,
  // destroyed when a case of another family runs on this GPU (or with the Session).
  ResourceStore& family_resources() {
    if (!services_.family_resources) throw Error("this case has no family resources (a host-only case)");
    return *services_.family_resources;
  }
  // What spans GPUs (NCCL teams over a GPU set), likewise.
  ResourceStore& session_resources() { return *services_.session_resources; }
  AlgoCache& algo_cache() { return *services_.algo_cache; }
  const GpuInfo& gpu() const {
    if (!gpu_) throw Error("a host-only case has no GPU of its own (use gpus())");
    return *gpu_;
  }
  // Every GPU of a multi-GPU case (the first is gpu()).
  const std::vector<const GpuInfo*>& gpus() const { return gpus_; }
  const Nvml& nvml() const { return nvml_; }
  // Whether the run was asked to stop (SIGINT/SIGTERM): a case that runs for minutes (the burn)
  // polls it and ends early, keeping what it measured.
  bool stop_requested() const { return services_.stop_requested && *services_.stop_requested && (*services_.stop_requested)(); }
  cudaStream_t stream() const { return stream_; }
  const MeasureConfig& config() const { return out_.config; }

  // Times `launch` (see Measurer). Call once per case.
  void measure(const std::function<void(cudaStream_t)>& launch) {
    out_.measurement = measurer().measure(stream_, launch, out_.config);
  }
  // A further measurement inside one case (a network of layers); not recorded by itself.
  Measurement measure_sub(const std::function<void(cudaStream_t)>& launch, const MeasureConfig& cfg) {
    return measurer().measure(stream_, launch, cfg);
  }
  // For cases that time themselves (several GPUs at once): per-sample seconds per launch.
  void set_measurement(Measurement m) { out_.measurement = std::move(m); }
  MeasureConfig& mutable_config() { return out_.config; }
  // One launch does `work` units of `metric` x seconds (tflops: flops / 1e12; gbps: bytes / 1e9);
  // the harness divides by the median time and looks up `peak_key` in the GPU's peaks.
  // `metric` is the family's declaration of its rate (a bare unit: tflops, gbps, images_per_s).
  void set_throughput(const MetricDecl& metric, double work, const std::string& peak_key) {
    out_.set_throughput(metric, work, peak_key);
  }
  // The record's figure of merit when it is not the throughput metric (e.g. images_per_s), in
  // its declared direction (lower only where it says lower).
  void set_primary_metric(const MetricDecl& metric) {
    out_.primary_metric = metric.name();
    out_.primary_higher = metric.better != Better::lower;
  }
  void add_part(CasePart p) { out_.parts.push_back(std::move(p)); }
  nlohmann::json& extra_params() { return out_.extra_params; }
  nlohmann::json& analysis() { return out_.analysis; }
  // A metric the family declared (its <family>_metrics.hpp, registered with NB_REGISTER_METRICS).
  void metric(const MetricDecl& decl, double value) { out_.metric(decl, value); }
  void metric(const KeyedMetricDecl& decl, const std::string& key, double value) { out_.metric(decl, key, value); }
  nlohmann::json& details() { return out_.details; }
  // Skips the case: its record is skipped with `reason` and `kind` (oom, unsupported, not_built...).
  [[noreturn]] void skip(const std::string& reason, ReasonKind kind) { throw SkipCase{reason, kind}; }
  void wrong(const std::string& reason) {
    out_.wrong = true;
    out_.wrong_reason = reason;
  }
  CaseOutput& output() { return out_; }

 private:
  Measurer& measurer() {
    if (!measurer_) throw Error("a host-only case has no GPU timer (use set_measurement)");
    return *measurer_;
  }
  const GpuInfo* gpu_ = nullptr;
  const Nvml& nvml_;
  Measurer* measurer_ = nullptr;
  cudaStream_t stream_ = nullptr;
  std::vector<const GpuInfo*> gpus_;
  CaseServices services_;
  CaseOutput out_;
};

}  // namespace nb
