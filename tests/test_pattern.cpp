// base/pattern.hpp: the linear-time --filter matcher. std::regex (ECMAScript) is the independent
// oracle for what a pattern means, on patterns where it does not backtrack for ever; the
// pathological ones are checked to return at all (ctest's TIMEOUT is the bound).
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

TEST(Pattern, AgreesWithStdRegexOnEveryEngine) {
  for (const auto& p : kPatterns) {
    const std::regex oracle(p, std::regex::ECMAScript);
    const Pattern builtin(p, PatternEngine::builtin);
    const Pattern best(p);
    for (const auto& t : kTexts) {
      // std::regex backtracks for ever on ^([a-z/]*)*X$ only when a long run of [a-z/] precedes
      // a mismatch: the texts here are short enough for it to finish.
      const bool want = std::regex_search(t, oracle);
      EXPECT_EQ(builtin.search(t), want) << "built-in: /" << p << "/ on '" << t << "'";
      EXPECT_EQ(best.search(t), want) << Pattern::best_engine() << ": /" << p << "/ on '" << t << "'";
    }
  }
}

// What std::regex refuses but ECMAScript (with its Annex B, as browsers read it) accepts: a named
// group is a group; braces that are not a count are literal.
TEST(Pattern, NamedGroupsAndLiteralBraces) {
  for (PatternEngine e : {PatternEngine::builtin, PatternEngine::best}) {
    EXPECT_TRUE(Pattern("^(?<fam>gemm)/", e).search("gemm/fp32/cublas/square_8192"));
    EXPECT_FALSE(Pattern("^(?<fam>gemm)/", e).search("conv/gemm/"));
    EXPECT_TRUE(Pattern("a{", e).search("xa{y"));
    EXPECT_FALSE(Pattern("a{", e).search("aa"));
    EXPECT_TRUE(Pattern("{3}", e).search("{3}"));
    EXPECT_FALSE(Pattern("{3}", e).search("333"));
    EXPECT_TRUE(Pattern("a{2,x}", e).search("a{2,x}"));
  }
}

TEST(Pattern, RefusesWhatNeedsBacktrackingAndBadSyntaxNamingIt) {
  struct Bad {
    std::string pattern, why;
  };
  const std::vector<Bad> bad = {
      {"(a)\\1", "backreference '\\1'"},     {"(?=gemm)", "lookaround '(?='"}, {"(?!x)", "lookaround '(?!'"},
      {"(?<=a)b", "lookaround '(?<='"},      {"(ab", "missing ')'"},         {"ab)", "unmatched ')'"},
      {"[ab", "missing ']'"},                 {"*a", "nothing to repeat"},    {"a|+", "nothing to repeat"},
      {"^*", "assertion"},                    {"[z-a]", "out of order"},      {"a{3,2}", "out of order"},
      {"a{1001}", "above 1000"},              {"(a{100}){100}", "multiply above 1000"},
      {"\\q", "unsupported escape '\\q'"},    {"a\\", "trailing backslash"}, {"\\x4", "two hex digits"},
      {"(?x)", "invalid group"},
  };
  for (const auto& b : bad) {
    for (PatternEngine e : {PatternEngine::builtin, PatternEngine::best}) {
      try {
        Pattern p(b.pattern, e);
        ADD_FAILURE() << "accepted /" << b.pattern << "/";
      } catch (const Error& err) {
        const std::string m = err.what();
        EXPECT_NE(m.find("'" + b.pattern + "' is not a valid regular expression"), std::string::npos) << m;
        EXPECT_NE(m.find(b.why), std::string::npos) << m;
      }
    }
  }
}

TEST(Pattern, PathologicalFiltersReturn) {
  // Exponential for a backtracking engine; here every state is visited once per byte.
  const std::string id(200, 'a');
  for (PatternEngine e : {PatternEngine::builtin, PatternEngine::best}) {
    EXPECT_FALSE(Pattern("^([a-z/]*)*X$", e).search(id + "/" + id));
    EXPECT_TRUE(Pattern("^([a-z/]*)*X$", e).search(id + "X"));
    EXPECT_FALSE(Pattern("(a|a)*b", e).search(std::string(5000, 'a')));
    EXPECT_FALSE(Pattern("(a*)*(b|c)+d", e).search(std::string(5000, 'a') + "bcbc"));
    EXPECT_TRUE(Pattern("(x+x+)+y", e).search(std::string(3000, 'x') + "y"));
  }
}

TEST(Pattern, ProgramSizeIsBoundedAfterExpansion) {
  // 30 nested copies of a{30}: within RE2's count rule only if flat; expanded it is 900 states.
  EXPECT_EQ(pattern::Program(pattern::parse("a{30}")).size(), 31u);  // 30 bytes and the match
  EXPECT_EQ(pattern::Program(pattern::parse("a{2,4}")).size(), 2u + 2u * 2u + 1u);  // 2, then 2 x (split, byte)
  try {
    Pattern p("(abcdefghijklmnopqrstuvwxyz){999}");
    ADD_FAILURE() << "a program of 26 x 999 steps was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("too large"), std::string::npos) << e.what();
  }
}

TEST(Pattern, Re2SyntaxWritesEveryByteOut) {
  EXPECT_EQ(pattern::to_re2(pattern::parse("a|b")), "(?:[\\x{61}]|[\\x{62}])");
  EXPECT_EQ(pattern::to_re2(pattern::parse("^[0-9]+$")), "\\A(?:[\\x{30}-\\x{39}])+\\z");
  EXPECT_EQ(pattern::to_re2(pattern::parse("x{2,5}")), "(?:[\\x{78}]){2,5}");
}
