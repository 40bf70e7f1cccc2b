// Internals of `nodebench frameworks`' judgement shared by frameworks.cpp (the report as a whole),
// frameworks_framework.cpp (one framework's build, code, devices and operations) and
// frameworks_bench.cpp (the --bench records): not an interface of the check layer.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "check/doctor.hpp"
#include "check/doctor_util.hpp"

namespace nb::frameworks_detail {
using nlohmann::json;

struct NodeGpu {
  int index = 0;
  std::optional<int> cc;
  std::string name;
  std::string label() const {
    return "GPU " + std::to_string(index) + " (" + name + (cc ? ", cc " + cc_string(*cc) : std::string()) + ")";
  }
};

std::string tail_lines(const std::string& s, size_t n);  // the last n lines, trailing blanks trimmed
std::string basename_of(const std::string& path);
std::string prefix_of(const json& env, bool several);  // "[python] " with several environments, else ""
// The run record of a probe step: {"exit_code", "timed_out", "seconds", "log", "description"}.
std::string run_text(const json& run);
std::string joined(const std::vector<std::string>& v, const std::string& sep = ", ");

// The cuDNN wheel to pin for GPUs a current cuDNN has dropped (frameworks.json tensorflow.cudnn_pin).
struct CudnnPin {
  int below_cc = 0;
  std::string requirement, why;
};
std::optional<CudnnPin> cudnn_pin(const RuleData& data);
// The install line of a build of `mod` (torch, tensorflow, jax) that carries code for cc.
std::string framework_install_fix(const std::string& mod, const RuleData& data, std::optional<int> cc);

// One framework of one environment: import, build, archs, libraries, devices, ops, allreduce.
void judge_framework(const json& env, const std::string& mod, const json& fw, const std::vector<NodeGpu>& gpus,
                     const json& node, const std::string& pre, const RuleData& data, std::vector<Check>& out);
// The --bench records of the report (its "records"): per mode, scaling, fast settings, mixed precision.
void judge_bench(const json& report, const std::vector<NodeGpu>& gpus, const RuleData& data, std::vector<Check>& out);

}  // namespace nb::frameworks_detail
