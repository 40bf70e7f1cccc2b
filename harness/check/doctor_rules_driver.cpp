// Rules on the software stack: NVML, driver against runtime and GPUs, the binary's
// architectures, the libraries, and which framework builds run here.
#include "check/doctor.hpp"
#include "check/doctor_util.hpp"
#include "node/arch_facts.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace nb {

using namespace doctor_detail;

std::vector<Check> rule_nvml(const DoctorInput& in) {
  const json& nv = at(in.environment, "nvml");
  const auto avail = jbool(nv, "available");
  if (!avail) return {make_check("nvml.available", std::nullopt, Severity::info, "NVML state not recorded")};
  if (*avail) {
    const auto drv = jstr(software_of(in.environment), "driver_version");
    return {make_check("nvml.available", std::nullopt, Severity::ok,
                       "NVML available" + (drv ? " (driver " + *drv + ")" : std::string()))};
  }
  return {make_check(
      "nvml.available", std::nullopt, Severity::warn,
      "NVML is not available: clocks, ECC, PCIe links, throttling and topology cannot be read",
      jstr(nv, "error").value_or("no reason recorded"),
      "Make the driver's libnvidia-ml.so.1 reachable: install the driver's user-space libraries (the same version "
      "as the kernel module), or in a container run with the NVIDIA container toolkit (--gpus all, "
      "NVIDIA_DRIVER_CAPABILITIES including 'utility').")};
}

std::vector<Check> rule_driver_runtime(const DoctorInput& in, const RuleData& data) {
  const std::string id = "driver.cuda_runtime";
  const json& sw = software_of(in.environment);
  const std::vector<int> rt = runtime_version(in.environment);
  const auto drv_s = jstr(sw, "driver_version");
  const auto cdv_s = jstr(sw, "cuda_driver_version");
  const std::vector<int> drv = drv_s ? parse_version(*drv_s) : std::vector<int>{};
  const std::vector<int> cdv = cdv_s ? parse_version(*cdv_s) : std::vector<int>{};
  const std::string cuda_error = jstr(in.environment, "cuda_error").value_or("");
  if (rt.empty()) return {make_check(id, std::nullopt, Severity::info, "CUDA runtime version not recorded")};
  const std::string rts = version_string(rt);
  const auto min = driver_minimum(data, rt[0]);
  std::string ev = "CUDA runtime " + rts + " (this binary); driver " + drv_s.value_or("unknown") +
                   ", whose own CUDA version is " + cdv_s.value_or("unknown");
  if (min) ev += "; CUDA " + std::to_string(rt[0]) + ".x needs a driver >= " + version_string(*min) +
                 " (minor-version compatibility)";
  const std::string too_old_fix =
      "Install a driver >= " + (min ? version_string(*min) : std::string("the one for CUDA ") + rts) + " (CUDA " +
      std::to_string(rt[0]) +
      ".x). Maxwell, Pascal and Volta GPUs must stay on the R580 branch, the last that supports them, with its "
      "proprietary kernel modules (the open modules, the packages' default since R560, cannot drive them); for an older driver "
      "use a nodebench built with CUDA 12.x (needs >= 525.60.13; scripts/build-cuda12.sh).";
  const std::string compat_fix =
      "The driver's native CUDA is " + cdv_s.value_or("?") + " and the runtime is " + rts +
      ": this works under minor-version compatibility, but PTX built by CUDA " + rts +
      " cannot be JIT-compiled by this driver and APIs newer than the driver fail with "
      "cudaErrorCallRequiresNewerDriver. Update the driver to one whose CUDA version is >= " + rts +
      " (or make sure the binary has SASS for every GPU).";

  if (!drv.empty()) {
    if (min && compare_versions(drv, *min) < 0)
      return {make_check(id, std::nullopt, Severity::fail,
                         "driver " + *drv_s + " is too old for CUDA " + rts, ev, too_old_fix)};
    if (!cdv.empty() && compare_versions(cdv, rt) < 0)
      return {make_check(id, std::nullopt, Severity::warn,
                         "CUDA " + rts + " runs on driver " + *drv_s + " (CUDA " + *cdv_s +
                             ") only by minor-version compatibility",
                         ev, compat_fix)};
    return {make_check(id, std::nullopt, Severity::ok, "driver " + *drv_s + " supports CUDA " + rts, ev)};
  }
  if (!cdv.empty()) {
    if (cdv[0] < rt[0])
      return {make_check(id, std::nullopt, Severity::fail,
                         "the driver supports CUDA " + *cdv_s + ", older than the runtime " + rts, ev, too_old_fix)};
    if (compare_versions(cdv, rt) < 0)
      return {make_check(id, std::nullopt, Severity::warn,
                         "CUDA " + rts + " runs on a CUDA " + *cdv_s + " driver only by minor-version compatibility",
                         ev, compat_fix)};
    return {make_check(id, std::nullopt, Severity::ok, "the driver (CUDA " + *cdv_s + ") supports CUDA " + rts, ev)};
  }
  // Neither version is known: say why, from the CUDA error and the kernel module.
  const bool module_absent = in.live.recorded && !in.live.kernel_driver;
  if (module_absent)
    return {make_check(id, std::nullopt, Severity::fail, "no NVIDIA driver is loaded",
                       ev + "; /proc/driver/nvidia/version absent; CUDA: " +
                           (cuda_error.empty() ? std::string("no error recorded") : cuda_error),
                       "Install the NVIDIA driver (>= " + (min ? version_string(*min) : std::string("the CUDA ") + rts + " minimum") +
                           " for CUDA " + rts +
                           ") and load it (nvidia-smi must work); in a container, start it with the GPUs passed in "
                           "(docker --gpus all, or the NVIDIA device plugin).")};
  if (cuda_error.find("InsufficientDriver") != std::string::npos)
    return {make_check(id, std::nullopt, Severity::fail, "the CUDA driver is missing or too old for CUDA " + rts,
                       ev + "; CUDA: " + cuda_error, too_old_fix)};
  return {make_check(id, std::nullopt, Severity::info, "driver version not available", ev)};
}

