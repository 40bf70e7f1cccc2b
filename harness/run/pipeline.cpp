#include "run/pipeline.hpp"

#include "base/error.hpp"

namespace nb {

Pipeline::Pipeline(FormatCommand command, const RunOptions& o, Session& session, std::vector<int> gpus)
    : command_(command), options_(o), session_(session), plan_(make_plan(o, session, std::move(gpus))) {}

void Pipeline::attach(RunDocument& doc, const std::string& result_file, const std::string& start_line) {
  doc_ = &doc;
  FormatContext ctx;
  ctx.options = &options_;
  ctx.file = result_file;
  ctx.doc = &doc;
  ctx.start_line = start_line;
  formats_ = make_formats(command_, FormatStage::run, ctx);
}

RunOutcome Pipeline::run(const RunHooks& hooks) {
  if (!doc_) throw Error("Pipeline::run before attach");
  return run_plan(plan_, session_, *doc_, formats_.reporters(), hooks);
}

}  // namespace nb
