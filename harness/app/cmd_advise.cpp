#include "app/commands.hpp"

#include <fstream>
#include <iostream>

#include "advise/advice.hpp"
#include "base/error.hpp"

namespace nb {

int cmd_advise(const AdviseCommand& c) {
  const AdviseOptions& o = c.options;
  try {
    if (o.files.empty() && o.profile.empty())
      throw Error("give result files (nodebench advise RESULT.json...) or a what-if (--profile NAME --gpus N --link L)");
    std::vector<nlohmann::json> docs;
    for (const auto& f : o.files) {
      std::ifstream is(f);
      if (!is) throw Error(f + ": cannot read the file (missing or unreadable)");
      try {
        docs.push_back(nlohmann::json::parse(is));
      } catch (const nlohmann::json::exception& e) {
        throw Error(f + ": not a JSON result file (" + e.what() + ")");
      }
      if (!docs.back().is_object() || !docs.back().contains("records"))
        throw Error(f + ": not a nodebench result file (no 'records')");
    }
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
  return kExitOk;
}

}  // namespace nb
