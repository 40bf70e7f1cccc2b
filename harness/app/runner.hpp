// The commands list, run and env (declared in app/commands.hpp), and how `run` treats signals.
#pragma once
#include <cstdint>

#include "app/commands.hpp"
#include "run/plan.hpp"
#include "run/session.hpp"

namespace nb {

// SIGINT/SIGTERM during `run`: the first stops the run after the current case and writes the
// file with run_status "interrupted"; a second one within kInterruptRepeatNs is the same
// interruption delivered twice and is ignored (GNU timeout signals the child and then its whole
// process group, so a run under `timeout` gets SIGTERM twice at once, which used to kill it and
// leave the file at run_status "running"); a later one ends the process the default way.
enum class InterruptAction { stop_after_case, ignore, terminate };
constexpr int64_t kInterruptRepeatNs = 2'000'000'000;
InterruptAction interrupt_action(int64_t now_ns, int64_t& first_ns);

}  // namespace nb
