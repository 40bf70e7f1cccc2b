// `nodebench frameworks`: probes the Python environments (check/framework_probe.py, one process
// per question under a time limit), reads the fatbin headers of the CUDA libraries each framework
// loads or ships, and judges them (check/frameworks.hpp) on this node's GPUs or --for-cc.
#include "app/commands.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "base/error.hpp"
#include "base/exit_codes.hpp"
#include "base/fatbin.hpp"
#include "base/files.hpp"
#include "base/json_fields.hpp"
#include "base/json_file.hpp"
#include "base/prometheus.hpp"
#include "app/frameworks_bench_run.hpp"
#include "base/subprocess.hpp"
#include "build_info.hpp"
#include "check/frameworks.hpp"
#include "check/validate.hpp"
#include "node/nvml.hpp"

namespace nb {
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

bool executable_file(const std::string& p) {
  struct stat st{};
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(p.c_str(), X_OK) == 0;
}

std::string on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (!path) return "";
  std::string s = path;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(':', start);
    if (end == std::string::npos) end = s.size();
    const std::string dir = s.substr(start, end - start);
    if (!dir.empty() && executable_file(dir + "/" + name)) return dir + "/" + name;
    start = end + 1;
  }
  return "";
}

// The interpreters to probe, each with how it was found.
std::vector<std::pair<std::string, std::string>> interpreters(const FrameworksOptions& o) {
  std::vector<std::pair<std::string, std::string>> out;
  auto add = [&](const std::string& p, const std::string& why) {
    if (p.empty()) return;
    for (const auto& [q, w] : out)
      if (q == p) return;
    out.emplace_back(p, why);
  };
  if (!o.pythons.empty()) {
    for (const auto& p : o.pythons) {
      if (!executable_file(p)) throw Error("--python: '" + p + "' is not an executable file");
      add(p, "--python");
    }
    return out;
  }
  if (const char* v = std::getenv("VIRTUAL_ENV"); v && *v && executable_file(std::string(v) + "/bin/python"))
    add(std::string(v) + "/bin/python", "VIRTUAL_ENV");
  if (const char* c = std::getenv("CONDA_PREFIX"); c && *c && executable_file(std::string(c) + "/bin/python"))
    add(std::string(c) + "/bin/python", "CONDA_PREFIX");
  add(on_path("python3"), "python3 on PATH");
  return out;
}

