// The interface between a benchmark family and the harness.
//
// A family lists its cases for a suite; each case declares its axes (params), says whether it
// can run on a GPU (and why not), and runs: setup, then ctx.measure() around the timed work,
// then ctx.set_throughput() to declare the work one launch does, then verification.
// The harness turns the work into metrics and percent of peak, captures clocks, and writes the
// record. A case that cannot run calls ctx.skip(reason); a wrong result calls ctx.wrong(why).
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "environment.hpp"
#include "measure.hpp"

namespace nb {

enum class Suite { quick, full };
std::optional<Suite> parse_suite(const std::string& s);
std::string to_string(Suite s);

struct Availability {
  bool ok = true;
  std::string reason;  // why not, when !ok
  static Availability yes() { return {}; }
  static Availability no(std::string why) { return {false, std::move(why)}; }
};

// Thrown by ctx.skip(); the harness records the case as skipped with the reason.
struct SkipCase {
  std::string reason;
};

class CaseContext;

struct Case {
  std::string family;
  std::string name;  // unique within the family; built from params
  nlohmann::json params = nlohmann::json::object();
  std::function<Availability(const GpuInfo&)> available;  // null: runs anywhere
  std::function<void(CaseContext&)> run;
  std::optional<L2Mode> l2;  // the family's default when the user did not choose
  std::string id() const { return family + "/" + name; }
};

class Family {
 public:
  virtual ~Family() = default;
  virtual std::string name() const = 0;
  virtual std::string description() const = 0;
  virtual std::vector<Case> cases(Suite suite) const = 0;
};

// Families register themselves with a static Registrar in their own file.
std::vector<std::unique_ptr<Family>>& family_registry();
struct Registrar {
  explicit Registrar(std::unique_ptr<Family> f) { family_registry().push_back(std::move(f)); }
};

// What a case reports besides its timing.
struct CaseOutput {
  nlohmann::json metrics = nlohmann::json::object();
  nlohmann::json details = nlohmann::json::object();
  std::optional<Measurement> measurement;
  MeasureConfig config;
  // Work per launch, in the unit of `metric` x seconds: e.g. tflops: 2mnk / 1e12.
  std::string throughput_metric;
  double work_per_launch = 0;
  std::string peak_key;
  bool wrong = false;
  std::string wrong_reason;
};

class CaseContext {
 public:
  CaseContext(const GpuInfo& gpu, const Nvml& nvml, Measurer& measurer, cudaStream_t stream,
              MeasureConfig cfg)
      : gpu_(gpu), nvml_(nvml), measurer_(measurer), stream_(stream) {
    out_.config = cfg;
  }
  const GpuInfo& gpu() const { return gpu_; }
  cudaStream_t stream() const { return stream_; }
  const MeasureConfig& config() const { return out_.config; }

  // Times `launch` (see Measurer). Call once per case.
  void measure(const std::function<void(cudaStream_t)>& launch) {
    out_.measurement = measurer_.measure(stream_, launch, out_.config);
  }
  // One launch does `work` units of `metric` x seconds (tflops: flops / 1e12; gbps: bytes / 1e9);
  // the harness divides by the median time and looks up `peak_key` in the GPU's peaks.
  void set_throughput(const std::string& metric, double work, const std::string& peak_key) {
    out_.throughput_metric = metric;
    out_.work_per_launch = work;
    out_.peak_key = peak_key;
  }
  nlohmann::json& metrics() { return out_.metrics; }
  nlohmann::json& details() { return out_.details; }
  [[noreturn]] void skip(const std::string& reason) { throw SkipCase{reason}; }
  void wrong(const std::string& reason) {
    out_.wrong = true;
    out_.wrong_reason = reason;
  }
  CaseOutput& output() { return out_; }

 private:
  const GpuInfo& gpu_;
  const Nvml& nvml_;
  Measurer& measurer_;
  cudaStream_t stream_;
  CaseOutput out_;
};

}  // namespace nb
