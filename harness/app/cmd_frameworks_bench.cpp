// `nodebench frameworks --bench`: one process per framework, mode and GPU count, each under
// --bench-timeout with its whole process group ended (base/subprocess.hpp), so that a mode that
// errors or hangs is a record with its reason and leaves no process or GPU memory behind.
#include "app/frameworks_bench_run.hpp"

#include <filesystem>
#include <fstream>
#include <iostream>

#include "base/text.hpp"
#include "check/frameworks.hpp"

namespace nb {
using nlohmann::json;
namespace fs = std::filesystem;

json subprocess_run_json(const SubprocessResult& r, double timeout_s) {
  std::string log = r.output;
  if (log.size() > 16000) log = "..." + log.substr(log.size() - 16000);
  return {{"exit_code", r.exit_code}, {"signal", r.signal}, {"timed_out", r.timed_out}, {"seconds", r.seconds}, {"timeout_s", timeout_s},
          {"description", r.describe()}, {"log", log}};
}

namespace {

// The precision a mode trains in before the bench says so itself (a mode that failed early):
// mixed precision for amp, and for fast from cc 7.0; else TF32 from cc 8.0 (both frameworks turn
// it on for convolutions by default), FP32 below.
std::string planned_precision(const std::string& mode, int cc) {
  if (mode == "amp" || (mode == "fast" && cc >= 70)) return "fp16";
  return cc >= 80 ? "tf32" : "fp32";
}

int first_cc(const json& fw_probe) {
  if (fw_probe.contains("devices") && fw_probe["devices"].is_array() && !fw_probe["devices"].empty()) {
    const json& d = fw_probe["devices"][0];
    if (d.is_object() && d.contains("cc") && d["cc"].is_string()) {
      const std::string s = d["cc"].get<std::string>();
      const size_t dot = s.find('.');
      try {
        if (dot != std::string::npos) return std::stoi(s.substr(0, dot)) * 10 + std::stoi(s.substr(dot + 1));
      } catch (const std::exception&) {
      }
    }
  }
  return 0;
}

json one_mode(const std::string& python, const std::string& dir, const std::string& script, const std::string& mod,
              const std::string& mode, int gpus, int cc, const json& fw_probe, const FrameworksOptions& o) {
  const std::string out = dir + "/bench-" + mod + "-" + mode + "-" + std::to_string(gpus) + ".json";
  std::error_code ec;
  fs::remove(out, ec);
  const std::vector<std::string> argv{python, script, mod, out, "--mode", mode, "--gpus", std::to_string(gpus),
                                      "--batch", std::to_string(o.bench_batch), "--seconds", fmt(o.bench_seconds, 3),
                                      "--warmup", "10"};
  const SubprocessResult r = run_subprocess(argv, o.bench_timeout_s, {"PYTHONUNBUFFERED=1", "PYTHONDONTWRITEBYTECODE=1"});
  json answer = json::object();
  if (std::ifstream f(out); f) {
    try {
      answer = json::parse(f);
    } catch (const json::exception&) {
      answer = json::object();
    }
  }
  if (!answer.is_object()) answer = json::object();
  const json settings = answer.contains("settings") && answer["settings"].is_object() ? answer["settings"] : json::object();
  json params = {{"framework", mod},
                 {"mode", mode},
                 {"gpus", gpus},
                 {"batch", o.bench_batch},
                 {"precision", settings.value("precision", planned_precision(mode, cc))},
                 {"layout", settings.value("layout", std::string(mod == "torch" && mode != "fast" ? "nchw" : "nhwc"))},
                 {"compiled", settings.value("compiled", mode == "fast")},
                 {"warmup_steps", 10},
                 {"seconds", o.bench_seconds}};
  json rec = {{"id", "frameworks/" + mod + "/" + mode + "/g" + std::to_string(gpus) + "/b" + std::to_string(o.bench_batch)},
              {"python", python},
              {"framework", mod},
              {"framework_version", answer.value("version", fw_probe.value("version", std::string()))},
              {"mode", mode},
              {"params", params},
              {"primary_metric", "images_per_s"},
              {"primary_better", "higher"},
              {"settings", settings},
              {"run", subprocess_run_json(r, o.bench_timeout_s)}};
  if (answer.contains("device")) rec["device"] = answer["device"];
  const bool done = answer.value("done", false) && answer.contains("images_per_s") && answer["images_per_s"].is_number();
  if (done && !r.timed_out && r.exit_code == 0) {
    rec["status"] = "ok";
    rec["reason"] = nullptr;
    rec["reason_kind"] = nullptr;
    rec["metrics"] = {{"images_per_s", answer["images_per_s"]},
                      {kFrameworkStepTime.name(), answer.value(kFrameworkStepTime.name(), 0.0)},
                      {"warmup_s", answer.value("warmup_s", 0.0)}};
    rec["samples_s"] = answer.value("samples_s", json::array());
    rec["steps"] = answer.value("steps", 0);
    return rec;
  }
  rec["status"] = "failed";
  rec["metrics"] = json::object();
  if (r.timed_out) {
    rec["reason_kind"] = "timeout";
    rec["reason"] = "did not finish within " + fmt(o.bench_timeout_s, 0) + " s (--bench-timeout); ended with its processes";
  } else if (answer.contains("error") && answer["error"].is_string()) {
    const std::string e = answer["error"].get<std::string>();
    const bool oom = e.find("out of memory") != std::string::npos || e.find("OutOfMemory") != std::string::npos ||
                     e.find("RESOURCE_EXHAUSTED") != std::string::npos || e.find("ResourceExhausted") != std::string::npos ||
                     e.find("OOM when allocating") != std::string::npos;
    rec["reason_kind"] = oom ? "oom" : "error";
    rec["reason"] = e;
  } else {
    rec["reason_kind"] = "error";
    rec["reason"] = "the bench process " + r.describe() + " without an answer";
  }
  return rec;
}

}  // namespace

json bench_framework(const std::string& python, const std::string& dir, const std::string& module, const json& fw_probe,
                     const FrameworksOptions& o) {
  json recs = json::array();
  if (module != "torch" && module != "tensorflow") return recs;
  if (!fw_probe.is_object() || !fw_probe.contains("version") || !fw_probe.value("cuda_build", false)) return recs;
  const int n = fw_probe.value("device_count", 0);
  if (n < 1) return recs;
  const std::string script = dir + "/nodebench_framework_bench.py";
  if (!fs::exists(script)) std::ofstream(script) << framework_bench_script();
  const int cc = first_cc(fw_probe);
  std::vector<std::pair<std::string, int>> plan{{"default", 1}, {"amp", 1}, {"fast", 1}};
  if (n >= 2) plan.insert(plan.end(), {{"default", n}, {"fast", n}});
  for (const auto& [mode, gpus] : plan) {
    std::cerr << "nodebench frameworks:   " << framework_title(module) << " bench " << mode << " on " << gpus
              << (gpus == 1 ? " GPU" : " GPUs") << "... " << std::flush;
    json rec = one_mode(python, dir, script, module, mode, gpus, cc, fw_probe, o);
    if (rec["status"] == "ok")
      std::cerr << fmt(rec["metrics"].value("images_per_s", 0.0), 0) << " images/s" << std::endl;
    else
      std::cerr << rec.value("reason", std::string("failed")) << std::endl;
    recs.push_back(std::move(rec));
  }
  return recs;
}

}  // namespace nb
