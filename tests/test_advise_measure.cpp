// `nodebench advise --measure`: its plan is the run pipeline's plan of exactly the cases the
// registered advise contributions declare (computed here from the registries with std::regex,
// apart from the selection code), made without a GPU by --list; its options and a bad selection
// are usage errors (exit 2). Without a GPU it exits as `run` does (3): tests/CMakeLists.txt.
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "app/cli.hpp"
#include "app/commands.hpp"
#include "app/runner.hpp"
#include "base/error.hpp"
#include "bench/benchmark.hpp"
#include "bench/contributions.hpp"
#include "run/plan.hpp"

using namespace nb;

namespace {

ParseOutcome parse(std::vector<std::string> a) {
  a.insert(a.begin(), "nodebench");
  return parse_cli(a);
}

// The cases of `suite` whose family registered an advise contribution and whose id its declared
// filter matches.
std::set<std::string> declared_cases(Suite suite, std::set<std::string>& families) {
  std::set<std::string> out;
  for (const AdviceContribution& c : advice_contributions()) {
    if (c.measure_filter.empty()) continue;
    const std::regex re(c.measure_filter, std::regex::ECMAScript);
    for (const auto& f : family_registry())
      if (f->name() == c.family)
        for (const Case& k : f->cases(suite))
          if (std::regex_search(k.id(), re)) {
            out.insert(k.id());
            families.insert(c.family);
          }
  }
  return out;
}

}  // namespace

TEST(AdviseMeasure, TheDryPlanHoldsExactlyTheDeclaredCases) {
  for (const char* suite : {"quick", "full"}) {
    SCOPED_TRACE(suite);
    std::set<std::string> families;
    const std::set<std::string> want = declared_cases(*parse_suite(suite), families);
    EXPECT_GE(families.size(), 4u);  // the advice reads several families' records
    const auto p = parse({"advise", "--measure", "--list", "--suite", suite});
    ASSERT_TRUE(p.command) << p.err;
    testing::internal::CaptureStdout();
    const int rc = dispatch(*p.command);
    const std::string out = testing::internal::GetCapturedStdout();
    EXPECT_EQ(rc, 0) << out;
    std::vector<std::string> listed;
    std::istringstream is(out);
    for (std::string line; std::getline(is, line);)
      if (line.rfind("  ", 0) == 0) listed.push_back(line.substr(2));
    EXPECT_EQ(std::set<std::string>(listed.begin(), listed.end()), want);
    EXPECT_EQ(listed.size(), want.size()) << "a case planned twice";
  }
}

TEST(AdviseMeasure, TheRunSelectsTheContributionsCasesOnly) {
  const auto p = parse({"advise", "--measure"});
  ASSERT_TRUE(p.command) << p.err;
  const RunOptions& o = p.command->as<AdviseCommand>()->run;
  EXPECT_EQ(o.suite, Suite::quick);
  std::set<std::string> families, got;
  for (const Case& c : select_cases(o)) got.insert(c.id());
  EXPECT_EQ(got, declared_cases(Suite::quick, families));
}

TEST(AdviseMeasure, OptionsThatNeedMeasureOrContradictItAreUsageErrors) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"advise", "--list"},                                  // --list without --measure
           {"advise", "--suite", "full", "r.json"},               // --suite without --measure
           {"advise", "--out", "/tmp/x", "r.json"},               // --out without --measure
           {"advise", "--measure", "r.json"},                     // a file with --measure
           {"advise", "--measure", "--profile", "Tesla P40"},     // a what-if with --measure
           {"advise", "--measure", "--suite", "medium"},          // not a suite
       }) {
    const auto p = parse(args);
    EXPECT_FALSE(p.command) << args.back();
    EXPECT_EQ(p.exit_code, 2) << args.back();
    EXPECT_FALSE(p.err.empty());
  }
}

TEST(AdviseMeasure, ABadSelectionIsAMessageAndExit2) {
  RunOptions o;
  o.selections = {{"nccl", "^nccl/("}};
  EXPECT_THROW((void)select_cases(o), Error);
  nlohmann::json doc;
  testing::internal::CaptureStderr();
  EXPECT_EQ(run_for_advice(o, true, {}, doc), 2);
  EXPECT_NE(testing::internal::GetCapturedStderr().find("--filter"), std::string::npos);
  o.selections = {{"no_such_family", "^x/"}};
  testing::internal::CaptureStderr();
  EXPECT_EQ(run_for_advice(o, true, {}, doc), 2);
  EXPECT_NE(testing::internal::GetCapturedStderr().find("unknown family 'no_such_family'"), std::string::npos);
  EXPECT_TRUE(doc.is_null());
}
