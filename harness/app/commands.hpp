// The commands, one function each: they take their parsed command (and the argument list, for
// the result file) and return the process exit code.
#pragma once
#include <string>
#include <vector>

#include "app/cli.hpp"

namespace nb {

using Argv = std::vector<std::string>;
int cmd_list(const ListCommand& c);
int cmd_run(const RunCommand& c, const Argv& argv);
int cmd_env(const EnvCommand& c);
int cmd_doctor(const DoctorCommand& c);  // live, or --from a capture
int cmd_validate(const ValidateCommand& c, const Argv& argv);
int cmd_monitor(const MonitorCommand& c);
int cmd_advise(const AdviseCommand& c, const Argv& argv);  // argv: --measure's result file
int cmd_fatbin(const FatbinCommand& c);
int cmd_frameworks(const FrameworksCommand& c);
int cmd_burn(const BurnCommand& c, const Argv& argv);
// The burn's timeline file beside its result file: X.json -> X.timeline.jsonl.
std::string burn_timeline_path(const std::string& result_path);

// Runs the parsed command.
int dispatch(const Command& cmd);

}  // namespace nb