std::vector<Check> rule_driver_gpu_support(const DoctorInput& in, const RuleData& data) {
  std::vector<Check> out;
  const auto drv_s = jstr(software_of(in.environment), "driver_version");
  const std::vector<int> drv = drv_s ? parse_version(*drv_s) : std::vector<int>{};
  const json& archs = at(at(data.compat, "driver_last_branch"), "architectures");
  for (const auto& g : gpus_of(in.environment)) {
    const std::string id = "driver.gpu_support";
    if (drv.empty() || !g.cc) {
      out.push_back(make_check(id, g.index, Severity::info, "driver branch or compute capability not available"));
      continue;
    }
    const json* arch = nullptr;
    if (archs.is_array())
      for (const auto& a : archs) {
        const auto lo = parse_cc(a.value("cc_min", "")), hi = parse_cc(a.value("cc_max", ""));
        if (lo && hi && *g.cc >= *lo && *g.cc <= *hi) arch = &a;
      }
    const int branch = drv[0];
    if (!arch) {
      out.push_back(make_check(id, g.index, Severity::ok,
                               "driver branch R" + std::to_string(branch) + " supports " + g.label(),
                               "no end-of-support driver branch is announced for compute capability " + cc_string(*g.cc)));
      continue;
    }
    const std::string an = arch->value("name", "this architecture");
    const int last = arch->value("last_branch", 0);
    const std::string lasts = "R" + std::to_string(last);
    const bool proprietary = arch->value("kernel_modules", "") == "proprietary";
    const auto pins = data.pin_vars();
    const auto pin = [&](const std::string& k) { const auto it = pins.find("pin." + k); return it == pins.end() ? std::string() : it->second; };
    // Since R560 NVIDIA's packages install the open kernel modules by default; they drive Turing
    // and newer only, so the fix must name the proprietary ones for an older architecture.
    const std::string flavour =
        proprietary ? " with the proprietary kernel modules, not the open ones (NVIDIA's packages install the open "
                      "modules by default since R560, and they cannot drive " + an +
                          (pin("driver_packages").empty() ? std::string() : "; " + pin("driver_packages")) + ")"
                    : std::string();
    const std::string ev = g.label() + " is " + an + "; driver " + *drv_s + " is branch R" + std::to_string(branch) +
                           "; " + lasts + " is the last branch that supports " + an +
                           (proprietary ? ", with the proprietary kernel modules only" : "");
    if (branch > last)
      out.push_back(make_check(id, g.index, Severity::fail,
                               "driver branch R" + std::to_string(branch) + " does not support " + an, ev,
                               "Install an " + lasts + " driver" + flavour + ". " + lasts + " is the last branch for " + an +
                                   (last == 580 ? " and the only one still maintained (a long-term branch, supported to "
                                                  "2028; R535 reached its end of life in June 2026)"
                                                : std::string()) +
                                   "; hold it there (apt-mark hold)."));
    else if (branch == last)
      out.push_back(make_check(id, g.index, Severity::info,
                               lasts + " is the last driver branch for " + an, ev,
                               "Pin the driver to the " + lasts + " branch" + flavour +
                                   ", and hold it (apt-mark hold) so that an upgrade does not drop this GPU; CUDA 13 "
                                   "needs R580 too, so that combination stays possible, but CUDA 13 libraries lack "
                                   "this GPU's architecture (see libs.*)."));
    else
      out.push_back(make_check(id, g.index, Severity::ok, "driver R" + std::to_string(branch) + " supports " + an, ev));
  }
  return out;
}

