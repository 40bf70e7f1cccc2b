// The output formats of a run (docs/ARCHITECTURE.md, "Adding an output format"): the result JSON,
// the console, Google Benchmark JSON, validate's JUnit XML and Prometheus textfile. Each is one
// file (harness/output/formats/, harness/check/formats/) that registers itself here with its
// name, the commands and option that ask for it and how its Reporter is made; the command line,
// `run` and `validate` iterate this list and name no format.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "run/options.hpp"
#include "run/reporter.hpp"

namespace nb {

class RunDocument;

// The commands whose runs may write a format (a bit mask).
enum FormatCommand : unsigned { kFormatRun = 1u, kFormatValidate = 2u };

// When a format is told: as the run goes (records, then the finished document), or once
// validate has judged the run (its verdict formats, given the verdict through `extra`).
enum class FormatStage { run, verdict };

// What a layer above run/ hands its formats (validate's verdict): each format casts it to the
// type it knows.
struct FormatExtra {
  virtual ~FormatExtra() = default;
};

struct FormatContext {
  FormatCommand command = kFormatRun;
  const RunOptions* options = nullptr;
  std::string file;                     // its option's FILE; a format without option: the result file
  const RunDocument* doc = nullptr;     // the document (the result file writes it when made)
  std::string start_line;               // run's console: what the run is and where it writes
  const FormatExtra* extra = nullptr;   // FormatStage::verdict: what the command judged
};

struct OutputFormat {
  std::string name;            // the key of RunOptions::format_files ("gbench")
  std::string what;            // for messages ("Google Benchmark JSON"); its Reporter's what()
  unsigned commands = kFormatRun;
  std::string option;          // "--gbench-out"; empty: always written by those commands
  std::string help;            // the option's --help text
  FormatStage stage = FormatStage::run;
  int order = 50;              // its place among the formats: --help, writing
  // The writer; it may return null where this command writes nothing of it (validate's console
  // under --quiet).
  std::function<std::unique_ptr<Reporter>(const FormatContext&)> make;

  bool for_command(FormatCommand c) const { return (commands & c) != 0; }
};

// Every registered format, in `order` (then name).
std::vector<const OutputFormat*> output_formats();
// The formats a command offers or writes at `stage`, in order.
std::vector<const OutputFormat*> output_formats(FormatCommand c, FormatStage stage);
// The format of that name; null when none.
const OutputFormat* find_output_format(const std::string& name);

// `static FormatRegistrar r{{...}};` in the format's own file. Throws at start-up on a name or an
// option given twice (a programming error).
struct FormatRegistrar {
  explicit FormatRegistrar(OutputFormat f);
};

// The FILE a command's options give a format with an option; empty when not asked for.
std::string format_file(const RunOptions& o, const OutputFormat& f);

// One writer made for a command: its format, the FILE its option gave (empty for a format
// without option) and the Reporter.
struct MadeFormat {
  const OutputFormat* format = nullptr;
  std::string file;
  std::unique_ptr<Reporter> reporter;
};
struct MadeFormats {
  std::vector<MadeFormat> made;
  // The Reporters, for run_plan.
  std::vector<Reporter*> reporters() const;
};

// The writers of `stage` for a command, made in order: each format without option, and each with
// one that the options ask for (`base.options`). A format whose make throws nb::Error (an
// unwritable result file) ends the command: the error goes to the caller.
MadeFormats make_formats(FormatCommand c, FormatStage stage, const FormatContext& base);

}  // namespace nb
