// The commands list, run and env (declared in app/commands.hpp); how `run` treats signals is
// app/run_signals.hpp.
#pragma once
#include "app/commands.hpp"
#include "app/run_signals.hpp"
#include "run/plan.hpp"
#include "run/session.hpp"
