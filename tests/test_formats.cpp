// The output-format registry (run/formats.hpp): every format is one file that registers itself,
// the commands offer exactly their formats' options, and the example format
// (tests/example_format/records_csv.cpp) is named by no other file and written through the
// registry alone.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "app/cli.hpp"
#include "run/formats.hpp"
#include "run/result.hpp"

using namespace nb;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string read(const fs::path& p) {
  std::ifstream is(p);
  std::stringstream ss;
  ss << is.rdbuf();
  return ss.str();
}

const std::vector<std::string> kFormatFolders = {"harness/output/formats", "harness/check/formats", "tests/example_format"};

ParseOutcome parse(std::vector<std::string> a) {
  a.insert(a.begin(), "nodebench");
  return parse_cli(a);
}

}  // namespace

// The formats' folders, read as text: each file registers exactly one format, and the registry
// holds exactly those (plus nothing registered from anywhere else).
TEST(Formats, EachFormatIsOneFileThatRegistersItself) {
  const std::regex name_re("\\.name = \"([a-z_]+)\"");
  std::set<std::string> from_files;
  for (const auto& folder : kFormatFolders) {
    for (const auto& e : fs::directory_iterator(fs::path(NB_SOURCE_DIR) / folder)) {
      const std::string text = read(e.path());
      const auto n = std::distance(std::sregex_iterator(text.begin(), text.end(), name_re), std::sregex_iterator());
      EXPECT_EQ(n, 1) << e.path() << " registers " << n << " formats";
      std::smatch m;
      if (std::regex_search(text, m, name_re)) from_files.insert(m[1]);
    }
  }
  std::set<std::string> registered;
  for (const OutputFormat* f : output_formats()) registered.insert(f->name);
  EXPECT_EQ(registered, from_files);
  for (const char* issue_named : {"result_json", "console", "gbench", "junit", "prometheus", "records_csv"})
    EXPECT_TRUE(registered.count(issue_named)) << issue_named;
}

TEST(Formats, ListedInOrderWithTheirCommands) {
  std::vector<std::string> names;
  for (const OutputFormat* f : output_formats()) names.push_back(f->name);
  EXPECT_EQ(names, (std::vector<std::string>{"result_json", "console", "gbench", "junit", "prometheus", "records_csv"}));
  std::vector<std::string> run_written, verdicts;
  for (const OutputFormat* f : output_formats(kFormatRun, FormatStage::run)) run_written.push_back(f->name);
  for (const OutputFormat* f : output_formats(kFormatValidate, FormatStage::verdict)) verdicts.push_back(f->name);
  EXPECT_EQ(run_written, (std::vector<std::string>{"result_json", "console", "gbench", "records_csv"}));
  EXPECT_EQ(verdicts, (std::vector<std::string>{"junit", "prometheus"}));
}

// Each command's --help offers its formats' options and no other's.
TEST(Formats, CommandsOfferTheirFormatsOptions) {
  const std::string run = usage_of("run"), validate = usage_of("validate");
  for (const char* o : {"--gbench-out", "--records-csv"}) {
    EXPECT_NE(run.find(o), std::string::npos) << o;
    EXPECT_EQ(validate.find(o), std::string::npos) << o;
  }
  for (const char* o : {"--junit", "--prometheus"}) {
    EXPECT_NE(validate.find(o), std::string::npos) << o;
    EXPECT_EQ(run.find(o), std::string::npos) << o;
  }
}

// Adding the example format touched its one file: no source of the library, the families or the
// build names it (the test binary takes tests/example_format/ whole).
TEST(Formats, ExampleFormatIsNamedNowhereElse) {
  const fs::path root(NB_SOURCE_DIR);
  std::vector<fs::path> files = {root / "CMakeLists.txt", root / "tests" / "CMakeLists.txt"};
  for (const char* dir : {"harness", "benchmarks", "cmake"})
    for (const auto& e : fs::recursive_directory_iterator(root / dir))
      if (e.is_regular_file()) files.push_back(e.path());
  size_t read_files = 0;
  for (const auto& f : files) {
    const std::string text = read(f);
    ++read_files;
    EXPECT_EQ(text.find("records_csv"), std::string::npos) << f;
    EXPECT_EQ(text.find("records-csv"), std::string::npos) << f;
  }
  EXPECT_GT(read_files, 100u);
}

// The example's option parsed by the CLI, its writer made by the registry for `run` and writing
// each record's line.
TEST(Formats, ExampleFormatWritesThroughTheRegistry) {
  const std::string csv = std::string(NB_TEST_OUTPUT_DIR) + "/formats_example.csv";
  const std::string result = std::string(NB_TEST_OUTPUT_DIR) + "/formats_example.json";
  fs::remove(csv);
  const ParseOutcome p = parse({"run", "--records-csv", csv, "--quiet"});
  ASSERT_TRUE(p.command) << p.err;
  const RunOptions& o = p.command->as<RunCommand>()->options;
  EXPECT_EQ(o.format_files.at("records_csv"), csv);

  RunDocument doc(json{{"run_id", "formats"}});
  doc.add(json{{"id", "gemm/fp32/a"}, {"gpus", {0}}, {"status", "ok"}});
  doc.add(json{{"id", "p2p/pair/0-1"}, {"gpus", {0, 1}}, {"status", "skipped"}});
  doc.finish("complete");
  FormatContext ctx;
  ctx.options = &o;
  ctx.file = result;
  ctx.doc = &doc;
  const MadeFormats made = make_formats(kFormatRun, FormatStage::run, ctx);
  std::vector<std::string> names;
  for (const MadeFormat& m : made.made) names.push_back(m.format->name);
  // gbench is not asked for; the result file and the console always are.
  EXPECT_EQ(names, (std::vector<std::string>{"result_json", "console", "records_csv"}));
  ASSERT_EQ(made.made.back().file, csv);
  made.made.back().reporter->finished(doc);
  EXPECT_EQ(read(csv), "id,gpus,status\ngemm/fp32/a,0,ok\np2p/pair/0-1,0 1,skipped\n");
  EXPECT_TRUE(fs::exists(result));  // the result file writes itself when made
}
