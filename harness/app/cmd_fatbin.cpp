#include "app/commands.hpp"

#include <iostream>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/fatbin.hpp"

namespace nb {

namespace {

std::vector<std::string> names(const std::set<FatbinArch>& s, bool ptx) {
  std::vector<std::string> out;
  for (const FatbinArch& a : s) out.push_back(fatbin_arch_name(a, ptx));
  return out;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s.empty() ? "none" : s;
}

}  // namespace

int cmd_fatbin(const FatbinCommand& c) {
  int rc = kExitOk;
  for (const std::string& f : c.files) {
    try {
      const FatbinContents fc = read_fatbin(f);
      if (c.json) {
        nlohmann::json j = {{"file", f},
                            {"sass", names(fc.sass, false)},
                            {"ptx", names(fc.ptx, true)},
                            {"containers", fc.containers},
                            {"entries", fc.entries.size()}};
        std::cout << j.dump() << "\n";
      } else if (fc.containers == 0) {
        std::cout << f << ": no CUDA device code (no fatbin in .nv_fatbin or __nv_relfatbin)\n";
      } else {
        std::cout << f << ": SASS " << joined(names(fc.sass, false)) << "; PTX " << joined(names(fc.ptx, true)) << "  ("
                  << fc.entries.size() << " entries in " << fc.containers << " fatbin containers)\n";
      }
    } catch (const Error& e) {
      rc = kExitUsage;
      if (c.json) std::cout << nlohmann::json{{"file", f}, {"error", e.what()}}.dump() << "\n";
      std::cerr << "nodebench fatbin: " << e.what() << "\n";
    }
  }
  std::cout.flush();
  return rc;
}

}  // namespace nb
