// `nodebench frameworks --bench`: the bench modes of one framework of one Python environment, each
// run as its own process (check/framework_bench.py) under --bench-timeout, made into the report's
// records (docs/FRAMEWORKS.md, "--bench"). Internal to the frameworks command.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "base/subprocess.hpp"
#include "check/options.hpp"

namespace nb {

// A process's run as the report keeps it: {"exit_code", "signal", "timed_out", "seconds",
// "timeout_s", "description", "log" (the output's last 16 kB)}.
nlohmann::json subprocess_run_json(const SubprocessResult& r, double timeout_s);

// The bench records of framework `module` (torch, tensorflow) in `python`, whose probe answered
// `fw_probe` (its version and the GPUs it sees); `dir` is a private folder for the script and the
// answers. An empty array when the framework sees no GPU or is not benched.
nlohmann::json bench_framework(const std::string& python, const std::string& dir, const std::string& module,
                               const nlohmann::json& fw_probe, const FrameworksOptions& o);

}  // namespace nb
