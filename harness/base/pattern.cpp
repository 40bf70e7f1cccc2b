#include "base/pattern.hpp"

#include <re2/re2.h>

#include "base/error.hpp"

namespace nb {

namespace {

const char* const kNoBacktracking = "' is not supported (filters are matched in linear time, without backtracking)";

// The pattern as RE2 takes it: refuses, with the reason, what ECMAScript has and a linear-time
// engine cannot do (backreferences, lookaround), and spells a named group (?<name>...) as RE2
// 2022 reads it, (?P<name>...). Escapes and character classes are stepped over; everything else
// is RE2's to judge.
std::string for_re2(const std::string& s) {
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\\' && i + 1 < s.size()) {
      const char e = s[i + 1];
      if (!in_class && ((e >= '1' && e <= '9') || e == 'k'))
        throw Error(std::string("backreference '\\") + e + kNoBacktracking);
      out += s.substr(i, 2);
      ++i;
      continue;
    }
    if (in_class) {
      in_class = c != ']';
    } else if (c == '[') {
      in_class = true;
      if (s.compare(i + 1, 1, "]") == 0 || s.compare(i + 1, 2, "^]") == 0) {  // "[]" "[^]": a ']' opens it
        const size_t n = s[i + 1] == '^' ? 3 : 2;
        out += s.substr(i, n);
        i += n - 1;
        continue;
      }
    } else if (c == '(' && s.compare(i + 1, 1, "?") == 0) {
      for (const char* look : {"(?<=", "(?<!", "(?=", "(?!"})
        if (s.compare(i, std::char_traits<char>::length(look), look) == 0)
          throw Error(std::string("lookaround '") + look + kNoBacktracking);
      if (s.compare(i, 3, "(?<") == 0) {
        out += "(?P<";
        i += 2;
        continue;
      }
    }
    out += c;
  }
  return out;
}

}  // namespace

Pattern::Pattern(const std::string& text) : text_(text) {
  try {
    re2::RE2::Options opt;
    opt.set_encoding(re2::RE2::Options::EncodingLatin1);  // bytes, as case ids are ASCII
    opt.set_log_errors(false);
    re_ = std::make_unique<re2::RE2>(for_re2(text), opt);
    if (!re_->ok()) throw Error(re_->error());
  } catch (const Error& e) {
    throw Error("'" + text + "' is not a valid regular expression (" + e.what() + ")");
  }
}

Pattern::~Pattern() = default;
Pattern::Pattern(Pattern&&) noexcept = default;
Pattern& Pattern::operator=(Pattern&&) noexcept = default;

bool Pattern::search(std::string_view text) const {
  return re2::RE2::PartialMatch(re2::StringPiece(text.data(), text.size()), *re_);
}

}  // namespace nb
