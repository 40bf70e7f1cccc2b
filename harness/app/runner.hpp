// The commands list, run and env (declared in app/commands.hpp); how `run` treats signals is
// app/run_signals.hpp.
#pragma once
#include "app/commands.hpp"
#include "app/run_signals.hpp"
#include "run/plan.hpp"
#include "run/session.hpp"

namespace nb {

// Whether this process (and every MPI rank) can run the cases: a GPU, or only host-only cases;
// else prints why, as `run` does before it exits 3.
bool runnable_here(const Session& session, const std::vector<Case>& cases);

// advise --measure: the cases of `o` (its selections) planned, run and written through the one
// Pipeline as `run` does (the result file, the console), the document left in `doc_out`; `run`'s
// exit code (2 bad selection or path, 3 no GPU, 1 a case failed). With `list`: prints the plan
// (no GPU needed) and returns 0.
int run_for_advice(const RunOptions& o, bool list, const Argv& argv, nlohmann::json& doc_out);

}  // namespace nb