std::vector<Check> rule_arch_binary(const DoctorInput& in, const RuleData& data) {
  (void)data;
  std::vector<Check> out;
  bool unknown = false;
  const auto archs = parse_arch_list(in.cuda_architectures, &unknown);
  const std::vector<int> rt = runtime_version(in.environment);
  const auto cdv_s = jstr(software_of(in.environment), "cuda_driver_version");
  const std::vector<int> cdv = cdv_s ? parse_version(*cdv_s) : std::vector<int>{};
  const bool minor_compat = !cdv.empty() && !rt.empty() && compare_versions(cdv, rt) < 0;
  for (const auto& g : gpus_of(in.environment)) {
    const std::string id = "arch.binary";
    const std::string ev = "this binary: " + (in.cuda_architectures.empty() ? std::string("(not recorded)") : in.cuda_architectures) +
                           " = " + describe_archs(archs) + "; " + g.label();
    if (!g.cc || archs.empty()) {
      out.push_back(make_check(id, g.index, Severity::info, "compiled architectures not known", ev));
      continue;
    }
    const ArchMatch m = match_arch(archs, *g.cc);
    const std::string ccs = cc_string(*g.cc);
    if (m.fit == ArchFit::native) {
      out.push_back(make_check(id, g.index, Severity::ok, "sm_" + std::to_string(m.via) + " SASS runs on cc " + ccs, ev));
    } else if (m.fit == ArchFit::jit) {
      if (minor_compat)
        out.push_back(make_check(
            id, g.index, Severity::fail,
            "only compute_" + std::to_string(m.via) + " PTX fits cc " + ccs + ", and this driver cannot JIT it", 
            ev + "; the driver's CUDA " + *cdv_s + " is older than the runtime " + version_string(rt) +
                " (minor-version compatibility does not cover PTX JIT)",
            "Rebuild nodebench with SASS for this GPU: -DCMAKE_CUDA_ARCHITECTURES=" + std::to_string(*g.cc) +
                "-real (or update the driver)."));
      else
        out.push_back(make_check(id, g.index, Severity::info,
                                 "cc " + ccs + " runs compute_" + std::to_string(m.via) + " PTX by JIT compilation", ev,
                                 "The first launch compiles the kernels (seconds; cached in ~/.nv/ComputeCache). "
                                 "For SASS, rebuild with -DCMAKE_CUDA_ARCHITECTURES including " +
                                     std::to_string(*g.cc) + "-real."));
    } else {
      std::string fix;
      if (*g.cc < 75 && !rt.empty() && rt[0] >= 13)
        fix = "CUDA " + std::to_string(rt[0]) + " cannot compile for compute capability below 7.5. Build nodebench with "
              "CUDA 12.x (12.9 is the last with Pascal and Volta): scripts/build-cuda12.sh, or cmake "
              "-DCMAKE_CUDA_COMPILER=/usr/local/cuda-12.9/bin/nvcc -DCMAKE_CUDA_ARCHITECTURES=" + std::to_string(*g.cc) + "-real.";
      else
        fix = "Rebuild with -DCMAKE_CUDA_ARCHITECTURES including " + std::to_string(*g.cc) + "-real (or an older PTX "
              "architecture, e.g. '" + std::to_string(*g.cc) + "').";
      out.push_back(make_check(id, g.index, Severity::fail,
                               "this binary has no code for cc " + ccs + ": every kernel launch fails "
                               "(cudaErrorNoKernelImageForDevice)",
                               ev, fix));
    }
  }
  return out;
}

