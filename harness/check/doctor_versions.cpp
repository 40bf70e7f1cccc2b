// Version strings and lists of CUDA architectures (CMake, PyTorch and TensorFlow notations).
#include "check/doctor.hpp"
#include "check/doctor_util.hpp"

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

namespace nb {

using namespace doctor_detail;

// ---- Versions and architectures --------------------------------------------------------------

std::vector<int> parse_version(const std::string& text) {
  std::vector<int> out;
  size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    long v = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      v = v * 10 + (text[i] - '0');
      if (v > 1000000000L) v = 1000000000L;
      ++i;
    }
    out.push_back(int(v));
    if (i < text.size() && text[i] == '.') ++i;
    else break;
  }
  return out;
}

int compare_versions(const std::vector<int>& a, const std::vector<int>& b) {
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const int x = i < a.size() ? a[i] : 0, y = i < b.size() ? b[i] : 0;
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

std::optional<int> parse_cc(const std::string& text) {
  const auto v = parse_version(text);
  if (v.size() != 2 || v[1] > 9) return std::nullopt;
  return v[0] * 10 + v[1];
}

std::string cc_string(int cc) { return std::to_string(cc / 10) + "." + std::to_string(cc % 10); }

std::vector<ArchEntry> parse_arch_list(const std::string& text, bool* unknown) {
  std::map<std::pair<int, bool>, ArchEntry> merged;  // by (cc, specific)
  bool unk = false;
  std::string token;
  auto add = [&](int cc, bool sass, bool ptx, bool specific) {
    ArchEntry& e = merged[{cc, specific}];
    e.cc = cc;
    e.specific = specific;
    e.sass = e.sass || sass;
    e.ptx = e.ptx || (ptx && !specific);
  };
  auto digits = [](const std::string& s, size_t& i) {
    int v = -1;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      v = (v < 0 ? 0 : v) * 10 + (s[i] - '0');
      ++i;
    }
    return v;
  };
  auto handle = [&](std::string t) {
    std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
    if (t.empty()) return;
    size_t i = 0;
    if (t.rfind("sm_", 0) == 0 || t.rfind("compute_", 0) == 0) {
      const bool ptx = t[0] == 'c';
      i = ptx ? 8 : 3;
      const int cc = digits(t, i);
      const bool specific = i < t.size() && t[i] == 'a';
      if (i < t.size() && (t[i] == 'a' || t[i] == 'f')) ++i;
      if (cc < 0 || i != t.size()) {
        unk = true;
        return;
      }
      add(cc, !ptx, ptx, specific);
      return;
    }
    if (t.find('.') != std::string::npos) {  // PyTorch: "6.0", "9.0+ptx", "9.0a"
      const int major = digits(t, i);
      if (major < 0 || i >= t.size() || t[i] != '.') {
        unk = true;
        return;
      }
      ++i;
      const int minor = digits(t, i);
      bool specific = false;
      if (i < t.size() && (t[i] == 'a' || t[i] == 'f')) specific = t[i++] == 'a';
      const bool ptx = t.compare(i, std::string::npos, "+ptx") == 0;
      if (minor < 0 || minor > 9 || (!ptx && i != t.size())) {
        unk = true;
        return;
      }
      add(major * 10 + minor, true, ptx, specific);
      return;
    }
    const int cc = digits(t, i);  // CMake: "75", "75-real", "90a-real", "120-virtual"
    if (cc < 0) {
      unk = true;
      return;
    }
    bool specific = false;
    if (i < t.size() && (t[i] == 'a' || t[i] == 'f')) specific = t[i++] == 'a';
    const std::string rest = t.substr(i);
    if (rest.empty()) add(cc, true, true, specific);
    else if (rest == "-real") add(cc, true, false, specific);
    else if (rest == "-virtual") add(cc, false, true, specific);
    else unk = true;
  };
  for (char ch : text) {
    if (ch == ';' || ch == ',' || std::isspace(static_cast<unsigned char>(ch))) {
      handle(token);
      token.clear();
    } else {
      token += ch;
    }
  }
  handle(token);
  std::vector<ArchEntry> out;
  for (const auto& [k, e] : merged) out.push_back(e);
  std::sort(out.begin(), out.end(), [](const ArchEntry& a, const ArchEntry& b) { return a.cc < b.cc; });
  if (unknown) *unknown = unk;
  return out;
}

ArchMatch match_arch(const std::vector<ArchEntry>& archs, int cc) {
  ArchMatch best;
  for (const auto& e : archs) {
    if (!e.sass) continue;
    const bool runs = e.specific ? e.cc == cc : (e.cc / 10 == cc / 10 && e.cc <= cc);
    if (runs && (best.fit != ArchFit::native || e.cc > best.via)) best = {ArchFit::native, e.cc};
  }
  if (best.fit == ArchFit::native) return best;
  for (const auto& e : archs)
    if (e.ptx && !e.specific && e.cc <= cc && (best.fit != ArchFit::jit || e.cc > best.via)) best = {ArchFit::jit, e.cc};
  return best;
}

std::string describe_archs(const std::vector<ArchEntry>& archs) {
  std::vector<std::string> sass, ptx;
  for (const auto& e : archs) {
    if (e.sass) sass.push_back("sm_" + std::to_string(e.cc) + (e.specific ? "a" : ""));
    if (e.ptx) ptx.push_back("compute_" + std::to_string(e.cc));
  }
  std::string s = sass.empty() ? "no SASS" : "SASS " + join(sass, ",");
  s += ptx.empty() ? "; no PTX" : "; PTX " + join(ptx, ",");
  return s;
}

}  // namespace nb
