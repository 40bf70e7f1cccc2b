// One framework of one Python environment judged (`nodebench frameworks`, docs/FRAMEWORKS.md): its
// import, build, the code it and the CUDA libraries it loads carry for each GPU, the GPUs it sees,
// the operations and the all-reduce run on them.
#include <algorithm>
#include <cctype>
#include <map>

#include "check/frameworks.hpp"
#include "check/frameworks_detail.hpp"

namespace nb::frameworks_detail {
using namespace doctor_detail;

namespace {

// Libraries whose code a framework's convolutions, matrix products and collectives need: without
// code for the GPU they fail; the others (sparse kernels, profiling) only limit some operations.
bool core_library(const std::string& base) {
  for (const char* p : {"libcudnn_ops", "libcudnn_cnn", "libcudnn_adv", "libcudnn.so.8", "libcudnn_ops_infer",
                        "libcudnn_ops_train", "libcudnn_cnn_infer", "libcudnn_cnn_train", "libcudnn_adv_infer",
                        "libcudnn_adv_train", "libcublas.so", "libcublasLt", "libnccl", "libtorch_cuda",
                        "libtensorflow_cc", "libtensorflow_framework", "_pywrap_tensorflow_internal", "libjax"})
    if (base.rfind(p, 0) == 0) return true;
  return false;
}

// The verdict for the libraries one framework loads or ships, on one GPU.
Check judge_libraries(const std::string& id, const std::string& pre, const std::string& title, const std::string& mod,
                      const json& libs, const NodeGpu& g, const RuleData& data) {
  const int cc = *g.cc;
  struct Lack {
    std::string wheel;  // "nvidia-cudnn-cu12==9.28.0.42" or "" (not from a wheel)
    std::vector<std::string> names;
    bool core = false;
  };
  std::map<std::string, Lack> lacking;  // by wheel
  std::vector<std::string> jit, fine;
  int judged = 0;
  for (const auto& lib : libs) {
    if (!lib.is_object() || lib.contains("error")) continue;
    const std::vector<ArchEntry> archs = arch_entries_of(lib);
    if (archs.empty()) continue;
    ++judged;
    const std::string path = lib.value("path", std::string("?"));
    const std::string base = basename_of(path);
    const ArchMatch m = match_arch(archs, cc);
    const std::string wheel = lib.value("wheel", std::string());
    if (m.fit == ArchFit::none) {
      Lack& l = lacking[wheel];
      l.wheel = wheel;
      l.names.push_back(base + " (" + describe_archs(archs) + ")");
      l.core = l.core || core_library(base);
    } else if (m.fit == ArchFit::jit) {
      jit.push_back(base + " by JIT of compute_" + std::to_string(m.via));
    } else {
      fine.push_back(base);
    }
  }
  const std::string sm = "sm_" + std::to_string(cc);
  if (judged == 0)
    return make_check(id, g.index, Severity::info, pre + title + ": no CUDA library with device code found to judge for " + g.label(),
                      "Read the fatbin headers of the libraries the framework loads or ships; none held device code.");
  if (lacking.empty()) {
    std::string ev = std::to_string(judged) + " libraries with device code, each with code for cc " + cc_string(cc) + ": " + joined(fine);
    if (!jit.empty()) ev += "; by PTX JIT (slow first start, needs a driver for the library's CUDA): " + joined(jit);
    return make_check(id, g.index, jit.empty() ? Severity::ok : Severity::info,
                      pre + title + ": every CUDA library it loads or ships carries code for " + g.label(), ev);
  }
  std::vector<std::string> parts, fixes;
  bool core = false;
  const auto pin = cudnn_pin(data);
  for (const auto& [wheel, l] : lacking) {
    std::string who = wheel.empty() ? title : wheel;
    if (const size_t eq = who.find("=="); eq != std::string::npos) who = who.substr(0, eq) + " " + who.substr(eq + 2);
    parts.push_back(who + " has no " + sm + " code in " + joined(l.names));
    core = core || l.core;
    const std::string dist = wheel.substr(0, wheel.find("=="));
    const bool cu12 = dist.size() > 5 && dist.compare(dist.size() - 5, 5, "-cu12") == 0;
    if (pin && cc < pin->below_cc && dist == pin->requirement.substr(0, pin->requirement.find("==")))
      fixes.push_back("pin " + pin->requirement + " (" + pin->why + ")");
    else if (cu12 && (dist.rfind("nvidia-cudnn-", 0) == 0 || dist.rfind("nvidia-nccl-", 0) == 0 || dist.rfind("nvidia-cublas-", 0) == 0))
      fixes.push_back("install a version of " + dist + " that carries " + sm + " (read its libraries with `nodebench fatbin`)");
  }
  if (fixes.empty()) fixes.push_back(framework_install_fix(mod, data, cc));
  std::string ev = joined(parts, "; ");
  if (!fine.empty()) ev += ". With code for cc " + cc_string(cc) + ": " + joined(fine);
  ev += ". Rule: a GPU runs SASS of its major with minor <= its own, or JIT-compiles PTX of an architecture <= its own.";
  std::string fix = joined(fixes, "; ");
  if (!fix.empty()) fix[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(fix[0])));
  return make_check(id, g.index, core ? Severity::fail : Severity::warn,
                    pre + joined(parts, "; ") + (core ? "" : " (not one its core operations need)") + ": " + g.label() +
                        (core ? " cannot run its " + title + " operations" : ""),
                    ev, fix + ".");
}
}  // namespace

