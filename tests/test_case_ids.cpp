// Every family's cases, quick and full suite, against the lists committed before the families
// built them from Axes (tests/data/case_ids_*.txt from `nodebench list --suite S --json`, and
// tests/data/case_params_*.txt: each case's params, GPU needs and L2 default). Records are
// compared across versions by id, so an id, its params or the order of the cases must not change
// by accident. Only the families this build has are compared (cuDNN and NCCL are optional).
// NB_WRITE_CASE_DATA=DIR writes the lists of this build into DIR instead of checking them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "bench/benchmark.hpp"
#include "fixture_util.hpp"

namespace nb {
namespace {

using nlohmann::json;

std::set<std::string> built_families() {
  std::set<std::string> out;
  for (const auto& f : family_registry()) out.insert(f->name());
  return out;
}

std::string family_of(const std::string& line) { return line.substr(0, line.find('/')); }

// Families whose case list follows the host (the input family's worker counts are 1, 2, 4, ...
// and every CPU of the process): not comparable with a list committed on another machine; their
// own tests check how the list is built (InputCpus.ListsOrderAndSweeps in tests/test_input.cpp).
bool host_dependent(const std::string& family) { return family == "input"; }

// One line per case: its id, then a tab and what else identifies its records and its planning.
std::string shape_line(const Case& c) {
  const json j = {{"params", c.params},
                  {"multi_gpu", c.multi_gpu},
                  {"min_gpus", c.min_gpus},
                  {"l2", !c.l2 ? "default" : *c.l2 == L2Mode::hot ? "hot" : "cold"}};
  return c.id() + "\t" + j.dump();
}

struct Lists {
  std::vector<std::string> ids, shapes;
};

Lists this_build(Suite suite) {
  Lists l;
  for (const auto& f : family_registry())
    for (const Case& c : f->cases(suite)) {
      if (host_dependent(f->name())) continue;
      l.ids.push_back(c.id());
      l.shapes.push_back(shape_line(c));
    }
  return l;
}

// The committed lines of the families this build has, in their order.
std::vector<std::string> committed(const std::string& file) {
  std::ifstream in(test::data_path(file));
  if (!in) throw std::runtime_error("missing fixture " + file);
  const std::set<std::string> built = built_families();
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && built.count(family_of(line)) && !host_dependent(family_of(line))) out.push_back(line);
  return out;
}

void write_lines(const std::string& path, const std::vector<std::string>& lines) {
  std::ofstream out(path);
  for (const auto& l : lines) out << l << "\n";
}

// The first difference between the committed lines and this build's ("" when none), naming the
// line, so that a failure says which case changed.
std::string first_difference(const std::vector<std::string>& want, const std::vector<std::string>& got) {
  const size_t n = std::min(want.size(), got.size());
  for (size_t i = 0; i < n; ++i)
    if (got[i] != want[i]) return "line " + std::to_string(i + 1) + ": committed\n  " + want[i] + "\nnow\n  " + got[i];
  if (got.size() != want.size())
    return std::to_string(got.size()) + " cases, " + std::to_string(want.size()) + " committed; first unmatched: " +
           (got.size() > n ? got[n] : want[n]);
  return "";
}

void expect_same(const std::vector<std::string>& want, const std::vector<std::string>& got, const std::string& what) {
  ASSERT_FALSE(want.empty()) << what << ": nothing committed for the families of this build";
  const std::string diff = first_difference(want, got);
  EXPECT_TRUE(diff.empty()) << what << ": " << diff;
}

void check_suite(Suite suite) {
  const std::string s = to_string(suite);
  const Lists got = this_build(suite);
  if (const char* dir = std::getenv("NB_WRITE_CASE_DATA")) {
    write_lines(std::string(dir) + "/case_params_" + s + ".txt", got.shapes);
    GTEST_SKIP() << "wrote the lists into " << dir;
  }
  expect_same(committed("case_ids_" + s + ".txt"), got.ids, "case ids, " + s + " suite");
  expect_same(committed("case_params_" + s + ".txt"), got.shapes, "case params, " + s + " suite");
}

TEST(CaseIds, QuickSuiteAsCommitted) { check_suite(Suite::quick); }
TEST(CaseIds, FullSuiteAsCommitted) { check_suite(Suite::full); }

// The check itself: a list that differs in one id, in order, or by a missing case is caught.
TEST(CaseIds, ADifferentListIsCaught) {
  const Lists got = this_build(Suite::quick);
  ASSERT_GT(got.ids.size(), 2u);
  EXPECT_EQ(first_difference(got.ids, got.ids), "");
  std::vector<std::string> renamed = got.ids;
  renamed[1] += "x";
  EXPECT_NE(first_difference(renamed, got.ids).find("line 2:"), std::string::npos);
  std::vector<std::string> swapped = got.ids;
  std::swap(swapped[0], swapped[1]);
  EXPECT_NE(first_difference(swapped, got.ids).find("line 1:"), std::string::npos);
  const std::vector<std::string> shorter(got.ids.begin(), got.ids.end() - 1);
  EXPECT_NE(first_difference(shorter, got.ids).find("first unmatched: " + got.ids.back()), std::string::npos);
  // Every id is unique within a suite (records are told apart by id and GPUs).
  EXPECT_EQ(std::set<std::string>(got.ids.begin(), got.ids.end()).size(), got.ids.size());
}

}  // namespace
}  // namespace nb
