// Regular expressions searched in linear time (`--filter` on case ids), by RE2. std::regex
// backtracks: `^([a-z/]*)*X$` against a case id never returns; RE2 takes time proportional to
// text length x pattern size. The syntax is ECMAScript's without what needs backtracking, as RE2
// reads it (literals, `.`, classes, \d \w \s and their negations, ^ $ \b \B, groups, named
// groups written (?<name>...) or (?P<name>...), alternation, * + ? {m,n} up to 1000 and their lazy
// forms). Backreferences and lookaround are refused here with a message saying why; every other
// pattern RE2 refuses is refused with RE2's reason.
#pragma once
#include <memory>
#include <string>
#include <string_view>

namespace re2 {
class RE2;
}

namespace nb {

// A compiled filter. search() is std::regex_search's meaning: a match anywhere in the text.
class Pattern {
 public:
  // Throws nb::Error: "'<text>' is not a valid regular expression (<why>)".
  explicit Pattern(const std::string& text);
  ~Pattern();
  Pattern(Pattern&&) noexcept;
  Pattern& operator=(Pattern&&) noexcept;
  Pattern(const Pattern&) = delete;
  Pattern& operator=(const Pattern&) = delete;
  bool search(std::string_view text) const;
  const std::string& text() const { return text_; }

 private:
  std::string text_;
  std::unique_ptr<re2::RE2> re_;
};

}  // namespace nb
