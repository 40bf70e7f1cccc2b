#include "run/header.hpp"

#include <chrono>
#include <cstdio>

#include "build_info.hpp"
#include "node/arch_rule.hpp"
#include "run/result.hpp"

namespace nb {
using nlohmann::json;

json options_json(const RunOptions& o, double max_time) {
  return {{"suite", to_string(o.suite)},
          {"families", o.families},
          {"filter", o.filter},
          {"gpus", o.gpus},
          {"repetitions", o.repetitions},
          {"max_time_s", max_time},
          {"target_cv", o.target_cv},
          {"min_samples", o.min_samples},
          {"l2", o.l2 ? (*o.l2 == L2Mode::cold ? "cold" : "hot") : "family default"},
          {"profiles_file", o.profiles_file.empty() ? json(nullptr) : json(o.profiles_file)},
          {"concurrent", !o.one_gpu_at_a_time},
          {"runs", o.runs},
          {"global_batch", o.global_batch},
          {"algo_cache_file", o.algo_cache_file.empty() ? json(nullptr) : json(o.algo_cache_file)},
          {"algo_search", o.algo_search},
          {"monitor_interval_s", o.monitor_interval_s ? json(*o.monitor_interval_s) : json(nullptr)}};
}

json with_build_support(json env, const std::string& archs) {
  auto mark = [&archs](json& e) {
    if (!e.is_object() || !e.contains("gpus") || !e["gpus"].is_array()) return;
    for (json& g : e["gpus"]) {
      if (!g.is_object() || !g.contains("compute_capability") || !g["compute_capability"].is_string()) continue;
      int major = 0, minor = 0;
      if (std::sscanf(g["compute_capability"].get<std::string>().c_str(), "%d.%d", &major, &minor) != 2) continue;
      const int value = major * 10 + minor;
      g["build_support"] = build_support_json(build_support(archs, value));
    }
  };
  mark(env);
  if (env.contains("nodes") && env["nodes"].is_array())
    for (json& n : env["nodes"])
      if (n.is_object() && n.contains("environment")) mark(n["environment"]);
  return env;
}

json run_header(const std::vector<std::string>& argv, const Session& session, const RunOptions& o, double max_time,
                const std::string& run_id) {
  return {{"run_id", run_id},
          {"started_at", iso_utc(std::chrono::system_clock::now())},
          {"nodebench",
           {{"version", NODEBENCH_VERSION},
            {"git_commit", NODEBENCH_GIT_COMMIT},
            {"command_line", argv},
            {"cuda_architectures", NODEBENCH_CUDA_ARCHITECTURES}}},
          {"options", options_json(o, max_time)},
          {"settings", session.settings().to_json()},
          {"environment", with_build_support(session.env().json, NODEBENCH_CUDA_ARCHITECTURES)}};
}

}  // namespace nb