std::vector<Check> rule_libraries(const DoctorInput& in, const RuleData& data) {
  std::vector<Check> out;
  const json& sw = software_of(in.environment);
  const json& libs = at(data.compat, "libraries");
  const std::vector<int> rt = runtime_version(in.environment);
  struct Lib {
    const char* id;
    const char* key;
    const char* pretty;
    const char* needed_by;
  };
  const Lib list[] = {{"libs.cublas", "cublas_version", "cuBLAS", "every GEMM case"},
                      {"libs.cudnn", "cudnn_version", "cuDNN", "the conv family and frameworks"},
                      {"libs.nccl", "nccl_version", "NCCL", "the nccl family and multi-GPU frameworks"}};
  const auto gpus = gpus_of(in.environment);
  for (const Lib& lib : list) {
    const auto ver_s = jstr(sw, lib.key);
    // The rule entry that applies to the found version (or, for NCCL, to the CUDA runtime).
    const json* entry = nullptr;
    if (ver_s) {
      const std::vector<int> ver = parse_version(*ver_s);
      if (std::string(lib.id) == "libs.nccl") {
        // The first entry of this CUDA major whose min_version (if any) the version reaches.
        if (!rt.empty() && at(libs, "nccl_by_cuda_major").is_array())
          for (const auto& e : at(libs, "nccl_by_cuda_major"))
            if (!entry && e.value("cuda_major", 0) == rt[0] &&
                compare_versions(ver, parse_version(e.value("min_version", "0"))) >= 0)
              entry = &e;
      } else {
        const json& list_j = at(libs, lib.id + 5);  // "libs.cublas" -> "cublas"
        if (list_j.is_array())
          for (const auto& e : list_j)
            if (!entry && compare_versions(ver, parse_version(e.value("min_version", "0"))) >= 0) entry = &e;
      }
    }
    for (const auto& g : gpus) {
      if (!ver_s) {
        out.push_back(make_check(lib.id, g.index, Severity::info,
                                 std::string(lib.pretty) + " not found (only " + lib.needed_by + " needs it)",
                                 std::string(lib.pretty) + " could not be loaded by this process"));
        continue;
      }
      if (!entry || !g.cc) {
        out.push_back(make_check(lib.id, g.index, Severity::info,
                                 std::string(lib.pretty) + " " + *ver_s + ": no architecture rule for this version"));
        continue;
      }
      const auto min_cc = parse_cc(entry->value("min_cc", "0.0")).value_or(0);
      std::map<std::string, std::string> vars = data.pin_vars();
      vars["version"] = *ver_s;
      vars["cc"] = cc_string(*g.cc);
      const std::string why = subst(entry->value("why", ""), vars);
      const std::string ev = why + "; " + g.label();
      if (*g.cc >= min_cc) {
        out.push_back(make_check(lib.id, g.index, Severity::ok,
                                 std::string(lib.pretty) + " " + *ver_s + " supports cc " + cc_string(*g.cc), ev));
      } else {
        out.push_back(make_check(lib.id, g.index, severity_from(entry->value("severity", "fail")),
                                 std::string(lib.pretty) + " " + *ver_s + " has no code for cc " + cc_string(*g.cc) +
                                     " (needs " + cc_string(min_cc) + " or newer)",
                                 ev, subst(entry->value("fix", ""), vars)));
      }
    }
  }
  return out;
}


