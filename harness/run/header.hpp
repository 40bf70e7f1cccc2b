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
nlohmann::json run_header(const std::vector<std::string>& argv, const Session& session, const RunOptions& o,
                          double max_time, const std::string& run_id);

}  // namespace nb
