// The run's options as recorded in the result file, and the file's header (everything before the
// records), shared by run and validate.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "run/options.hpp"
#include "run/session.hpp"

namespace nb {

nlohmann::json options_json(const RunOptions& o, double max_time);
// env with each of its GPUs (and each host's, under MPI) given the verdict of the build
// architectures rule (node/arch_rule.hpp) for a build of `archs`: environment.gpus[].build_support.
nlohmann::json with_build_support(nlohmann::json env, const std::string& archs);
nlohmann::json run_header(const std::vector<std::string>& argv, const Session& session, const RunOptions& o,
                          double max_time, const std::string& run_id);

}  // namespace nb