void judge_framework(const json& env, const std::string& mod, const json& fw, const std::vector<NodeGpu>& gpus,
                     const json& node, const std::string& pre, const RuleData& data, std::vector<Check>& out) {
  const std::string title = framework_title(mod);
  const std::string idp = "framework." + mod + ".";
  const json& probe = at(fw, "probe");
  const json& run = at(fw, "run");
  const std::string log = run.is_object() ? run.value("log", std::string()) : std::string();
  const bool for_cc = node.value("source", std::string()) == "for-cc";
  // Import
  const bool imported = probe.is_object() && probe.contains("version");
  if (!imported) {
    std::string why;
    if (run.is_object() && run.value("timed_out", false))
      why = "importing " + mod + " did not finish within " + fmt(run.value("timeout_s", run.value("seconds", 0.0)), 0) + " s (hung)";
    else if (probe.is_object() && probe.contains("error"))
      why = "import " + mod + " failed: " + probe.value("error", std::string());
    else
      why = "the probe " + run_text(run) + " before " + mod + " was imported";
    out.push_back(make_check(idp + "import", std::nullopt, Severity::fail, pre + title + ": " + why,
                             "Probe " + run_text(run) + ". Last output: " + tail_lines(log, 8),
                             "Run `" + env.value("python", std::string("python3")) + " -c 'import " + mod +
                                 "'` to see the error; reinstall the package in this environment."));
    return;
  }
  const std::string name = title + " " + probe.value("version", std::string("?"));
  {
    std::string ev = "import in " + fmt(probe.value("import_s", 0.0), 1) + " s from " + probe.value("location", std::string("?"));
    Severity sev = Severity::ok;
    std::string summary = pre + name + " imports";
    if (probe.contains("error")) {  // imported, then the probe failed outside an operation
      sev = Severity::fail;
      summary += ", then the probe failed: " + probe.value("error", std::string());
      ev += ". " + tail_lines(log, 8);
    } else if (run.is_object() && run.value("timed_out", false)) {
      sev = Severity::fail;
      summary += ", then the probe did not finish within " + fmt(run.value("timeout_s", run.value("seconds", 0.0)), 0) + " s";
    }
    out.push_back(make_check(idp + "import", std::nullopt, sev, summary, ev));
  }
  // Build
  const json& built = at(probe, "built");
  const auto bstr = [&](const char* k) -> std::string {
    if (!built.is_object() || !built.contains(k) || built[k].is_null()) return "";
    return built[k].is_string() ? built[k].get<std::string>() : built[k].dump();
  };
  const bool cuda_build = probe.value("cuda_build", false);
  const std::vector<std::string> explain = explaining_lines(log);
  std::vector<std::string> loaded;
  const json& libs = at(fw, "libraries");
  if (libs.is_array())
    for (const auto& l : libs)
      if (l.is_object() && l.value("loaded", false))
        loaded.push_back(basename_of(l.value("path", std::string())) +
                         (l.contains("wheel") ? " (" + l.value("wheel", std::string()) + ")" : std::string()));
  if (!cuda_build) {
    const bool gpus_here = !gpus.empty();
    out.push_back(make_check(idp + "build", std::nullopt, gpus_here ? Severity::fail : Severity::warn,
                             pre + name + " is a CPU-only build: it uses no GPU",
                             std::string("built with CUDA: no") + (bstr("hip").empty() ? "" : " (ROCm " + bstr("hip") + ")"),
                             framework_install_fix(mod, data, gpus_here ? gpus.front().cc : std::nullopt)));
    return;
  }
  {
    std::string ev = "built with CUDA " + (bstr("cuda").empty() ? "?" : bstr("cuda"));
    if (!bstr("cudnn").empty()) ev += ", cuDNN " + bstr("cudnn");
    if (!bstr("nccl").empty()) ev += ", NCCL " + bstr("nccl");
    ev += "; loaded: " + (loaded.empty() ? std::string("none recorded") : joined(loaded));
    Severity sev = Severity::ok;
    std::string summary = pre + name + ": CUDA build (CUDA " + (bstr("cuda").empty() ? "?" : bstr("cuda")) + ")";
    std::string fix;
    const std::vector<int> bcuda = parse_version(bstr("cuda"));
    const std::vector<int> dcuda = parse_version(node.value("cuda_driver_version", std::string()));
    if (!bcuda.empty() && !dcuda.empty() && dcuda[0] < bcuda[0]) {
      sev = Severity::fail;
      summary = pre + name + " needs a driver for CUDA " + bstr("cuda") + "; this driver supports CUDA " +
                node.value("cuda_driver_version", std::string());
      fix = "Update the driver (doctor's driver.cuda_runtime), or install a build of " + title + " for CUDA " +
            std::to_string(dcuda[0]) + ".x.";
    }
    out.push_back(make_check(idp + "build", std::nullopt, sev, summary, ev, fix));
  }
  // Architectures of the framework's own code, per GPU
  std::string arch_text;
  if (probe.contains("arch_list") && probe["arch_list"].is_array())
    for (const auto& a : probe["arch_list"])
      if (a.is_string()) arch_text += (arch_text.empty() ? "" : ",") + a.get<std::string>();
  const std::vector<ArchEntry> archs = parse_arch_list(arch_text);
  for (const auto& g : gpus) {
    if (!g.cc) continue;
    if (archs.empty()) {
      if (mod != "jax")
        out.push_back(make_check(idp + "archs", g.index, Severity::info, pre + name + ": its architecture list is not known",
                                 "The probe read no arch list from the build."));
      continue;
    }
    const ArchMatch m = match_arch(archs, *g.cc);
    const std::string ev = "its own code: " + describe_archs(archs) + " (" + arch_text + ")";
    if (m.fit == ArchFit::none)
      out.push_back(make_check(idp + "archs", g.index, Severity::fail,
                               pre + name + " carries no code for cc " + cc_string(*g.cc) + ": " + g.label() +
                                   " fails with 'no kernel image is available'",
                               ev, framework_install_fix(mod, data, g.cc)));
    else if (m.fit == ArchFit::jit)
      out.push_back(make_check(idp + "archs", g.index, Severity::info,
                               pre + name + " runs on " + g.label() + " by JIT of compute_" + std::to_string(m.via) +
                                   " PTX (slow first start)",
                               ev));
    else
      out.push_back(make_check(idp + "archs", g.index, Severity::ok,
                               pre + name + " carries sm_" + std::to_string(m.via) + " code for " + g.label(), ev));
  }
  // The CUDA libraries it loads or ships, per GPU
  std::string library_fix;  // of a failed library verdict, for the operations that fail because of it
  if (libs.is_array())
    for (const auto& g : gpus)
      if (g.cc) {
        out.push_back(judge_libraries(idp + "libraries", pre, name, mod, libs, g, data));
        if (out.back().severity == Severity::fail && library_fix.empty()) library_fix = out.back().fix;
      }
  // GPUs seen against NVML's
  const int seen = probe.value("device_count", 0);
  if (!for_cc && node.contains("nvml_gpus") && node["nvml_gpus"].is_number_integer()) {
    const int nvml = node["nvml_gpus"].get<int>();
    std::string cvd;
    bool cvd_set = false;
    // As the framework's process saw it; a report without it: as nodebench saw it.
    if (probe.contains("cuda_visible_devices")) {
      cvd_set = probe["cuda_visible_devices"].is_string();
      if (cvd_set) cvd = probe["cuda_visible_devices"].get<std::string>();
    } else if (node.contains("cuda_visible_devices") && node["cuda_visible_devices"].is_string()) {
      cvd = node["cuda_visible_devices"].get<std::string>();
      cvd_set = true;
    }
    std::string ev = title + " sees " + std::to_string(seen) + ", NVML " + std::to_string(nvml) + "; CUDA_VISIBLE_DEVICES " +
                     (cvd_set ? "'" + cvd + "'" : std::string("unset"));
    if (probe.contains("cuda_error")) ev += "; " + probe.value("cuda_error", std::string());
    if (!explain.empty()) ev += "; the framework said: " + joined(explain, " | ");
    if (seen >= nvml) {
      out.push_back(make_check(idp + "devices", std::nullopt, Severity::ok,
                               pre + name + " sees " + std::to_string(seen) + " of " + std::to_string(nvml) + " GPUs", ev));
    } else {
      std::vector<std::string> why, fixes;
      if (cvd_set) {
        why.push_back("CUDA_VISIBLE_DEVICES=" + cvd + " is set");
        fixes.push_back("unset CUDA_VISIBLE_DEVICES (or list every GPU) where the training starts");
      }
      for (const auto& l : explain)
        if (l.find("Ignoring visible gpu device") != std::string::npos) {
          const size_t p = l.find("The minimum required");
          why.push_back("TensorFlow ignores a GPU below its build's minimum compute capability" +
                        (p == std::string::npos ? std::string() : " (" + l.substr(p) + ")"));
          fixes.push_back(framework_install_fix(mod, data, gpus.empty() ? std::nullopt : gpus.front().cc));
          break;
        }
      for (const auto& l : explain)
        if (l.find("no longer supports") != std::string::npos || l.find("not compatible with the current PyTorch") != std::string::npos) {
          why.push_back("PyTorch says the GPU is too old for this build");
          fixes.push_back(framework_install_fix(mod, data, gpus.empty() ? std::nullopt : gpus.front().cc));
          break;
        }
      for (const auto& l : explain)
        if (l.find("driver version is insufficient") != std::string::npos || l.find("CUDA driver version") != std::string::npos) {
          why.push_back("the driver is older than the framework's CUDA");
          fixes.push_back("update the driver (doctor's driver.cuda_runtime)");
          break;
        }
      for (const auto& l : explain)
        if (l.find("dlopen") != std::string::npos || l.find("Could not load dynamic library") != std::string::npos) {
          why.push_back("a CUDA library failed to load");
          fixes.push_back("install the framework's CUDA libraries (for TensorFlow: the [and-cuda] extra)");
          break;
        }
      if (why.empty() && probe.contains("cuda_error")) why.push_back(probe.value("cuda_error", std::string()));
      if (why.empty()) why.push_back("the framework gave no reason (see the evidence)");
      const Severity sev = (seen > 0 && cvd_set && why.size() == 1) ? Severity::warn : Severity::fail;
      std::string fix = joined(fixes, "; ");
      if (!fix.empty()) fix[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(fix[0])));
      out.push_back(make_check(idp + "devices", std::nullopt, sev,
                               pre + name + " sees " + std::to_string(seen) + " of " + std::to_string(nvml) + " GPUs: " +
                                   joined(why, "; "),
                               ev, fix.empty() ? fix : fix + "."));
    }
  }
  // Live operations on each GPU it sees
  const json& live = at(probe, "live");
  if (live.is_array()) {
    std::map<int, std::vector<const json*>> per_gpu;
    const json* allreduce = nullptr;
    for (const auto& e : live) {
      if (!e.is_object()) continue;
      if (e.value("op", std::string()) == "allreduce") allreduce = &e;
      else if (e.contains("gpu") && e["gpu"].is_number_integer()) per_gpu[e["gpu"].get<int>()].push_back(&e);
    }
    for (const auto& [gi, ops] : per_gpu) {
      std::vector<std::string> done, failed;
      bool no_image = false, conv = false;
      for (const json* e : ops) {
        const std::string op = e->value("op", std::string("?"));
        conv = conv || op == "conv_bn";
        if (e->value("ok", false)) {
          done.push_back(op + " " + fmt(e->value("ms", 0.0), 1) + " ms");
        } else {
          const std::string err = e->value("error", std::string("failed"));
          no_image = no_image || err.find("no kernel image") != std::string::npos ||
                     err.find("CUDNN_STATUS_ARCH_MISMATCH") != std::string::npos ||
                     err.find("not supported on this GPU") != std::string::npos;
          failed.push_back(op + ": " + err);
        }
      }
      std::string dev_name;
      if (probe.contains("devices") && probe["devices"].is_array())
        for (const auto& d : probe["devices"])
          if (d.is_object() && d.value("index", -1) == gi)
            dev_name = " (" + d.value("name", std::string("?")) + (d.contains("cc") && d["cc"].is_string() ? ", cc " + d["cc"].get<std::string>() : std::string()) + ")";
      const std::string where = title + "'s GPU " + std::to_string(gi) + dev_name;
      if (failed.empty())
        out.push_back(make_check(idp + "ops", gi, Severity::ok,
                                 pre + name + (conv ? ": a matmul and a convolution with batch norm run on " : ": a matmul runs on ") +
                                     where,
                                 joined(done)));
      else
        out.push_back(make_check(idp + "ops", gi, Severity::fail, pre + name + ": operations fail on " + where + ": " + failed.front(),
                                 joined(failed, "; ") + (done.empty() ? "" : "; ran: " + joined(done)),
                                 !library_fix.empty()
                                     ? "A library it loads carries no code for this GPU (see " + idp + "libraries): " + library_fix
                                 : no_image ? "The build carries no code for this GPU (see " + idp + "archs): " +
                                                  framework_install_fix(mod, data, std::nullopt)
                                            : "Run the operation by hand in this environment to see the whole error."));
    }
    if (allreduce) {
      const bool ok = allreduce->value("ok", false);
      out.push_back(make_check(idp + "allreduce", std::nullopt, ok ? Severity::ok : Severity::fail,
                               pre + name + (ok ? ": an all-reduce over " : ": the all-reduce fails over ") + std::to_string(seen) +
                                   " GPUs through " + (mod == "torch" ? "torch.distributed (NCCL)" : "tf.distribute.MirroredStrategy") +
                                   (ok ? " gives the right sum" : ": " + allreduce->value("error", std::string("failed"))),
                               allreduce->dump(),
                               ok ? "" : "Check NCCL between the GPUs (nodebench run --family nccl; doctor's p2p checks)."));
    } else if (seen >= 2 && !for_cc && mod != "jax") {
      out.push_back(make_check(idp + "allreduce", std::nullopt, Severity::info, pre + name + ": the all-reduce was not run",
                               "The live part did not reach it (see the other checks)."));
    }
  }
}

}  // namespace nb::frameworks_detail
