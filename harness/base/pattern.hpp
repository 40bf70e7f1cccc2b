// Regular expressions searched in linear time (`--filter` on case ids). std::regex backtracks:
// `^([a-z/]*)*X$` against a case id never returns. Here a pattern is parsed once, by our own
// parser, into a small tree (the ECMAScript subset that needs no backtracking: literals, `.`,
// classes, \d \w \s and their negations, ^ $ \b \B, groups, alternation, * + ? {m,n} and their
// lazy forms), and searched either by RE2 (when the build found it: NB_HAVE_RE2) given the tree
// written back in RE2's syntax, or by the built-in Thompson-NFA simulation below. Both take time
// proportional to text length x pattern size, and both accept exactly the same patterns, so a
// filter means the same with and without RE2. Backreferences and lookaround (which need
// backtracking) are refused with a message saying so.
#pragma once
#include <bitset>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace nb {

namespace pattern {

// The parsed pattern (bytes, not code points: case ids are ASCII).
struct Node {
  enum Kind { empty, bytes, begin, end, word_boundary, not_word_boundary, concat, alt, repeat };
  Kind kind = empty;
  std::bitset<256> set;           // bytes: the bytes it matches
  std::vector<Node> kids;         // concat, alt: the parts; repeat: the one repeated
  int min = 0, max = -1;          // repeat: counts; max -1 is unbounded
};

// Largest count of {m,n} (as RE2's) and largest compiled program: bounds on the work per byte.
constexpr int kMaxRepeat = 1000;
constexpr size_t kMaxProgram = 20000;

// Parses `text`; throws nb::Error with the reason (the caller names the option and the pattern).
Node parse(const std::string& text);

// The tree in RE2 syntax (Latin-1, every byte written out), for the RE2 engine.
std::string to_re2(const Node& n);

// The built-in engine: the tree compiled into NFA instructions, searched breadth-first.
class Program {
 public:
  explicit Program(const Node& root);  // throws nb::Error when it exceeds kMaxProgram
  bool search(std::string_view text) const;
  size_t size() const { return code_.size(); }

 private:
  struct Inst {
    enum Op { byte, split, jmp, assert_begin, assert_end, word_b, not_word_b, match };
    Op op = match;
    int x = 0, y = 0;    // split: both branches; jmp: x; byte: set index x
  };
  void emit(const Node& n);
  int add(Inst i);
  std::vector<Inst> code_;
  std::vector<std::bitset<256>> sets_;
};

}  // namespace pattern

enum class PatternEngine { best, builtin };

// A compiled filter. search() is std::regex_search's meaning: a match anywhere in the text.
class Pattern {
 public:
  // Throws nb::Error: "'<text>' is not a valid regular expression (<why>)".
  explicit Pattern(const std::string& text, PatternEngine engine = PatternEngine::best);
  ~Pattern();
  Pattern(Pattern&&) noexcept;
  Pattern& operator=(Pattern&&) noexcept;
  Pattern(const Pattern&) = delete;
  Pattern& operator=(const Pattern&) = delete;
  bool search(std::string_view text) const;
  const std::string& text() const { return text_; }
  // "RE2" or "built-in" (what PatternEngine::best is in this build).
  static const char* best_engine();

 private:
  struct Impl;
  std::string text_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace nb
