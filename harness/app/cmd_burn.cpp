// `nodebench burn`: the burn family's case on every selected GPU at once, through `run`, with
// its duration and precision as settings and its timeline (JSON lines) beside the result file;
// then a line per GPU (sustained GEMM rate, mean power, errors) and whether it was cut short.
#include <filesystem>
#include <fstream>
#include <iostream>

#include "app/commands.hpp"
#include "base/error.hpp"
#include "base/json_fields.hpp"
#include "base/text.hpp"
#include "bench/contributions.hpp"
#include "bench/settings.hpp"
#include "check/validate_outputs.hpp"

namespace nb {
using nlohmann::json;
namespace fs = std::filesystem;

std::string burn_timeline_path(const std::string& result_path) {
  std::string p = result_path;
  if (p.size() > 5 && p.substr(p.size() - 5) == ".json") p.resize(p.size() - 5);
  return p + ".timeline.jsonl";
}

int cmd_burn(const BurnCommand& c, const Argv& argv) {
  const BurnOptions& b = c.options;
  RunCommand rc;
  RunOptions& o = rc.options;
  o.families = {"burn"};
  o.gpus = b.gpus;
  o.quiet = b.quiet;
  o.out_dir = b.out_dir;
  o.out_file = b.out_file.empty() ? (fs::path(b.out_dir) / ("nodebench-burn-" + utc_stamp("%Y%m%dT%H%M%SZ") + ".json")).string()
                                  : b.out_file;
  const std::string timeline = burn_timeline_path(o.out_file);
  try {
    set_current_settings(current_settings()
                             .with("NODEBENCH_BURN_DURATION", fmt(b.duration_s, 3))
                             .with("NODEBENCH_BURN_PRECISION", b.precision)
                             .with("NODEBENCH_BURN_TIMELINE", timeline));
  } catch (const Error& e) {
    std::cerr << "nodebench: " << e.what() << "\n";
    return kExitUsage;
  }
  const int code = cmd_run(rc, argv);
  std::ifstream in(o.out_file);
  if (!in) return code;
  json doc;
  try {
    doc = json::parse(in);
  } catch (const std::exception&) {
    return code;
  }
  bool cut = false;
  int burned = 0;
  std::cout << "burn timeline: " << timeline << "\n";
  // The run's records of the family it ran, each with the line that family reports for it
  // (bench/contributions.hpp).
  const std::string& family = o.families.front();
  const RecordReport* report = find_record_report(family);
  if (doc.contains("records"))
    for (const json& r : doc["records"]) {
      if (family_of_record(r) != family) continue;
      if (report && report->cut_short) cut = cut || report->cut_short(r);
      const std::string status = jf::str_or(r, "status");
      burned += status == "ok" || status == "wrong";
      if (report && report->line) std::cout << report->line(r) << "\n";
    }
  if (burned == 0) {
    std::cerr << "nodebench: no GPU was burned (every burn record was skipped or failed: see their reasons in "
              << o.out_file << ")\n";
    return code == kExitOk ? kExitCaseFailed : code;
  }
  if (cut) {
    std::cerr << "nodebench: the burn was cut short (interrupted); what it measured is in " << o.out_file << "\n";
    return code == kExitOk ? kExitCaseFailed : code;
  }
  std::cout << "judge it: nodebench validate --level 4 (runs a burn), or read the records' details.summary\n";
  return code;
}

}  // namespace nb
