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
// The first also wakes the run's signal watcher, which ends the run at once (the result file
// written "interrupted" with the cases measured so far, the case under way not recorded) when it
// has not reached the end of its case within kInterruptGraceMs: a signal stops a run within a
// second, not after a case of minutes.
enum class InterruptAction { stop_after_case, ignore, terminate };
constexpr int kInterruptGraceMs = 500;
constexpr int64_t kInterruptRepeatNs = 2'000'000'000;
InterruptAction interrupt_action(int64_t now_ns, int64_t& first_ns);

}  // namespace nb
