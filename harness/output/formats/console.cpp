// The console: `run`'s start line, progress lines and summary table (output/console.hpp);
// `validate`'s one line a record ("[3/29] memory/copy/4GiB  ok"), none under --quiet.
#include <iostream>
#include <memory>
#include <vector>

#include <unistd.h>

#include "output/console.hpp"
#include "run/formats.hpp"

namespace nb {
namespace {

// run: the progress lines as the run goes, the summary table when it ends.
class RunConsole : public Reporter {
 public:
  RunConsole(const std::string& start_line, bool quiet)
      : progress_(std::cout, start_line, quiet, isatty(STDOUT_FILENO) != 0), summary_(std::cout) {}
  std::string what() const override { return "console"; }
  void started(const RunDocument& doc, const RunForecast& f) override { progress_.started(doc, f); }
  void recorded(const RunDocument& doc, const nlohmann::json& rec, const Progress& p) override {
    progress_.recorded(doc, rec, p);
  }
  void finished(const RunDocument& doc) override { summary_.finished(doc); }

 private:
  ConsoleProgress progress_;
  ConsoleSummary summary_;
};

class ValidateLines : public Reporter {
 public:
  std::string what() const override { return "progress lines"; }
  void recorded(const RunDocument&, const nlohmann::json& rec, const Progress& p) override {
    std::cout << "[" << p.done << "/" << p.total << "] " << rec["id"].get<std::string>() << "  "
              << rec["status"].get<std::string>() << std::endl;
  }
};

const FormatRegistrar kConsole{{
    .name = "console",
    .what = "console",
    .commands = kFormatRun | kFormatValidate,
    .order = 10,
    .make = [](const FormatContext& c) -> std::unique_ptr<Reporter> {
      const bool quiet = c.options && c.options->quiet;
      if (c.command == kFormatValidate) return quiet ? nullptr : std::make_unique<ValidateLines>();
      return std::make_unique<RunConsole>(c.start_line, quiet);
    },
}};

}  // namespace
}  // namespace nb
