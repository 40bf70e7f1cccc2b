// The engines of base/pattern.hpp: the built-in NFA simulation, and RE2 where the build found it.
#include "base/pattern.hpp"

#include <cctype>
#include <cstdio>

#include "base/error.hpp"

#ifdef NB_HAVE_RE2
#include <re2/re2.h>
#endif

namespace nb {
namespace pattern {

// ---- the built-in engine -------------------------------------------------------------------

Program::Program(const Node& root) {
  emit(root);
  add({Inst::match, 0, 0});
}

int Program::add(Inst i) {
  if (code_.size() >= kMaxProgram)
    throw Error("too large: more than " + std::to_string(kMaxProgram) + " steps once repetitions are expanded");
  code_.push_back(i);
  return int(code_.size()) - 1;
}

void Program::emit(const Node& n) {
  switch (n.kind) {
    case Node::empty: return;
    case Node::bytes:
      sets_.push_back(n.set);
      add({Inst::byte, int(sets_.size()) - 1, 0});
      return;
    case Node::begin: add({Inst::assert_begin, 0, 0}); return;
    case Node::end: add({Inst::assert_end, 0, 0}); return;
    case Node::word_boundary: add({Inst::word_b, 0, 0}); return;
    case Node::not_word_boundary: add({Inst::not_word_b, 0, 0}); return;
    case Node::concat:
      for (const Node& k : n.kids) emit(k);
      return;
    case Node::alt: {
      std::vector<int> exits;
      for (size_t i = 0; i + 1 < n.kids.size(); ++i) {
        const int s = add({Inst::split, 0, 0});
        code_[size_t(s)].x = s + 1;
        emit(n.kids[i]);
        exits.push_back(add({Inst::jmp, 0, 0}));
        code_[size_t(s)].y = int(code_.size());
      }
      emit(n.kids.back());
      for (int j : exits) code_[size_t(j)].x = int(code_.size());
      return;
    }
    case Node::repeat: {
      const Node& body = n.kids[0];
      for (int i = 0; i < n.min; ++i) emit(body);
      if (n.max < 0) {  // L: split(body, out); body; jmp L
        const int s = add({Inst::split, 0, 0});
        code_[size_t(s)].x = s + 1;
        emit(body);
        add({Inst::jmp, s, 0});
        code_[size_t(s)].y = int(code_.size());
        return;
      }
      std::vector<int> skips;  // each optional copy may be skipped to the end
      for (int i = n.min; i < n.max; ++i) {
        const int s = add({Inst::split, 0, 0});
        code_[size_t(s)].x = s + 1;
        skips.push_back(s);
        emit(body);
      }
      for (int s : skips) code_[size_t(s)].y = int(code_.size());
      return;
    }
  }
}

namespace {

bool is_word(std::string_view t, size_t i) {
  if (i >= t.size()) return false;
  const unsigned char c = static_cast<unsigned char>(t[i]);
  return std::isalnum(c) || c == '_';
}

}  // namespace

// Breadth-first over the NFA (Thompson): every live state advances one byte at a time, each
// state at most once per position, so the work is at most text length x program size.
bool Program::search(std::string_view text) const {
  std::vector<size_t> mark(code_.size(), SIZE_MAX);
  std::vector<int> clist, nlist, stack;
  size_t gen = 0;
  // Adds the states reachable from pc without reading a byte; true when one of them matches.
  auto follow = [&](std::vector<int>& list, int start, size_t pos) {
    stack.assign(1, start);
    while (!stack.empty()) {
      const int pc = stack.back();
      stack.pop_back();
      if (mark[size_t(pc)] == gen) continue;
      mark[size_t(pc)] = gen;
      const Inst& in = code_[size_t(pc)];
      const bool boundary = (pos > 0 && is_word(text, pos - 1)) != is_word(text, pos);
      switch (in.op) {
        case Inst::match: return true;
        case Inst::byte: list.push_back(pc); break;
        case Inst::jmp: stack.push_back(in.x); break;
        case Inst::split:
          stack.push_back(in.y);
          stack.push_back(in.x);
          break;
        case Inst::assert_begin: if (pos == 0) stack.push_back(pc + 1); break;
        case Inst::assert_end: if (pos == text.size()) stack.push_back(pc + 1); break;
        case Inst::word_b: if (boundary) stack.push_back(pc + 1); break;
        case Inst::not_word_b: if (!boundary) stack.push_back(pc + 1); break;
      }
    }
    return false;
  };
  if (follow(clist, 0, 0)) return true;
  for (size_t pos = 0; pos < text.size(); ++pos) {
    ++gen;
    nlist.clear();
    const unsigned char c = static_cast<unsigned char>(text[pos]);
    for (int pc : clist)
      if (sets_[size_t(code_[size_t(pc)].x)].test(c) && follow(nlist, pc + 1, pos + 1)) return true;
    if (follow(nlist, 0, pos + 1)) return true;  // a match may start at any position
    std::swap(clist, nlist);
  }
  return false;
}

// ---- RE2 syntax ---------------------------------------------------------------------------

namespace {

std::string byte_escape(int b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x{%02x}", b);
  return buf;
}

std::string class_text(const std::bitset<256>& s) {
  if (s.none()) return "[^\\x{00}-\\x{ff}]";
  std::string out = "[";
  for (int b = 0; b < 256; ++b) {
    if (!s.test(size_t(b))) continue;
    int e = b;
    while (e + 1 < 256 && s.test(size_t(e + 1))) ++e;
    out += byte_escape(b) + (e > b ? "-" + byte_escape(e) : "");
    b = e;
  }
  return out + "]";
}

}  // namespace

std::string to_re2(const Node& n) {
  switch (n.kind) {
    case Node::empty: return "(?:)";
    case Node::bytes: return class_text(n.set);
    case Node::begin: return "\\A";
    case Node::end: return "\\z";
    case Node::word_boundary: return "\\b";
    case Node::not_word_boundary: return "\\B";
    case Node::concat: {
      std::string out;
      for (const Node& k : n.kids) out += to_re2(k);
      return out;
    }
    case Node::alt: {
      std::string out = "(?:";
      for (size_t i = 0; i < n.kids.size(); ++i) out += (i ? "|" : "") + to_re2(n.kids[i]);
      return out + ")";
    }
    case Node::repeat: {
      const std::string body = "(?:" + to_re2(n.kids[0]) + ")";
      if (n.min == 0 && n.max < 0) return body + "*";
      if (n.min == 1 && n.max < 0) return body + "+";
      if (n.min == 0 && n.max == 1) return body + "?";
      if (n.max < 0) return body + "{" + std::to_string(n.min) + ",}";
      return body + "{" + std::to_string(n.min) + "," + std::to_string(n.max) + "}";
    }
  }
  return "";
}

}  // namespace pattern

// ---- Pattern --------------------------------------------------------------------------------

struct Pattern::Impl {
  pattern::Program program;
#ifdef NB_HAVE_RE2
  std::unique_ptr<re2::RE2> re2;
#endif
};

Pattern::Pattern(const std::string& text, PatternEngine engine) : text_(text) {
  try {
    const pattern::Node tree = pattern::parse(text);
    impl_ = std::make_unique<Impl>(Impl{pattern::Program(tree)});
#ifdef NB_HAVE_RE2
    if (engine == PatternEngine::best) {
      re2::RE2::Options opt;
      opt.set_encoding(re2::RE2::Options::EncodingLatin1);
      opt.set_log_errors(false);
      impl_->re2 = std::make_unique<re2::RE2>(pattern::to_re2(tree), opt);
      if (!impl_->re2->ok()) throw Error(impl_->re2->error());
    }
#else
    (void)engine;
#endif
  } catch (const Error& e) {
    throw Error("'" + text + "' is not a valid regular expression (" + e.what() + ")");
  }
}

Pattern::~Pattern() = default;
Pattern::Pattern(Pattern&&) noexcept = default;
Pattern& Pattern::operator=(Pattern&&) noexcept = default;

bool Pattern::search(std::string_view text) const {
#ifdef NB_HAVE_RE2
  if (impl_->re2) return re2::RE2::PartialMatch(re2::StringPiece(text.data(), text.size()), *impl_->re2);
#endif
  return impl_->program.search(text);
}

const char* Pattern::best_engine() {
#ifdef NB_HAVE_RE2
  return "RE2";
#else
  return "built-in";
#endif
}

}  // namespace nb
