// The commands, one function each: they take the parsed command and return the process exit code.
#pragma once
#include "app/cli.hpp"

namespace nb {

int cmd_list(const Command& cmd);
int cmd_run(const Command& cmd);
int cmd_env(const Command& cmd);
int cmd_doctor(const Command& cmd);
int cmd_doctor_from(const Command& cmd);
int cmd_validate(const Command& cmd);
int cmd_monitor(const Command& cmd);
int cmd_advise(const Command& cmd);

}  // namespace nb
