// base/pattern.hpp: the linear-time --filter matcher (RE2). std::regex (ECMAScript) is the
// independent oracle for what a pattern means, on patterns where it does not backtrack for ever;
// the pathological ones are checked to return at all (ctest's TIMEOUT is the bound).
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "base/pattern.hpp"

using namespace nb;

namespace {

const std::vector<std::string> kTexts = {
    "gemm/fp32/cublas/square_8192", "gemm/fp16/cublaslt/square_4096", "memory/copy/4096MiB",
    "nccl/all_reduce/float/in_place/eager/64MiB", "peak/int8_dp4a", "conv/resnet50/fp16/nhwc/b32/train",
    "train/resnet50/tf32/nchw/b256", "p2p/pair/0-1", "", "a", "aaa", "ab", "A_b-9", "x.y", "tab\there",
    "{3}", "a{", "]", "-", "^$", "end\n"};

const std::vector<std::string> kPatterns = {
    "gemm", "^gemm/", "8192$", "square_(4096|8192)$", "fp(16|32)", "^(gemm|conv)/.*/b?32", "cublas(lt)?/",
    "[0-9]+MiB", "\\d{4}", "\\d{2,3}$", "^\\w+/\\w+$", "\\W", "\\s", "\\S+", "a*", "a+b", "^a{2}$", "^a{1,}$",
    "^a{0,1}$", "a+?", "(?:fp16|tf32)/n[hc]", "[^/]+$", "[a-c]", "[-a]", "[a-]", "[\\d-]", "[\\]]", "x\\.y",
    "x.y", "\\bfp", "fp\\B", "^$", "$", "^", "(a|)b", "(|a)+", "(a*)*", "((a)|b)*$", "\\x41",
    "[\\x30-\\x39]{4}", "]", "\\t", "[^\\s]", "^.*$", ".", "^.+\\n$", "(^a)", "(^)*a", "b*$",
    "^([a-z/]*)*X$"};

}  // namespace

TEST(Pattern, AgreesWithStdRegex) {
  for (const auto& p : kPatterns) {
    const std::regex oracle(p, std::regex::ECMAScript);
    const Pattern re(p);
    for (const auto& t : kTexts) {
      // std::regex backtracks for ever on ^([a-z/]*)*X$ only when a long run of [a-z/] precedes
      // a mismatch: the texts here are short enough for it to finish.
      EXPECT_EQ(re.search(t), std::regex_search(t, oracle)) << "/" << p << "/ on '" << t << "'";
    }
  }
}

// ECMAScript's named group (?<name>...) is a group, as is RE2's (?P<name>...); braces that are
// not a count are literal; escapes and classes that look like groups are not rewritten.
TEST(Pattern, NamedGroupsAndLiteralBraces) {
  EXPECT_TRUE(Pattern("^(?<fam>gemm)/").search("gemm/fp32/cublas/square_8192"));
  EXPECT_FALSE(Pattern("^(?<fam>gemm)/").search("conv/gemm/"));
  EXPECT_TRUE(Pattern("^(?P<fam>gemm)/").search("gemm/fp32"));
  EXPECT_TRUE(Pattern("\\\\(?<x>a)").search("\\a"));  // an escaped backslash, then a named group
  EXPECT_TRUE(Pattern("[(?<]+x").search("(?<x"));           // the characters of a class
  EXPECT_FALSE(Pattern("[(?<]+x").search("ab"));
  EXPECT_TRUE(Pattern("a{").search("xa{y"));
  EXPECT_FALSE(Pattern("a{").search("aa"));
  EXPECT_TRUE(Pattern("a{2,x}").search("a{2,x}"));
}

TEST(Pattern, RefusesWhatNeedsBacktrackingAndBadSyntaxNamingIt) {
  struct Bad {
    std::string pattern, why;
  };
  const std::vector<Bad> bad = {
      {"(a)\\1", "backreference '\\1'"},        {"\\k<n>", "backreference '\\k'"},
      {"(?=gemm)", "lookaround '(?='"},           {"(?!x)", "lookaround '(?!'"},
      {"(?<=a)b", "lookaround '(?<='"},           {"x(?<!a)b", "lookaround '(?<!'"},
      {"(ab", "missing )"},                       {"ab)", "unexpected )"},
      {"[ab", "missing ]"},                       {"*a", "no argument for repetition operator"},
      {"a|+", "no argument for repetition operator"}, {"[z-a]", "invalid character class range"},
      {"a{3,2}", "invalid repetition size"},      {"a{1001}", "invalid repetition size"},
      {"(a{100}){100}", "invalid repetition size"}, {"\\q", "invalid escape sequence"},
      {"a\\", "trailing \\"},                     {"\\x4", "invalid escape sequence"},
      {"(?x)", "invalid perl operator"},          {"{3}", "no argument for repetition operator"},
  };
  for (const auto& b : bad) {
    try {
      Pattern p(b.pattern);
      ADD_FAILURE() << "accepted /" << b.pattern << "/";
    } catch (const Error& err) {
      const std::string m = err.what();
      EXPECT_NE(m.find("'" + b.pattern + "' is not a valid regular expression"), std::string::npos) << m;
      EXPECT_NE(m.find(b.why), std::string::npos) << m;
    }
  }
  // Inside a class, (?= are characters, not a lookaround.
  EXPECT_TRUE(Pattern("[(?=]").search("="));
  EXPECT_FALSE(Pattern("[(?=]").search("a"));
}

TEST(Pattern, PathologicalFiltersReturn) {
  // Exponential for a backtracking engine; RE2 visits every state once per byte.
  const std::string id(200, 'a');
  EXPECT_FALSE(Pattern("^([a-z/]*)*X$").search(id + "/" + id));
  EXPECT_TRUE(Pattern("^([a-z/]*)*X$").search(id + "X"));
  EXPECT_FALSE(Pattern("(a|a)*b").search(std::string(5000, 'a')));
  EXPECT_FALSE(Pattern("(a*)*(b|c)+d").search(std::string(5000, 'a') + "bcbc"));
  EXPECT_TRUE(Pattern("(x+x+)+y").search(std::string(3000, 'x') + "y"));
}
