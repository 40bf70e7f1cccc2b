// The commands: list, run, env. Each returns the process exit code.
#pragma once
#include <cstdint>

#include "cli.hpp"
#include "plan.hpp"
#include "session.hpp"

namespace nb {

int cmd_list(const Command& cmd);
int cmd_run(const Command& cmd);
int cmd_env(const Command& cmd);

// The run's options as recorded in the result file, and the file's header (everything before
// the records), shared by run and validate.
nlohmann::json options_json(const RunOptions& o, double max_time);
nlohmann::json run_header(const Command& cmd, const Session& session, const RunOptions& o, double max_time,
                          const std::string& run_id);

// SIGINT/SIGTERM during `run`: the first stops the run after the current case and writes the
// file with run_status "interrupted"; a second one within kInterruptRepeatNs is the same
// interruption delivered twice and is ignored (GNU timeout signals the child and then its whole
// process group, so a run under `timeout` gets SIGTERM twice at once, which used to kill it and
// leave the file at run_status "running"); a later one ends the process the default way.
enum class InterruptAction { stop_after_case, ignore, terminate };
constexpr int64_t kInterruptRepeatNs = 2'000'000'000;
InterruptAction interrupt_action(int64_t now_ns, int64_t& first_ns);

}  // namespace nb