namespace {

struct BuildFit {
  bool runs = false;
  std::string why;
};

// Whether a framework build with CUDA `cuda` and `archs` runs on this node's driver and GPUs.
BuildFit judge_build(const DoctorInput& in, const RuleData& data, const std::string& cuda, const std::string& archs_s) {
  const std::vector<int> bcuda = parse_version(cuda);
  const json& sw = software_of(in.environment);
  const auto drv_s = jstr(sw, "driver_version");
  const auto cdv_s = jstr(sw, "cuda_driver_version");
  const std::vector<int> drv = drv_s ? parse_version(*drv_s) : std::vector<int>{};
  const std::vector<int> cdv = cdv_s ? parse_version(*cdv_s) : std::vector<int>{};
  if (bcuda.empty()) return {false, "CUDA version unknown"};
  const auto min = driver_minimum(data, bcuda[0]);
  if (!drv.empty() && min && compare_versions(drv, *min) < 0)
    return {false, "driver " + *drv_s + " < " + version_string(*min) + " needed by CUDA " + cuda};
  if (drv.empty() && !cdv.empty() && cdv[0] < bcuda[0])
    return {false, "the driver's CUDA " + *cdv_s + " is older than CUDA " + cuda};
  const auto archs = parse_arch_list(archs_s);
  std::vector<std::string> notes;
  for (const auto& g : gpus_of(in.environment)) {
    if (!g.cc) continue;
    const ArchMatch m = match_arch(archs, *g.cc);
    if (m.fit == ArchFit::none)
      return {false, "no code for cc " + cc_string(*g.cc) + " (GPU " + std::to_string(g.index) + ")"};
    if (m.fit == ArchFit::jit) {
      if (!cdv.empty() && compare_versions(cdv, bcuda) < 0)
        return {false, "cc " + cc_string(*g.cc) + " only by JIT of compute_" + std::to_string(m.via) +
                           " PTX, which needs a driver for CUDA " + cuda + " (this one: " + *cdv_s + ")"};
      notes.push_back("cc " + cc_string(*g.cc) + " by JIT of compute_" + std::to_string(m.via) + " PTX (slow first start)");
    }
  }
  if (gpus_of(in.environment).empty()) notes.push_back("no GPU visible: judged by the driver only");
  return {true, join(notes, "; ")};
}

// Which builds of a list (framework wheels or releases, named by `name_key`) run here: their
// names, one evidence line each ("<name> (<describe>): runs|no - why"), and the newest that runs.
struct BuildsFit {
  std::vector<std::string> yes, lines;
  std::string newest;
};
BuildsFit judge_builds(const DoctorInput& in, const RuleData& data, const json& list, const char* name_key,
                       const std::function<std::string(const json&)>& describe) {
  BuildsFit r;
  if (!list.is_array()) return r;
  for (const auto& b : list) {
    const std::string name = b.value(name_key, "?");
    const BuildFit f = judge_build(in, data, b.value("cuda", ""), b.value("archs", ""));
    r.lines.push_back(name + " (" + describe(b) + "): " + (f.runs ? "runs" : "no") + (f.why.empty() ? "" : " - " + f.why));
    if (f.runs) {
      r.yes.push_back(name);
      r.newest = name;
    }
  }
  return r;
}

}  // namespace

