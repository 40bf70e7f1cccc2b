// The example family (tests only; tests/example_family/README.md): a device fill at a few sizes.
// It shows every part a family has, each where a real family keeps it: its cases from declared
// axes, a setting (NODEBENCH_EXAMPLE_FILLS) read through the settings in force, a validation check
// whose threshold's default is in this folder's thresholds.json; its analysis is in
// example_analysis.cpp and its report module in reports/nodebench_reports/families/example.py.
#include <cuda_runtime.h>

#include "base/resources.hpp"
#include "bench/benchmark.hpp"
#include "bench/settings.hpp"
#include "bench/validate_values.hpp"
#include "example_metrics.hpp"

namespace nb {
namespace {

const char* const kFills = "NODEBENCH_EXAMPLE_FILLS";
const SettingRegistrar kFillsSetting({.name = kFills,
                                      .kind = SettingKind::integer,
                                      .key = "example_fills",
                                      .default_value = 1,
                                      .max = 16,
                                      .help = "=N fills of the buffer per timed launch of the example family (1 to 16)",
                                      .owner = "example"});

// The quick suite fills 1 MiB and 64 MiB; the full suite also 1 GiB.
std::vector<int64_t> sizes(Suite suite) {
  std::vector<int64_t> out{int64_t(1) << 20, int64_t(64) << 20};
  if (suite == Suite::full) out.push_back(int64_t(1) << 30);
  return out;
}

void run_fill(CaseContext& ctx, int64_t bytes) {
  const int64_t fills = ctx.settings().integer(kFills);
  DeviceBuffer buf{size_t(bytes)};
  ctx.measure([&](cudaStream_t s) {
    for (int64_t i = 0; i < fills; ++i) NB_CUDA(cudaMemsetAsync(buf.get(), int(i & 0xff), size_t(bytes), s));
  });
  ctx.set_throughput(example::kFillRate, double(fills) * double(bytes) / 1e9, "mem_gbps");
  ctx.details()["fills"] = fills;
}

ValidationCheck fill_check() {
  ValidationCheck c = gpu_check("example.fill", "example fill",
                                "The device fill is slow: see the memory family's memory.copy check for what to look at.");
  c.runs_case = [](const Case& k) { return k.params.value("kernel", "") == "fill"; };
  c.judges = [](const nlohmann::json& r) { return r.contains("params") && r["params"].value("kernel", "") == "fill"; };
  c.value = [](const nlohmann::json& r, const CheckInput&, std::string& how) { return percent_of_peak_value(r, how); };
  return c;
}

class ExampleFamily : public Family {
 public:
  std::string name() const override { return "example"; }
  std::string description() const override { return "Example: a device fill at a few sizes (tests only)"; }
  std::vector<Case> cases(Suite suite) const override {
    Axes axes;
    axes.add_string("kernel", {"fill"}).add_bytes("bytes", sizes(suite));
    return axes.cases("example", [](const AxisPoint& p, Case& c) {
      const int64_t bytes = p.int64("bytes");
      c.run = [bytes](CaseContext& ctx) { run_fill(ctx, bytes); };
    });
  }
  std::vector<ValidationCheck> validation_checks() const override { return {fill_check()}; }
};

const Registrar registrar(std::make_unique<ExampleFamily>());
// Its metrics, once: what `nodebench list --metrics` lists and a result file read back is checked against.
NB_REGISTER_METRICS("example", {example::kFillRate});

}  // namespace
}  // namespace nb
