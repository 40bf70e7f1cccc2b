// The lists of CUDA architectures and whether a GPU runs them (node/arch_rule.hpp).
#include "node/arch_rule.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>

#include "base/text.hpp"

namespace nb {

namespace {

// One architecture a token names: its compute capability, whether it brings SASS and PTX, and
// whether it is arch-specific (90a).
struct ArchToken {
  int cc = 0;
  bool sass = false, ptx = false, specific = false;
};

int read_digits(const std::string& s, size_t& i) {
  int v = -1;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
    v = (v < 0 ? 0 : v) * 10 + (s[i] - '0');
    ++i;
  }
  return v;
}

// nvcc: "sm_90", "sm_90a", "compute_120f".
std::optional<ArchToken> nvcc_token(const std::string& t) {
  const bool ptx = t[0] == 'c';
  size_t i = ptx ? 8 : 3;
  const int cc = read_digits(t, i);
  const bool specific = i < t.size() && t[i] == 'a';
  if (i < t.size() && (t[i] == 'a' || t[i] == 'f')) ++i;
  if (cc < 0 || i != t.size()) return std::nullopt;
  return ArchToken{cc, !ptx, ptx, specific};
}

// PyTorch: "6.0", "9.0+ptx", "9.0a".
std::optional<ArchToken> torch_token(const std::string& t) {
  size_t i = 0;
  const int major = read_digits(t, i);
  if (major < 0 || i >= t.size() || t[i] != '.') return std::nullopt;
  ++i;
  const int minor = read_digits(t, i);
  bool specific = false;
  if (i < t.size() && (t[i] == 'a' || t[i] == 'f')) specific = t[i++] == 'a';
  const bool ptx = t.compare(i, std::string::npos, "+ptx") == 0;
  if (minor < 0 || minor > 9 || (!ptx && i != t.size())) return std::nullopt;
  return ArchToken{major * 10 + minor, true, ptx, specific};
}

// CMake: "75", "75-real", "90a-real", "120-virtual".
std::optional<ArchToken> cmake_token(const std::string& t) {
  size_t i = 0;
  const int cc = read_digits(t, i);
  if (cc < 0) return std::nullopt;
  bool specific = false;
  if (i < t.size() && (t[i] == 'a' || t[i] == 'f')) specific = t[i++] == 'a';
  const std::string rest = t.substr(i);
  if (rest.empty()) return ArchToken{cc, true, true, specific};
  if (rest == "-real") return ArchToken{cc, true, false, specific};
  if (rest == "-virtual") return ArchToken{cc, false, true, specific};
  return std::nullopt;
}

// A non-empty token in any of the three forms (case-insensitive); nullopt when it is none.
std::optional<ArchToken> arch_token(std::string t) {
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  if (t.rfind("sm_", 0) == 0 || t.rfind("compute_", 0) == 0) return nvcc_token(t);
  if (t.find('.') != std::string::npos) return torch_token(t);
  return cmake_token(t);
}

}  // namespace

std::vector<ArchEntry> parse_arch_list(const std::string& text, bool* unknown) {
  std::map<std::pair<int, bool>, ArchEntry> merged;  // by (cc, specific)
  bool unk = false;
  auto handle = [&](const std::string& token) {
    if (token.empty()) return;
    const std::optional<ArchToken> a = arch_token(token);
    if (!a) {
      unk = true;
      return;
    }
    ArchEntry& e = merged[{a->cc, a->specific}];
    e.cc = a->cc;
    e.specific = a->specific;
    e.sass = e.sass || a->sass;
    e.ptx = e.ptx || (a->ptx && !a->specific);
  };
  std::string token;
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

BuildSupport build_support(const std::string& archs, int cc) {
  const std::vector<ArchEntry> list = parse_arch_list(archs);
  const std::string ccs = std::to_string(cc / 10) + "." + std::to_string(cc % 10);
  if (list.empty()) return {"unknown", "", "built for '" + archs + "': names no architecture this rule reads"};
  const ArchMatch m = match_arch(list, cc);
  if (m.fit == ArchFit::native) {
    bool specific = true;  // the SASS used is arch-specific only when no portable one of its cc is there
    for (const auto& e : list)
      if (e.sass && e.cc == m.via && !e.specific) specific = false;
    const std::string sm = "sm_" + std::to_string(m.via) + (specific ? "a" : "");
    if (m.via == cc) return {"sass", sm, "native code (" + sm + ")"};
    return {"sass", sm, "binary-compatible code (" + sm + " runs on " + ccs + ")"};
  }
  if (m.fit == ArchFit::jit) {
    const std::string ptx = "compute_" + std::to_string(m.via);
    return {"ptx", ptx,
            "only PTX (" + ptx + "), JIT-compiled at start-up: slower start, may miss " + ccs + " features"};
  }
  return {"none", "", "no code for this GPU in the build"};
}

nlohmann::json build_support_json(const BuildSupport& b) {
  return {{"status", b.status}, {"arch", b.arch.empty() ? nlohmann::json(nullptr) : nlohmann::json(b.arch)},
          {"reason", b.reason}};
}

}  // namespace nb
