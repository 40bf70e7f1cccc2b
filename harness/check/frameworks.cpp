#include "check/frameworks.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "base/error.hpp"
#include "check/doctor_util.hpp"
#include "check/frameworks_detail.hpp"
#include "node/arch_facts.hpp"

namespace nb {
using namespace doctor_detail;

extern const char* const kFrameworkProbeScript;  // generated from harness/check/framework_probe.py
extern const char* const kFrameworkBenchScript;  // generated from harness/check/framework_bench.py
extern const char* const kFrameworkCommonScript;  // generated from harness/check/framework_common.py

const char* framework_probe_script() { return kFrameworkProbeScript; }
const char* framework_bench_script() { return kFrameworkBenchScript; }
const char* framework_common_script() { return kFrameworkCommonScript; }

const std::vector<std::string>& probed_frameworks() {
  static const std::vector<std::string> v{"torch", "tensorflow", "jax"};
  return v;
}

std::string framework_title(const std::string& m) {
  if (m == "torch") return "PyTorch";
  if (m == "tensorflow") return "TensorFlow";
  if (m == "jax") return "JAX";
  return m;
}

json fatbin_library_json(const std::string& path, const FatbinContents* c, const std::string& error) {
  json j = {{"path", path}};
  if (!c) {
    j["error"] = error;
    return j;
  }
  json sass = json::array(), ptx = json::array();
  for (const auto& a : c->sass) sass.push_back(fatbin_arch_name(a, false));
  for (const auto& a : c->ptx) ptx.push_back(fatbin_arch_name(a, true));
  j["sass"] = sass;
  j["ptx"] = ptx;
  j["containers"] = c->containers;
  j["entries"] = c->entries.size();
  return j;
}

std::vector<ArchEntry> arch_entries_of(const json& lib) {
  std::string list;
  for (const char* k : {"sass", "ptx"})
    if (lib.contains(k) && lib[k].is_array())
      for (const auto& a : lib[k])
        if (a.is_string()) list += (list.empty() ? "" : ",") + a.get<std::string>();
  return parse_arch_list(list);
}

std::vector<std::string> explaining_lines(const std::string& log) {
  static const char* const kPatterns[] = {"Ignoring visible gpu device", "no longer supports this GPU",
                                          "is not compatible with the current PyTorch installation",
                                          "Cannot dlopen some GPU libraries", "Could not load dynamic library",
                                          "driver version is insufficient", "CUDA driver version",
                                          "no kernel image is available", "failed call to cuInit",
                                          "CUDA initialization"};
  std::vector<std::string> out;
  size_t start = 0;
  while (start < log.size() && out.size() < 12) {
    size_t end = log.find('\n', start);
    if (end == std::string::npos) end = log.size();
    const std::string line = log.substr(start, end - start);
    for (const char* p : kPatterns)
      if (line.find(p) != std::string::npos) {
        std::string l = line.size() > 400 ? line.substr(0, 400) + "..." : line;
        if (std::find(out.begin(), out.end(), l) == out.end()) out.push_back(l);
        break;
      }
    start = end + 1;
  }
  return out;
}

namespace frameworks_detail {

std::string tail_lines(const std::string& s, size_t n) {
  size_t pos = s.size();
  for (size_t i = 0; i < n && pos > 0; ++i) {
    pos = s.rfind('\n', pos - 1);
    if (pos == std::string::npos) {
      pos = 0;
      break;
    }
  }
  std::string t = s.substr(pos == 0 ? 0 : pos + 1);
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return t;
}

std::string basename_of(const std::string& p) {
  const size_t s = p.rfind('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

std::string prefix_of(const json& env, bool several) {
  if (!several) return "";
  return "[" + env.value("python", std::string("?")) + "] ";
}

std::string run_text(const json& run) { return run.is_object() ? run.value("description", std::string("not run")) : "not run"; }

std::string joined(const std::vector<std::string>& v, const std::string& sep) { return join(v, sep); }

// The PyTorch wheels of frameworks.json whose code covers `cc` (SASS or PTX), by tag.
std::vector<std::string> torch_tags_for(const RuleData& data, int cc) {
  std::vector<std::string> out;
  const json& wheels = at(at(data.frameworks, "pytorch"), "wheels");
  if (!wheels.is_array()) return out;
  for (const auto& w : wheels)
    if (match_arch(parse_arch_list(w.value("archs", "")), cc).fit != ArchFit::none) out.push_back(w.value("tag", "?"));
  return out;
}

std::vector<std::string> tf_versions_for(const RuleData& data, int cc) {
  std::vector<std::string> out;
  const json& builds = at(at(data.frameworks, "tensorflow"), "builds");
  if (!builds.is_array()) return out;
  for (const auto& b : builds)
    if (match_arch(parse_arch_list(b.value("archs", "")), cc).fit != ArchFit::none) out.push_back(b.value("version", "?"));
  return out;
}

std::optional<CudnnPin> cudnn_pin(const RuleData& data) {
  const json& p = at(at(data.frameworks, "tensorflow"), "cudnn_pin");
  if (!p.is_object()) return std::nullopt;
  const auto cc = parse_cc(p.value("below_cc", ""));
  if (!cc) return std::nullopt;
  // The wheel and version are the architecture facts' (arch_facts.json pins.cudnn_wheel), kept in one place.
  return CudnnPin{*cc, arch_pin("cudnn_wheel"), p.value("why", "")};
}

std::string framework_install_fix(const std::string& mod, const RuleData& data, std::optional<int> cc) {
  if (mod == "torch") {
    if (cc) {
      const auto tags = torch_tags_for(data, *cc);
      if (tags.empty()) return "No published PyTorch wheel carries code for cc " + cc_string(*cc) + "; build PyTorch from source with TORCH_CUDA_ARCH_LIST=" + cc_string(*cc) + ".";
      const std::string tag = tags.back();
      return "Install a PyTorch build that carries cc " + cc_string(*cc) + " (published wheels: " + joined(tags) +
             "): " + subst(at(data.frameworks, "pytorch").value("install", std::string()), {{"tag", tag}});
    }
    return "Install a CUDA build of PyTorch: " + subst(at(data.frameworks, "pytorch").value("install", std::string()), {{"tag", "cu126"}});
  }
  if (mod == "tensorflow") {
    const json& tf = at(data.frameworks, "tensorflow");
    std::string version = "2.21";
    if (cc) {
      const auto v = tf_versions_for(data, *cc);
      if (v.empty()) return "No tested TensorFlow build carries code for cc " + cc_string(*cc) + "; build TensorFlow from source for it.";
      version = v.back();
    }
    std::string line = subst(tf.value("install", std::string()), {{"version", version}});
    const auto pin = cudnn_pin(data);
    if (pin && cc && *cc < pin->below_cc) line += " '" + pin->requirement + "'";
    return "Install a GPU build: " + line;
  }
  return "Install a CUDA build of JAX (jax[cuda12] or jax[cuda13]) whose CUDA libraries carry code for this GPU; check "
         "them with `nodebench fatbin` (CUDA 13 libraries start at cc 7.5).";
}

}  // namespace frameworks_detail

using namespace frameworks_detail;

void check_frameworks_report(const json& r, const std::string& path) {
  if (!r.is_object()) throw Error(path + ": not a JSON object");
  if (r.value("schema", std::string()) != "nodebench.frameworks")
    throw Error(path + ": not a `nodebench frameworks --json` report (schema '" + r.value("schema", std::string()) + "')");
  if (!r.contains("node") || !r["node"].is_object()) throw Error(path + ": 'node' must be an object");
  const json& n = r["node"];
  if (n.contains("gpus") && !n["gpus"].is_array()) throw Error(path + ": 'node.gpus' must be an array");
  if (n.contains("gpus"))
    for (const auto& g : n["gpus"])
      if (!g.is_object() || (g.contains("cc") && !(g["cc"].is_string() && parse_cc(g["cc"].get<std::string>()))))
        throw Error(path + ": 'node.gpus' entries need a 'cc' like \"6.1\"");
  if (!r.contains("environments") || !r["environments"].is_array()) throw Error(path + ": 'environments' must be an array");
  for (const auto& e : r["environments"])
    if (!e.is_object() || (e.contains("frameworks") && !e["frameworks"].is_object()))
      throw Error(path + ": each of 'environments' must be an object with 'frameworks' an object");
  if (r.contains("records")) {
    if (!r["records"].is_array()) throw Error(path + ": 'records' must be an array");
    size_t i = 0;
    for (const auto& rec : r["records"]) {
      const std::string at_i = path + ": records[" + std::to_string(i++) + "]";
      if (!rec.is_object() || !rec.contains("params") || !rec["params"].is_object() || !rec.contains("status") ||
          !rec["status"].is_string())
        throw Error(at_i + " must be an object with 'params' (an object) and 'status' (a string)");
      if (rec.contains("metrics") && (!rec["metrics"].is_object() ||
                                      (rec["metrics"].contains("images_per_s") && !rec["metrics"]["images_per_s"].is_number())))
        throw Error(at_i + ".metrics.images_per_s must be a number");
      if (rec["params"].contains("gpus") && !rec["params"]["gpus"].is_number_integer())
        throw Error(at_i + ".params.gpus must be an integer");
    }
  }
}

std::vector<Check> judge_frameworks(const json& report, const RuleData& data) {
  std::vector<Check> out;
  const json& node = at(report, "node");
  std::vector<NodeGpu> gpus;
  if (node.is_object() && node.contains("gpus") && node["gpus"].is_array())
    for (const auto& g : node["gpus"]) {
      NodeGpu v;
      v.index = g.value("index", int(gpus.size()));
      v.name = g.value("name", std::string("GPU"));
      if (g.contains("cc") && g["cc"].is_string()) v.cc = parse_cc(g["cc"].get<std::string>());
      gpus.push_back(v);
    }
  if (gpus.empty() && node.value("source", std::string()) != "for-cc")
    out.push_back(make_check("framework.node", std::nullopt, Severity::info,
                             "no GPU known here: the builds are judged, not their code for a GPU",
                             "NVML lists no GPU" + (node.contains("nvml_error") && node["nvml_error"].is_string()
                                                        ? " (" + node["nvml_error"].get<std::string>() + ")"
                                                        : std::string()),
                             "To vet this environment for a GPU that is not here: --for-cc CC (e.g. --for-cc 6.1 for a P40)."));
  const json& envs = at(report, "environments");
  if (!envs.is_array() || envs.empty()) {
    out.push_back(make_check("framework.python", std::nullopt, Severity::warn, "no Python environment to probe",
                             "No python3 on PATH, no active virtual or conda environment, and no --python given.",
                             "Name the interpreter the training uses: nodebench frameworks --python /path/to/venv/bin/python"));
    return out;
  }
  const bool several = envs.size() > 1;
  for (const auto& env : envs) {
    const std::string pre = prefix_of(env, several);
    const json& probe = at(env, "probe");
    const json& run = at(env, "run");
    const std::string py = env.value("python", std::string("?"));
    if (!probe.is_object() || !probe.contains("python")) {
      out.push_back(make_check("framework.python", std::nullopt, Severity::fail,
                               pre + "the Python at " + py + " could not be probed: " + run_text(run),
                               "Last output: " + tail_lines(run.is_object() ? run.value("log", std::string()) : "", 8),
                               "Check that " + py + " runs (" + py + " -c 'import sys; print(sys.version)')."));
      continue;
    }
    const json& p = probe["python"];
    std::vector<std::string> have;
    const json& fws = at(probe, "frameworks");
    for (const auto& m : probed_frameworks())
      if (fws.is_object() && fws.contains(m)) have.push_back(framework_title(m));
    std::string where = p.value("executable", py) + ", Python " + p.value("version", std::string("?"));
    if (p.contains("prefix") && p.contains("base_prefix") && p["prefix"] != p["base_prefix"])
      where += ", virtual environment " + p.value("prefix", std::string());
    else if (p.contains("conda_prefix") && p["conda_prefix"].is_string())
      where += ", conda " + p.value("conda_prefix", std::string());
    std::string wheels;
    if (probe.contains("nvidia_wheels") && probe["nvidia_wheels"].is_object())
      for (const auto& [k, v] : probe["nvidia_wheels"].items())
        wheels += (wheels.empty() ? "" : ", ") + k + " " + (v.is_string() ? v.get<std::string>() : v.dump());
    out.push_back(make_check("framework.python", std::nullopt, have.empty() ? Severity::info : Severity::ok,
                             pre + where + ": " + (have.empty() ? "no PyTorch, TensorFlow or JAX installed" : joined(have) + " installed"),
                             "found by " + env.value("found_by", std::string("?")) + "; nvidia-* wheels: " +
                                 (wheels.empty() ? "none" : wheels)));
    const json& fw_runs = at(env, "frameworks");
    for (const auto& m : probed_frameworks())
      if (fw_runs.is_object() && fw_runs.contains(m))
        judge_framework(env, m, fw_runs[m], gpus, node, pre, data, out);
  }
  judge_bench(report, gpus, data, out);
  return out;
}

}  // namespace nb