json node_facts(const FrameworksOptions& o) {
  json node = {{"gpus", json::array()}};
  if (const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES")) node["cuda_visible_devices"] = cvd;
  else node["cuda_visible_devices"] = nullptr;
  if (!o.for_cc.empty()) {
    node["source"] = "for-cc";
    node["nvml_gpus"] = nullptr;
    for (size_t i = 0; i < o.for_cc.size(); ++i)
      node["gpus"].push_back({{"index", int(i)}, {"cc", cc_string(*parse_cc(o.for_cc[i]))}, {"name", "named by --for-cc"}});
    return node;
  }
  node["source"] = "nvml";
  Nvml nvml;
  if (!nvml.available()) {
    node["nvml_gpus"] = nullptr;
    node["nvml_error"] = nvml.error();
    return node;
  }
  const unsigned n = nvml.device_count().value_or(0);
  node["nvml_gpus"] = n;
  if (auto d = nvml.driver_version()) node["driver_version"] = *d;
  if (auto c = nvml.cuda_driver_version()) node["cuda_driver_version"] = std::to_string(*c / 1000) + "." + std::to_string((*c % 1000) / 10);
  for (unsigned i = 0; i < n; ++i) {
    json g = {{"index", int(i)}, {"name", nvml.name(int(i)).value_or("GPU")}};
    if (auto cc = nvml.compute_capability(int(i))) g["cc"] = cc_string(*cc);
    node["gpus"].push_back(g);
  }
  return node;
}

// A private folder for the probe script and its answers, removed at the end.
struct ProbeDir {
  std::string dir, script;
  ProbeDir() {
    std::string tmpl = (fs::temp_directory_path() / "nodebench-frameworks-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw Error("cannot make a temporary folder under " + fs::temp_directory_path().string());
    dir = tmpl;
    script = dir + "/nodebench_framework_probe.py";
    std::ofstream(script) << framework_probe_script();
    std::ofstream(dir + "/" + kFrameworkCommonFile) << framework_common_script();  // the probe and bench import it
  }
  ~ProbeDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

// Runs one probe step; its answer (what it wrote, also when it failed half-way) and its run.
std::pair<json, json> probe(const std::string& python, const ProbeDir& d, const std::string& mode,
                            const std::vector<std::string>& flags, double timeout_s) {
  const std::string out = d.dir + "/" + mode + ".json";
  std::error_code ec;
  fs::remove(out, ec);
  std::vector<std::string> argv{python, d.script, mode, out};
  argv.insert(argv.end(), flags.begin(), flags.end());
  const SubprocessResult r = run_subprocess(argv, timeout_s, {"PYTHONUNBUFFERED=1", "PYTHONDONTWRITEBYTECODE=1"});
  json answer = nullptr;
  std::ifstream f(out);
  if (f) {
    try {
      answer = json::parse(f);
    } catch (const json::exception&) {
      answer = nullptr;
    }
  }
  return {answer, subprocess_run_json(r, timeout_s)};
}

// Libraries judged: cuDNN, cuBLAS, NCCL and the frameworks' own CUDA libraries.
bool judged_library(const std::string& base) {
  for (const char* p : {"libcudnn", "libcublas", "libnccl", "libtorch_cuda", "libc10_cuda", "libtensorflow",
                        "_pywrap_tensorflow", "xla_cuda_plugin", "libjax"})
    if (base.rfind(p, 0) == 0) return true;
  return false;
}

std::string real(const std::string& p) {
  std::error_code ec;
  const fs::path r = fs::canonical(p, ec);
  return ec ? p : r.string();
}

json libraries_of(const json& env_probe, const json& fw_probe, std::map<std::string, json>& cache) {
  std::map<std::string, json> libs;  // by real path
  const std::string loc = fw_probe.is_object() ? fw_probe.value("location", std::string()) : std::string();
  std::set<std::string> loaded;
  if (fw_probe.is_object() && fw_probe.contains("loaded_libraries") && fw_probe["loaded_libraries"].is_array())
    for (const auto& p : fw_probe["loaded_libraries"])
      if (p.is_string()) loaded.insert(real(p.get<std::string>()));
  std::map<std::string, std::string> wheel_of;
  if (env_probe.is_object() && env_probe.contains("wheel_libraries") && env_probe["wheel_libraries"].is_object())
    for (const auto& [p, w] : env_probe["wheel_libraries"].items())
      if (w.is_string()) wheel_of[real(p)] = w.get<std::string>();
  std::vector<std::string> paths(loaded.begin(), loaded.end());
  if (fw_probe.is_object() && fw_probe.contains("shipped_libraries") && fw_probe["shipped_libraries"].is_array())
    for (const auto& p : fw_probe["shipped_libraries"])
      if (p.is_string()) paths.push_back(real(p.get<std::string>()));
  for (const auto& [p, w] : wheel_of) {
    std::string lw = w;
    for (char& ch : lw) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (lw.rfind("nvidia-", 0) == 0 || (!loc.empty() && p.rfind(real(loc), 0) == 0)) paths.push_back(p);
  }
  for (const auto& p : paths) {
    const std::string base = fs::path(p).filename().string();
    if (!judged_library(base) || libs.count(p)) continue;
    auto it = cache.find(p);
    if (it == cache.end()) {
      try {
        const FatbinContents c = read_fatbin(p);
        it = cache.emplace(p, fatbin_library_json(p, &c, "")).first;
      } catch (const Error& e) {
        it = cache.emplace(p, fatbin_library_json(p, nullptr, e.what())).first;
      }
    }
    json j = it->second;
    j["loaded"] = loaded.count(p) > 0;
    if (auto w = wheel_of.find(p); w != wheel_of.end()) j["wheel"] = w->second;
    libs[p] = j;
  }
  json arr = json::array();
  for (auto& [p, j] : libs) arr.push_back(j);
  return arr;
}

json gather(const FrameworksOptions& o) {
  json report = {{"schema", "nodebench.frameworks"},
                 {"schema_version", kReadableSchemaVersion},
                 {"nodebench", std::string(NODEBENCH_VERSION) + " (" + NODEBENCH_GIT_COMMIT + ")"},
                 {"created", iso_utc(std::chrono::system_clock::now())}};
  const auto pys = interpreters(o);  // throws on a bad --python
  report["node"] = node_facts(o);
  report["environments"] = json::array();
  if (o.bench) report["records"] = json::array();
  if (pys.empty()) return report;
  ProbeDir dir;
  const bool live = o.for_cc.empty();
  std::set<std::string> prefixes;
  std::map<std::string, json> cache;
  for (const auto& [py, why] : pys) {
    std::cerr << "nodebench frameworks: probing " << py << " (" << why << ")" << std::endl;
    json env = {{"python", py}, {"found_by", why}};
    auto [answer, run] = probe(py, dir, "env", {}, std::min(o.timeout_s, 120.0));
    env["probe"] = answer;
    env["run"] = run;
    env["frameworks"] = json::object();
    if (answer.is_object() && answer.contains("python")) {
      const std::string key = answer["python"].value("prefix", std::string()) + "|" + answer["python"].value("executable", std::string());
      if (o.pythons.empty() && !prefixes.insert(key).second) continue;  // the same environment found twice
      const json& fws = jf::at(answer, "frameworks");
      for (const auto& m : probed_frameworks()) {
        if (!fws.is_object() || !fws.contains(m)) continue;
        std::cerr << "nodebench frameworks:   " << framework_title(m) << "..." << std::endl;
        std::vector<std::string> flags;
        if (live) flags = {"--live", "--allreduce"};
        auto [fa, fr] = probe(py, dir, m, flags, o.timeout_s);
        json fw = {{"probe", fa}, {"run", fr}};
        fw["libraries"] = libraries_of(answer, fa, cache);
        env["frameworks"][m] = fw;
        if (o.bench)
          for (auto& rec : bench_framework(py, dir.dir, m, fa, o)) report["records"].push_back(std::move(rec));
      }
    }
    report["environments"].push_back(env);
  }
  return report;
}

std::string junit_of(const std::vector<Check>& checks, const std::string& stamp) {
  const CheckCounts n = count_checks(checks);
  std::ostringstream os;
  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"nodebench frameworks\" tests=\"" << checks.size()
     << "\" failures=\"" << n.fail << "\">\n  <testsuite name=\"frameworks\" tests=\"" << checks.size() << "\" failures=\""
     << n.fail << "\" errors=\"0\" skipped=\"0\" timestamp=\"" << stamp << "\">\n";
  for (const auto& c : checks) {
    os << "    <testcase classname=\"frameworks\" name=\"" << xml_escape(c.id + (c.gpu ? " gpu" + c.gpu_label() : "")) << "\">\n";
    if (c.severity == Severity::fail)
      os << "      <failure message=\"" << xml_escape(c.summary) << "\">" << xml_escape(c.evidence + (c.fix.empty() ? "" : "\nFix: " + c.fix))
         << "</failure>\n";
    os << "      <system-out>" << xml_escape(to_string(c.severity) + ": " + c.summary) << "</system-out>\n    </testcase>\n";
  }
  os << "  </testsuite>\n</testsuites>\n";
  return os.str();
}

std::string prometheus_of(const std::vector<Check>& checks, const json& records) {
  std::ostringstream os;
  const CheckCounts n = count_checks(checks);
  os << "# HELP nodebench_frameworks_pass 1 when no framework check failed, else 0.\n# TYPE nodebench_frameworks_pass gauge\n"
     << "nodebench_frameworks_pass " << (n.fail ? 0 : 1) << "\n"
     << "# HELP nodebench_frameworks_check_severity Worst result per check: 0 ok, 1 info, 2 warn, 3 fail.\n"
     << "# TYPE nodebench_frameworks_check_severity gauge\n";
  std::map<std::pair<std::string, std::string>, int> worst;
  for (const auto& c : checks) {
    int& w = worst[{c.id, c.gpu_label()}];
    w = std::max(w, int(c.severity));
  }
  for (const auto& [k, v] : worst)
    os << "nodebench_frameworks_check_severity{check=\"" << prometheus_label_escape(k.first) << "\",gpu=\""
       << prometheus_label_escape(k.second) << "\"} " << v << "\n";
  bool head = false;
  if (records.is_array())
    for (const auto& r : records) {
      if (!r.is_object() || r.value("status", std::string()) != "ok") continue;
      const json& p = r["params"];
      if (!head)
        os << "# HELP nodebench_frameworks_bench_images_per_second Synthetic ResNet-50 training rate of a framework (--bench).\n"
           << "# TYPE nodebench_frameworks_bench_images_per_second gauge\n";
      head = true;
      os << "nodebench_frameworks_bench_images_per_second{framework=\"" << prometheus_label_escape(r.value("framework", std::string()))
         << "\",mode=\"" << prometheus_label_escape(r.value("mode", std::string())) << "\",gpus=\"" << p.value("gpus", 0)
         << "\",batch=\"" << p.value("batch", 0) << "\",python=\"" << prometheus_label_escape(r.value("python", std::string()))
         << "\"} " << r["metrics"].value("images_per_s", 0.0) << "\n";
    }
  return os.str();
}

}  // namespace

int cmd_frameworks(const FrameworksCommand& c) {
  const FrameworksOptions& o = c.options;
  json report;
  try {
    if (!o.from.empty()) {
      report = read_json_file(o.from);
      check_schema_version(report, o.from);
      check_frameworks_report(report, o.from);
    } else {
      report = gather(o);
    }
  } catch (const Error& e) {
    std::cerr << "nodebench frameworks: " << e.what() << "\n";
    return kExitUsage;
  }
  std::vector<Check> checks;
  try {
    checks = judge_frameworks(report);
  } catch (const json::exception& e) {
    std::cerr << "nodebench frameworks: " << (o.from.empty() ? std::string("the probe's answer") : o.from)
              << ": a field has the wrong type (" << e.what() << ")\n";
    return kExitUsage;
  }
  json cj = json::array();
  for (const auto& ch : checks) cj.push_back(ch.to_json());
  report["checks"] = cj;
  const CheckCounts n = count_checks(checks);
  report["verdict"] = n.fail ? "fail" : "pass";
  if (o.json) {
    std::cout << report.dump(2) << "\n";
  } else {
    const json& node = report["node"];
    const bool for_cc = node.value("source", std::string()) == "for-cc";
    std::string gpus;
    if (node.contains("gpus") && node["gpus"].is_array())
      for (const auto& g : node["gpus"])
        gpus += std::string(gpus.empty() ? "" : ", ") + (for_cc ? std::string() : g.value("name", std::string("GPU")) + " ") +
                "cc " + g.value("cc", std::string("?"));
    if (gpus.empty() && node.contains("nvml_error") && node["nvml_error"].is_string())
      gpus = "none (" + node["nvml_error"].get<std::string>() + ")";
    std::cout << "nodebench frameworks: " << report["environments"].size() << " Python environment(s); GPUs "
              << (for_cc ? "named by --for-cc (static checks only): " : "(NVML): ")
              << (gpus.empty() ? std::string("none") : gpus) << "\n\n";
    print_checks(checks, std::cout);
  }
  int rc = n.fail ? kExitCaseFailed : kExitOk;
  try {
    if (!o.out_file.empty()) write_file_atomic(o.out_file, report.dump(2) + "\n");
    if (!o.junit_file.empty()) write_file_atomic(o.junit_file, junit_of(checks, iso_utc(std::chrono::system_clock::now())));
    if (!o.prometheus_file.empty()) write_file_atomic(o.prometheus_file, prometheus_of(checks, jf::at(report, "records")));
  } catch (const Error& e) {
    std::cerr << "nodebench frameworks: " << e.what() << "\n";
    rc = kExitUsage;
  }
  return rc;
}

}  // namespace nb
