// The console's formats of a run: the start line and a progress line per record (ConsoleProgress;
// redrawn in place on a terminal, one line per record in a log), and the summary table at the end
// (ConsoleSummary). Both are Reporters (run/reporter.hpp).
#pragma once
#include <iosfwd>
#include <string>

#include <nlohmann/json.hpp>

#include "run/reporter.hpp"

namespace nb {

class ConsoleProgress : public Reporter {
 public:
  // `start_line`: what the run is (cases, GPUs, suite, where the result goes); the predicted
  // duration and what a budget left out are added to it.
  ConsoleProgress(std::ostream& os, std::string start_line, bool quiet, bool tty);
  std::string what() const override { return "progress lines"; }
  void started(const RunDocument& doc, const RunForecast& f) override;
  void recorded(const RunDocument& doc, const nlohmann::json& record, const Progress& p) override;

 private:
  std::ostream& os_;
  std::string start_line_;
  bool quiet_, tty_;
};

class ConsoleSummary : public Reporter {
 public:
  explicit ConsoleSummary(std::ostream& os) : os_(os) {}
  std::string what() const override { return "summary table"; }
  void finished(const RunDocument& doc) override;

 private:
  std::ostream& os_;
};

// The table of records and the totals line (also printed for a combined --runs file).
void print_summary(const nlohmann::json& doc, std::ostream& os);
// "742.1 tflops (75.0% of peak)" or the reason.
std::string headline(const nlohmann::json& record);
// "12.3 ms", "4.56 s".
std::string human_time(double s);
// "3 min 20 s", "1 h 05 min": a duration a person reads at a glance.
std::string human_duration(double s);

}  // namespace nb