std::vector<Check> rule_frameworks(const DoctorInput& in, const RuleData& data) {
  std::vector<Check> out;
  const json& sw = software_of(in.environment);
  if (!jstr(sw, "driver_version") && !jstr(sw, "cuda_driver_version")) {
    for (const char* id : {"frameworks.pytorch", "frameworks.tensorflow"})
      out.push_back(make_check(id, std::nullopt, Severity::info, "not judged: the driver version is unknown",
                               "a framework build runs when the driver supports its CUDA version and its code covers "
                               "every GPU; neither NVML nor the CUDA driver API gave a driver version"));
    return out;
  }
  // PyTorch
  {
    const json& pt = at(data.frameworks, "pytorch");
    const auto [yes, lines, newest] = judge_builds(in, data, at(pt, "wheels"), "tag", [](const json& w) {
      return "CUDA " + w.value("cuda", "?") + ", torch " + w.value("torch", "?");
    });
    const std::string ev = join(lines, "; ") + ". Source: " + (pt.is_object() ? pt.value("source", "") : std::string());
    if (yes.empty())
      out.push_back(make_check("frameworks.pytorch", std::nullopt, Severity::warn, "no published PyTorch wheel runs on this node", ev,
                               "Update the driver (driver.cuda_runtime) or build PyTorch from source with "
                               "TORCH_CUDA_ARCH_LIST naming this GPU's compute capability."));
    else
      out.push_back(make_check("frameworks.pytorch", std::nullopt, Severity::info,
                               "PyTorch wheels that run here: " + join(yes, ", "), ev,
                               subst(pt.is_object() ? pt.value("install", "") : std::string(), {{"tag", newest}})));
  }
  // TensorFlow
  {
    const json& tf = at(data.frameworks, "tensorflow");
    const auto cudnn = jstr(software_of(in.environment), "cudnn_version");
    const auto [yes, lines, newest] = judge_builds(in, data, at(tf, "builds"), "version", [](const json& b) {
      return "CUDA " + b.value("cuda", "?") + ", cuDNN " + b.value("cudnn", "?");
    });
    std::string ev = join(lines, "; ");
    // The cuDNN that pip brings: the newest the wheel's range allows, which a current cuDNN has
    // made unusable on GPUs below the pin's compute capability (frameworks.json cudnn_pin).
    const json& pin = at(tf, "cudnn_pin");
    const auto pin_below = pin.is_object() ? parse_cc(pin.value("below_cc", "")) : std::nullopt;
    std::vector<std::string> dropped;
    for (const auto& g : gpus_of(in.environment))
      if (g.cc && pin_below && *g.cc < *pin_below) dropped.push_back(g.label());
    ev += std::string(cudnn ? ". The system cuDNN is " + *cudnn : std::string(".")) + (cudnn ? "; " : " ") +
          (tf.is_object() ? tf.value("and_cuda_cudnn", "") : std::string());
    if (!dropped.empty())
      ev += ". " + join(dropped, ", ") + ": below cc " + pin.value("below_cc", "") + ", so the install line pins " +
            arch_pin("cudnn_wheel") + " (" + pin.value("why", "") + "; source: " +
            pin.value("source", "") + ")";
    ev += ". Source: " + (tf.is_object() ? tf.value("source", "") : std::string());
    std::string install = subst(tf.is_object() ? tf.value("install", "") : std::string(), {{"version", newest}});
    if (!dropped.empty()) install += " '" + arch_pin("cudnn_wheel") + "'";
    if (yes.empty())
      out.push_back(make_check("frameworks.tensorflow", std::nullopt, Severity::warn,
                               "no tested TensorFlow build runs on this node", ev,
                               "Update the driver (driver.cuda_runtime), or build TensorFlow from source for this GPU."));
    else
      out.push_back(make_check("frameworks.tensorflow", std::nullopt, Severity::info,
                               "TensorFlow releases whose tested CUDA runs here: " + join(yes, ", "), ev, install));
  }
  return out;
}

}  // namespace nb
