#include "app/commands.hpp"

#include <fstream>
#include <iostream>

#include "advise/advice.hpp"
#include "advise/advise_inputs.hpp"
#include "base/error.hpp"
#include "base/json_file.hpp"

namespace nb {

int cmd_advise(const AdviseCommand& c) {
  const AdviseOptions& o = c.options;
  try {
    if (o.files.empty() && o.profile.empty())
      throw Error("give result files (nodebench advise RESULT.json...) or a what-if (--profile NAME --gpus N --link L)");
    std::vector<nlohmann::json> docs;
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
  return kExitOk;
}

}  // namespace nb
