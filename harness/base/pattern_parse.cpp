// The parser of base/pattern.hpp: the ECMAScript subset that runs without backtracking.
#include "base/pattern.hpp"

#include <cctype>
#include <string>

#include "base/error.hpp"

namespace nb::pattern {
namespace {

using Set = std::bitset<256>;

Set range(int lo, int hi) {
  Set s;
  for (int c = lo; c <= hi; ++c) s.set(size_t(c));
  return s;
}
Set digits() { return range('0', '9'); }
Set word() { return range('a', 'z') | range('A', 'Z') | digits() | range('_', '_'); }
Set space() {  // ECMAScript's white space and line terminators within one byte
  Set s;
  for (int c : {int(' '), int('\t'), int('\n'), int('\v'), int('\f'), int('\r'), 0xA0}) s.set(size_t(c));
  return s;
}

Node bytes(const Set& s) {
  Node n;
  n.kind = Node::bytes;
  n.set = s;
  return n;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Parser {
 public:
  explicit Parser(const std::string& s) : s_(s) {}

  Node parse() {
    Node n = alternation();
    if (i_ < s_.size()) fail("unmatched ')'");  // alternation stops only at ')' or the end
    return n;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const { throw Error(why); }
  bool at_end() const { return i_ >= s_.size(); }
  char peek() const { return s_[i_]; }

  Node alternation() {
    std::vector<Node> alts{concatenation()};
    while (!at_end() && peek() == '|') {
      ++i_;
      alts.push_back(concatenation());
    }
    if (alts.size() == 1) return std::move(alts[0]);
    Node n;
    n.kind = Node::alt;
    n.kids = std::move(alts);
    return n;
  }

  Node concatenation() {
    Node n;
    n.kind = Node::concat;
    while (!at_end() && peek() != '|' && peek() != ')') n.kids.push_back(quantified());
    if (n.kids.empty()) return Node{};
    if (n.kids.size() == 1) return std::move(n.kids[0]);
    return n;
  }

  // atom, then *, +, ?, {m}, {m,}, {m,n}, each optionally lazy (`?`: the same for a search).
  Node quantified() {
    const char first = peek();
    if (first == '*' || first == '+' || first == '?') fail(std::string("nothing to repeat before '") + first + "'");
    Node a = atom();
    if (at_end()) return a;
    int lo = 0, hi = -1;
    const char q = peek();
    if (q == '*') {
      ++i_;
    } else if (q == '+') {
      lo = 1;
      ++i_;
    } else if (q == '?') {
      hi = 1;
      ++i_;
    } else if (q != '{' || !braces(lo, hi)) {
      return a;
    }
    if (a.kind != Node::bytes && a.kind != Node::concat && a.kind != Node::alt && a.kind != Node::repeat &&
        a.kind != Node::empty)
      fail("nothing to repeat: an assertion (^, $, \\b, \\B) cannot be repeated");
    if (!at_end() && peek() == '?') ++i_;
    Node r;
    r.kind = Node::repeat;
    r.min = lo;
    r.max = hi;
    r.kids.push_back(std::move(a));
    return r;
  }

  // {m}, {m,}, {m,n} at i_; false (i_ unchanged) when the braces are not a quantifier: then
  // '{' is a literal, as ECMAScript's Annex B reads it.
  bool braces(int& lo, int& hi) {
    size_t j = i_ + 1;
    auto number = [&](int& out) {
      const size_t start = j;
      long v = 0;
      while (j < s_.size() && std::isdigit(static_cast<unsigned char>(s_[j]))) {
        v = std::min<long>(v * 10 + (s_[j] - '0'), 1L << 30);
        ++j;
      }
      out = int(v);
      return j > start;
    };
    if (!number(lo)) return false;
    hi = lo;
    if (j < s_.size() && s_[j] == ',') {
      ++j;
      if (!number(hi)) hi = -1;
    }
    if (j >= s_.size() || s_[j] != '}') return false;
    if (lo > kMaxRepeat || hi > kMaxRepeat)
      fail("repetition count above " + std::to_string(kMaxRepeat) + " in '" + s_.substr(i_, j + 1 - i_) + "'");
    if (hi >= 0 && hi < lo) fail("numbers out of order in '" + s_.substr(i_, j + 1 - i_) + "'");
    i_ = j + 1;
    return true;
  }

  Node atom() {
    const char c = s_[i_++];
    switch (c) {
      case '(': return group();
      case '[': return char_class();
      case '.': return bytes(~Set().set(size_t('\n')).set(size_t('\r')));
      case '^': {
        Node n;
        n.kind = Node::begin;
        return n;
      }
      case '$': {
        Node n;
        n.kind = Node::end;
        return n;
      }
      case '\\': return escape();
      default: return bytes(Set().set(static_cast<unsigned char>(c)));
    }
  }

  Node group() {
    if (!at_end() && peek() == '?') {
      const std::string head = s_.substr(i_, 3);
      if (head.rfind("?:", 0) == 0) {
        i_ += 2;
      } else if (head.rfind("?=", 0) == 0 || head.rfind("?!", 0) == 0 || head.rfind("?<=", 0) == 0 ||
                 head.rfind("?<!", 0) == 0) {
        fail("lookaround '(" + head.substr(0, head[1] == '<' ? 3 : 2) +
             "' is not supported (filters are matched in linear time, without backtracking)");
      } else if (head.rfind("?<", 0) == 0) {  // a named group: a group
        const size_t close = s_.find('>', i_);
        if (close == std::string::npos) fail("unterminated group name");
        i_ = close + 1;
      } else {
        fail("invalid group '(" + head.substr(0, 2) + "'");
      }
    }
    Node inner = alternation();
    if (at_end() || peek() != ')') fail("missing ')'");
    ++i_;
    if (inner.kind == Node::begin || inner.kind == Node::end || inner.kind == Node::word_boundary ||
        inner.kind == Node::not_word_boundary) {
      Node n;  // (^)* is legal ECMAScript where ^* is not: a group makes the assertion repeatable
      n.kind = Node::concat;
      n.kids.push_back(std::move(inner));
      return n;
    }
    return inner;
  }

  // An escape outside a class: classes of bytes, assertions, control characters, literals.
  Node escape() {
    if (at_end()) fail("trailing backslash");
    const char c = s_[i_];
    if (c == 'b' || c == 'B') {
      ++i_;
      Node n;
      n.kind = c == 'b' ? Node::word_boundary : Node::not_word_boundary;
      return n;
    }
    if (c >= '1' && c <= '9') fail(std::string("backreference '\\") + c + "' is not supported (filters are matched in linear time, without backtracking)");
    if (c == 'k') fail("backreference '\\k' is not supported (filters are matched in linear time, without backtracking)");
    return bytes(escape_set(false));
  }

  // The bytes an escape stands for (at i_, after the backslash); `in_class`: \b is backspace.
  Set escape_set(bool in_class) {
    const char c = s_[i_++];
    switch (c) {
      case 'd': return digits();
      case 'D': return ~digits();
      case 'w': return word();
      case 'W': return ~word();
      case 's': return space();
      case 'S': return ~space();
      case 't': return Set().set('\t');
      case 'n': return Set().set('\n');
      case 'r': return Set().set('\r');
      case 'f': return Set().set('\f');
      case 'v': return Set().set('\v');
      case '0': return Set().set(0);
      case 'b':
        if (in_class) return Set().set('\b');
        break;
      case 'x': {
        if (i_ + 2 > s_.size() || hex_value(s_[i_]) < 0 || hex_value(s_[i_ + 1]) < 0) fail("'\\x' needs two hex digits");
        const int v = hex_value(s_[i_]) * 16 + hex_value(s_[i_ + 1]);
        i_ += 2;
        return Set().set(size_t(v));
      }
      default:
        if (!std::isalnum(static_cast<unsigned char>(c))) return Set().set(static_cast<unsigned char>(c));
        break;
    }
    fail(std::string("unsupported escape '\\") + c + "'");
  }

  // [...] and [^...]: single bytes, escapes, ranges a-z; '-' first, last or after a class escape is literal.
  Node char_class() {
    bool negate = false;
    if (!at_end() && peek() == '^') {
      negate = true;
      ++i_;
    }
    Set set;
    while (true) {
      if (at_end()) fail("missing ']'");
      if (peek() == ']') {
        ++i_;
        break;
      }
      int lo = -1;
      Set item = class_atom(lo);
      if (lo >= 0 && i_ + 1 < s_.size() && peek() == '-' && s_[i_ + 1] != ']') {
        ++i_;
        int hi = -1;
        const Set end = class_atom(hi);
        if (hi < 0) {  // a class escape after '-': both literal (Annex B)
          set |= item | Set().set('-') | end;
          continue;
        }
        if (hi < lo) fail("range out of order in character class");
        item = range(lo, hi);
      }
      set |= item;
    }
    return bytes(negate ? ~set : set);
  }

  // One member of a class; `single` gets its byte when it is one byte (a range may start there).
  Set class_atom(int& single) {
    const char c = s_[i_++];
    Set s;
    if (c == '\\') {
      if (at_end()) fail("missing ']'");
      s = escape_set(true);
    } else {
      s.set(static_cast<unsigned char>(c));
    }
    single = -1;
    if (s.count() == 1)
      for (int b = 0; b < 256; ++b)
        if (s.test(size_t(b))) single = b;
    return s;
  }

  const std::string& s_;
  size_t i_ = 0;
};

// Nested counts multiply ((a{100}){100} is 10,000 copies): their product is held to kMaxRepeat,
// as RE2 holds it, so that both engines accept the same patterns.
void check_nesting(const Node& n, long budget) {
  if (n.kind == Node::repeat) {
    const long m = n.max >= 0 ? n.max : n.min;
    if (m > 0) budget /= m;
    if (budget == 0)
      throw Error("nested repetition counts multiply above " + std::to_string(kMaxRepeat));
  }
  for (const Node& k : n.kids) check_nesting(k, budget);
}

}  // namespace

Node parse(const std::string& text) {
  Node n = Parser(text).parse();
  check_nesting(n, kMaxRepeat);
  return n;
}

}  // namespace nb::pattern
