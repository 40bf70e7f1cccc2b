// The one way a command runs benchmarks (`run`, `validate`, `advise --measure`): the plan from the options (the
// cases selected inside make_plan), the command's output formats from the registry
// (run/formats.hpp), run_plan, and the formats told as the run goes and when it ends. The command
// keeps what is its own: where the result file goes, the MPI and signal handling of `run`,
// validate's judging.
#pragma once
#include <string>
#include <vector>

#include "run/formats.hpp"
#include "run/plan.hpp"

namespace nb {

class Pipeline {
 public:
  // Selects and plans (make_plan); throws nb::Error naming a bad family or filter.
  Pipeline(FormatCommand command, const RunOptions& o, Session& session, std::vector<int> gpus);
  const Plan& plan() const { return plan_; }
  // Makes the command's formats over `doc`, the result file at `result_file` (written at once:
  // throws nb::Error when it cannot be). `start_line`: what run's console says first.
  void attach(RunDocument& doc, const std::string& result_file, const std::string& start_line = "");
  // Runs into `doc` writing nothing (an MPI rank other than 0: rank 0 writes the run).
  void attach_without_formats(RunDocument& doc) { doc_ = &doc; }
  RunOutcome run(const RunHooks& hooks = {});
  const MadeFormats& formats() const { return formats_; }

 private:
  FormatCommand command_;
  const RunOptions& options_;
  Session& session_;
  Plan plan_;
  RunDocument* doc_ = nullptr;
  MadeFormats formats_;
};

}  // namespace nb
