// `nodebench frameworks`: the PyTorch, TensorFlow and JAX installed in the Python environments a
// user trains in, judged on this node (or for a compute capability named with --for-cc): their
// builds, the code they and every CUDA library they load or ship carry (read from the fatbin
// headers, base/fatbin.hpp), the GPUs they see against those NVML sees, and operations run on
// each GPU. docs/FRAMEWORKS.md.
//
// As doctor's rules, the judgement is a pure function of a report document that the command
// gathers (the probe's answers, the libraries' architectures, the node's GPUs), so that it is
// tested on written reports and can judge a report captured elsewhere (--from).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/fatbin.hpp"
#include "bench/metric.hpp"
#include "check/doctor.hpp"

namespace nb {

// The median training step of a `frameworks --bench` mode, the check's own metric (a bench record's
// metrics, beside images_per_s and warmup_s; docs/SCHEMA.md "Framework reports").
inline constexpr MetricDecl kFrameworkStepTime{"step_time", Unit::ms, Better::lower};

// The frameworks a probe knows, by module name, and how they are named to a user.
const std::vector<std::string>& probed_frameworks();  // torch, tensorflow, jax
std::string framework_title(const std::string& module);  // "PyTorch", "TensorFlow", "JAX"

// The probe script (harness/check/framework_probe.py) and the bench script
// (harness/check/framework_bench.py, `--bench`), embedded at build time, and what they share
// (harness/check/framework_common.py), written beside them under that name, as they import it.
const char* framework_probe_script();
const char* framework_bench_script();
const char* framework_common_script();
inline constexpr const char* kFrameworkCommonFile = "framework_common.py";

// A library's fatbin architectures as the report keeps them: {"path", "sass": [...], "ptx": [...],
// "containers", "entries"} or {"path", "error"}.
nlohmann::json fatbin_library_json(const std::string& path, const FatbinContents* c, const std::string& error);
// Its architectures in doctor's form (check/doctor.hpp), for match_arch.
std::vector<ArchEntry> arch_entries_of(const nlohmann::json& library);

// Lines of a probe's output that explain a missing GPU or library: TensorFlow's "Ignoring visible
// gpu device", PyTorch's "no longer supports this GPU", failed library loads, driver too old.
std::vector<std::string> explaining_lines(const std::string& log);

// The report document (schema nodebench.frameworks, docs/FRAMEWORKS.md):
// {"node": {"gpus": [{"index", "cc", "name"}], "nvml_gpus", "source": "nvml"|"for-cc",
//           "cuda_visible_devices", "driver_version", "cuda_driver_version"},
//  "environments": [{"python", "found_by", "probe": {...}, "run": {...},
//                    "frameworks": {"torch": {"probe": {...}, "run": {...}, "libraries": [...]}}}],
//  "records": [...]}  (--bench: one per framework, mode and GPU count; docs/FRAMEWORKS.md)
// Returns the checks; throws nb::Error naming what is malformed.
std::vector<Check> judge_frameworks(const nlohmann::json& report, const RuleData& data = RuleData::builtin());

// Validates a report read from a file (--from) enough to judge it; throws nb::Error naming the field.
void check_frameworks_report(const nlohmann::json& report, const std::string& path);

}  // namespace nb
