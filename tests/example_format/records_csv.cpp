// The worked example of an output format (docs/ARCHITECTURE.md, "Adding an output format"):
// `run --records-csv FILE` writes one line per record, "id,gpus,status", when the run ends. It is
// this one file: its writer (a Reporter) and its registration. Like the example family it is
// linked into the unit tests only (tests/CMakeLists.txt takes every file of this folder), never
// into nodebench; a real format's file goes in harness/output/formats/ (or check/formats/ when
// it writes validate's verdict), which the build takes the same way.
#include <fstream>
#include <memory>
#include <string>

#include "base/error.hpp"
#include "run/formats.hpp"
#include "run/result.hpp"

namespace nb {
namespace {

class RecordsCsv : public Reporter {
 public:
  explicit RecordsCsv(std::string path) : path_(std::move(path)) {}
  std::string what() const override { return "records CSV"; }
  void finished(const RunDocument& doc) override {
    std::ofstream os(path_);
    if (!os) throw Error("cannot open '" + path_ + "'");
    os << "id,gpus,status\n";
    for (const auto& r : doc.doc()["records"]) {
      std::string gpus;
      for (const auto& g : r.value("gpus", nlohmann::json::array())) gpus += (gpus.empty() ? "" : " ") + g.dump();
      os << r.value("id", "") << "," << gpus << "," << r.value("status", "") << "\n";
    }
    if (!os) throw Error("writing '" + path_ + "' failed");
  }

 private:
  std::string path_;
};

const FormatRegistrar kRecordsCsv{{
    .name = "records_csv",
    .what = "records CSV",
    .commands = kFormatRun,
    .option = "--records-csv",
    .help = "Also write one line per record (id, GPUs, status) as CSV to FILE",
    .order = 90,
    .make = [](const FormatContext& c) -> std::unique_ptr<Reporter> { return std::make_unique<RecordsCsv>(c.file); },
}};

}  // namespace
}  // namespace nb
