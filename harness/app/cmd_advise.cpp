#include "app/commands.hpp"

#include <fstream>
#include <iostream>

#include "advise/advice.hpp"
#include "advise/advise_inputs.hpp"
#include "base/error.hpp"
#include "base/json_file.hpp"
#include "app/runner.hpp"

namespace nb {

int cmd_advise(const AdviseCommand& c, const Argv& argv) {
  const AdviseOptions& o = c.options;
  std::vector<nlohmann::json> docs;
  std::vector<std::string> files = o.files;
  int measured = kExitOk;
  if (c.measure) {  // this node's run, planned, run and written as `run` does (run/pipeline.hpp)
    nlohmann::json doc;
    measured = run_for_advice(c.run, c.list, argv, doc);
    if (c.list || !doc.is_object()) return measured;  // the plan printed, or no run (exit 2 or 3)
    docs.push_back(std::move(doc));
    files.push_back("the measured run");
  }
  try {
    if (files.empty() && o.profile.empty())
      throw Error("give result files (nodebench advise RESULT.json...), --measure, or a what-if "
                  "(--profile NAME --gpus N --link L)");
    if (c.measure) {  // its records read exactly as a file's
      check_schema_version(docs.back(), files.back());
      advise::check_result_document(docs.back(), files.back());
    }
    for (const auto& f : o.files) {
      docs.push_back(read_json_file(f));  // a folder, a device, unreadable or not JSON: named, exit 2
      check_schema_version(docs.back(), f);
      advise::check_result_document(docs.back(), f);  // a record or a figure out of place: named
    }
    // What the families contribute (bench/contributions.hpp), the host's input rate among it.
    const advise::Inputs in = advise::gather_inputs(docs, o.grad_dtype);
    const nlohmann::json advice = advise::build_advice(in, o);
    std::cout << advise::advice_text(advice);
    if (!o.json_file.empty()) {
      std::ofstream os(o.json_file);
      if (!os) throw Error("--json: cannot write '" + o.json_file + "'");
      os << advice.dump(2) << "\n";
      if (!os) throw Error("--json: writing '" + o.json_file + "' failed");
    }
  } catch (const Error& e) {
    std::cerr << "nodebench advise: " << e.what() << "\n";
    return kExitUsage;
  }
  return measured;
}

}  // namespace nb
