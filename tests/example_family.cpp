// An example family, built into a test binary only (not into nodebench): everything a family
// knows is in this one file -- its cases from declared axes, what it shares, its primary metric
// and its validation check -- and it needs one CMake line (tests/CMakeLists.txt). A real family
// is this file in benchmarks/ plus one line in benchmarks/CMakeLists.txt.
#include "bench/benchmark.hpp"
#include "kernels/common/kernels.cuh"
#include "base/resources.hpp"

namespace nb {
namespace {

class ExampleFamily : public Family {
 public:
  std::string name() const override { return "example"; }
  std::string description() const override { return "Example: a device fill at a few sizes (tests only)"; }
  std::vector<Case> cases(Suite suite) const override {
    Axes axes;
    axes.add_string("kernel", {"fill"});
    axes.add_bytes("bytes", suite == Suite::quick ? std::vector<int64_t>{1 << 20, 64 << 20}
                                                  : std::vector<int64_t>{1 << 20, 64 << 20, int64_t(1) << 30});
    return axes.cases("example", [](const AxisPoint& p, Case& c) {
      const int64_t bytes = p.int64("bytes");
      c.run = [bytes](CaseContext& ctx) {
        DeviceBuffer b{size_t(bytes)};
        ctx.measure([&](cudaStream_t s) { NB_CUDA(cudaMemsetAsync(b.get(), 0, size_t(bytes), s)); });
        ctx.set_throughput("gbps", double(bytes) / 1e9, "mem_gbps");
      };
    });
  }
  std::vector<ValidationCheck> validation_checks() const override {
    ValidationCheck c;
    c.id = "example.fill";
    c.what = "example fill";
    c.runs_case = [](const Case& k) { return k.params.value("kernel", "") == "fill"; };
    c.judges = [](const nlohmann::json& r) { return r["params"].value("kernel", "") == "fill"; };
    c.value = [](const nlohmann::json& r, const CheckInput& in, std::string& how) -> std::optional<double> {
      if (in.unit != "gbps" || !r["metrics"].contains("gbps")) return std::nullopt;
      const double v = r["metrics"]["gbps"].get<double>();
      how = std::to_string(v) + " GB/s";
      return v;
    };
    return {c};
  }
};

const Registrar registrar(std::make_unique<ExampleFamily>());

}  // namespace
}  // namespace nb
