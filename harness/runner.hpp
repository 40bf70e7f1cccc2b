// The commands: list, run, env. Each returns the process exit code.
#pragma once
#include "cli.hpp"

namespace nb {

int cmd_list(const Command& cmd);
int cmd_run(const Command& cmd);
int cmd_env(const Command& cmd);

// Cases of the registered families for a suite, restricted to families and a filter.
// Throws nb::Error naming an unknown family.
std::vector<Case> select_cases(Suite suite, const std::vector<std::string>& families,
                               const std::string& filter);

}  // namespace nb
