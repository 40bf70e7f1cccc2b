// The lists of CUDA architectures a build carries (CMake, PyTorch and TensorFlow notations) and
// the one rule of whether a GPU of a given compute capability runs them. The binary's doctor
// (check/doctor_rules_driver.cpp) and the frameworks check judge with it, and every run records its
// verdict for each GPU in the result file (environment.gpus[].build_support, docs/SCHEMA.md),
// which the reports read rather than judge again. tests/data/arch_rule.json is its table.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace nb {

struct ArchEntry {
  int cc = 0;              // major*10+minor
  bool sass = false;       // machine code
  bool ptx = false;        // PTX the driver can JIT-compile for newer GPUs
  bool specific = false;   // "90a": runs only on exactly this compute capability
};
// Accepts CMake ("75-real;80;90-virtual"), PyTorch ("6.0;9.0+PTX") and TensorFlow
// ("sm_60,compute_90") notations. Tokens it cannot read ("native", "all") are skipped; `unknown`
// says whether there were any.
std::vector<ArchEntry> parse_arch_list(const std::string& text, bool* unknown = nullptr);

enum class ArchFit { native, jit, none };
struct ArchMatch {
  ArchFit fit = ArchFit::none;
  int via = 0;  // the SASS or PTX architecture used
};
// A GPU of compute capability `cc` runs SASS of the same major with minor <= its own (exact for
// arch-specific SASS), or JIT-compiles PTX of any architecture <= cc.
ArchMatch match_arch(const std::vector<ArchEntry>& archs, int cc);
std::string describe_archs(const std::vector<ArchEntry>& archs);  // "sm_75..sm_121 SASS, compute_121 PTX"

// This rule's verdict for a build of `archs` (a list in any of the notations above) on a GPU of
// compute capability `cc` (major*10+minor): status "sass" (machine code for it, or for an older
// minor of its major unless arch-specific), "ptx" (only PTX not newer than it, JIT-compiled at
// start-up), "none", or "unknown" (the list names no architecture this rule reads: "native");
// arch the SASS or PTX architecture used ("" unless sass or ptx); reason in words.
struct BuildSupport {
  std::string status, arch, reason;
};
BuildSupport build_support(const std::string& archs, int cc);
// {"status", "arch" (null unless sass or ptx), "reason"}: environment.gpus[].build_support.
nlohmann::json build_support_json(const BuildSupport& b);

}  // namespace nb
