// The verdicts of `nodebench frameworks --bench` (docs/FRAMEWORKS.md, "--bench"): each mode's
// images/s or why it gave none, the data-parallel scaling against the 1-GPU rate, the fast settings
// and mixed precision against the default ones. The values that judge come from
// harness/profiles/frameworks.json "bench" (with their rules), never from constants here.
#include <map>

#include "base/error.hpp"
#include "check/frameworks.hpp"
#include "check/frameworks_detail.hpp"

namespace nb::frameworks_detail {
using namespace doctor_detail;

namespace {

struct BenchLimits {
  double scaling_share = 0, gain_min = 0;
};

BenchLimits bench_limits(const RuleData& data) {
  const json& b = at(data.frameworks, "bench");
  const json& s = at(b, "scaling_share_min");
  const json& g = at(b, "gain_min_x");
  if (!s.is_number() || !g.is_number())
    throw Error("frameworks.json: bench.scaling_share_min and bench.gain_min_x must be numbers");
  return {s.get<double>(), g.get<double>()};
}

std::string mode_words(const json& r) {
  const std::string mode = r.value("mode", std::string("?"));
  const json& p = at(r, "params");
  if (mode == "default") return "default settings";
  if (mode == "amp") return "mixed precision (default settings otherwise)";
  std::vector<std::string> w;
  const bool torch = r.value("framework", std::string()) == "torch";
  if (torch && p.value("layout", std::string()) == "nhwc") w.push_back("channels_last");
  if (p.value("precision", std::string()) == "fp16") w.push_back(torch ? "AMP" : "mixed precision");
  if (p.value("compiled", false)) w.push_back(torch ? "torch.compile" : "XLA");
  if (w.empty()) return "fast settings";
  if (w.size() == 1) return w[0];
  std::string s;
  for (size_t i = 0; i < w.size(); ++i) s += (i == 0 ? "" : i + 1 == w.size() ? " and " : ", ") + w[i];
  return s;
}

double ips(const json& r) { return at(r, "metrics").value("images_per_s", 0.0); }
bool ok(const json* r) { return r && r->value("status", std::string()) == "ok" && ips(*r) > 0; }

std::string gpus_text(int n) { return std::to_string(n) + (n == 1 ? " GPU" : " GPUs"); }

std::string record_evidence(const json& r) {
  const json& p = at(r, "params");
  std::string ev = "batch " + std::to_string(p.value("batch", 0)) + " per GPU, " + p.value("precision", std::string("?")) + "/" +
                   p.value("layout", std::string("?")) + (p.value("compiled", false) ? ", compiled" : "");
  const json& m = at(r, "metrics");
  if (m.is_object() && m.contains(kFrameworkStepTime.name()))
    ev += "; median step " + fmt(m.value(kFrameworkStepTime.name(), 0.0), 2) + " ms over " + std::to_string(r.value("steps", 0)) +
          " timed steps after " + std::to_string(p.value("warmup_steps", 0)) + " warm-up steps (" +
          fmt(m.value("warmup_s", 0.0), 1) + " s)";
  const json& d = at(r, "device");
  if (d.is_object()) ev += "; " + d.value("name", std::string("GPU")) + " cc " + d.value("cc", std::string("?"));
  const json& run = at(r, "run");
  if (run.is_object()) ev += "; process " + run.value("description", std::string("?"));
  return ev;
}

void judge_one(const std::string& pre, const std::string& name, const std::string& mod, const std::vector<const json*>& recs,
               const BenchLimits& lim, std::vector<Check>& out) {
  const std::string idp = "framework." + mod + ".";
  std::map<std::pair<std::string, int>, const json*> by;  // (mode, GPUs)
  int most = 1;
  for (const json* r : recs) {
    const int n = at(*r, "params").value("gpus", 1);
    by[{r->value("mode", std::string()), n}] = r;
    most = std::max(most, n);
  }
  // Each mode: its rate, or why it has none.
  for (const json* r : recs) {
    const int n = at(*r, "params").value("gpus", 1);
    const std::string what = pre + name + " " + mode_words(*r) + " on " + gpus_text(n);
    if (ok(r)) {
      out.push_back(make_check(idp + "bench", std::nullopt, Severity::ok, what + ": " + fmt(ips(*r), 0) + " images/s",
                               record_evidence(*r)));
      continue;
    }
    const std::string kind = r->value("reason_kind", std::string("error"));
    std::string fix = "Run the mode by hand in this environment to see the whole error.";
    if (kind == "timeout") fix = "Give the mode more time (--bench-timeout), or run it by hand to see where it stops.";
    else if (kind == "oom") fix = "A smaller batch (--bench-batch).";
    out.push_back(make_check(idp + "bench", std::nullopt, Severity::fail, what + ": " + r->value("reason", std::string("failed")),
                             record_evidence(*r) + ". Last output: " + tail_lines(at(*r, "run").is_object()
                                                                                      ? at(*r, "run").value("log", std::string())
                                                                                      : std::string(), 6),
                             fix));
  }
  // Data-parallel scaling: the N-GPU rate against the 1-GPU rate of the same mode.
  bool scaled = false;
  for (const char* mode : {"default", "fast"}) {
    const auto one = by.find({mode, 1});
    if (one == by.end() || !ok(one->second)) continue;
    for (const auto& [key, r] : by) {
      if (key.first != mode || key.second < 2 || !ok(r)) continue;
      scaled = true;
      const int n = key.second;
      const double x = ips(*r) / ips(*one->second);
      const double floor = 1.0 + lim.scaling_share * (n - 1);
      const std::string ev = fmt(ips(*r), 0) + " images/s on " + gpus_text(n) + " against " + fmt(ips(*one->second), 0) +
                             " on one (" + fmt(100.0 * x / n, 0) + "% of linear); at least " + fmt(floor, 2) +
                             "x expected: each added GPU adds at least " + fmt(lim.scaling_share, 2) +
                             " of one GPU's rate (frameworks.json bench.scaling_share_min)";
      const std::string head = pre + name + " on " + gpus_text(n) + " reaches " + fmt(x, 2) + "x its 1-GPU rate (" + mode_words(*r) + ")";
      if (x >= floor) {
        out.push_back(make_check(idp + "scaling", std::nullopt, Severity::ok, head, ev));
      } else {
        const std::string path = mod == "torch" ? "DistributedDataParallel over NCCL" : "MirroredStrategy";
        out.push_back(make_check(idp + "scaling", std::nullopt, Severity::fail,
                                 head + (x < 1.0 + lim.scaling_share ? ": it trains on one GPU"
                                                                     : ": the added GPUs do less than their share"),
                                 ev,
                                 "The all-reduce of " + path + " costs more than the step (or waits): check " + idp +
                                     "allreduce, `nodebench run --family nccl` and doctor's peer and PCIe checks; "
                                     "`nodebench advise` gives the bound this node's links set."));
      }
    }
  }
  if (!scaled && most == 1 && by.count({"default", 1}))
    out.push_back(make_check(idp + "scaling", std::nullopt, Severity::info,
                             pre + name + " sees one GPU: its data-parallel path is not measured",
                             "The bench runs the data-parallel modes when the framework sees two or more GPUs."));
  // The fast settings and mixed precision against the default settings, on one GPU.
  const auto def = by.find({"default", 1});
  if (def == by.end() || !ok(def->second)) return;
  const double base = ips(*def->second);
  const json& dev = at(*def->second, "device");
  const auto cc = dev.is_object() ? parse_cc(dev.value("cc", std::string())) : std::nullopt;
  const std::string rule = " (frameworks.json bench.gain_min_x: a setting meant to speed training up that reaches less than " +
                           fmt(lim.gain_min, 2) + "x the default is reported)";
  if (const auto f = by.find({"fast", 1}); f != by.end() && ok(f->second)) {
    const double x = ips(*f->second) / base;
    const std::string ev = fmt(ips(*f->second), 0) + " against " + fmt(base, 0) + " images/s" + rule;
    if (x >= lim.gain_min)
      out.push_back(make_check(idp + "fast", std::nullopt, Severity::ok,
                               pre + name + ": " + mode_words(*f->second) + " reach " + fmt(x, 2) + "x default settings", ev));
    else
      out.push_back(make_check(idp + "fast", std::nullopt, Severity::warn,
                               pre + name + ": " + mode_words(*f->second) + " reach only " + fmt(x, 2) +
                                   "x default settings: slower, not faster",
                               ev, "Train with the default settings here, or find which of the settings costs (run them one by one)."));
  }
  if (const auto a = by.find({"amp", 1}); a != by.end() && ok(a->second)) {
    const double x = ips(*a->second) / base;
    const std::string ev = fmt(ips(*a->second), 0) + " against " + fmt(base, 0) + " images/s" + rule;
    const std::string on = cc ? " on cc " + cc_string(*cc) : std::string();
    const bool old = cc && *cc < 70;
    if (x < lim.gain_min)
      out.push_back(make_check(idp + "amp", std::nullopt, Severity::warn,
                               pre + name + ": mixed precision is slower, not faster" + on + ": " + fmt(x, 2) + "x default",
                               ev + (old ? "; below cc 7.0 the GPU has no FP16 tensor cores, and FP16 storage with FP32 arithmetic "
                                           "adds casts"
                                         : std::string()),
                               old ? "Train in FP32 on this GPU (the bench's fast mode leaves mixed precision off below cc 7.0)."
                                   : "Check the mixed-precision path (autocast, loss scaling); keep FP32 where it is faster."));
    else
      out.push_back(make_check(idp + "amp", std::nullopt, old ? Severity::info : Severity::ok,
                               pre + name + ": mixed precision reaches " + fmt(x, 2) + "x default" + on, ev));
  }
}

}  // namespace

void judge_bench(const json& report, const std::vector<NodeGpu>& /*gpus*/, const RuleData& data, std::vector<Check>& out) {
  const json& recs = at(report, "records");
  if (!recs.is_array() || recs.empty()) return;
  const BenchLimits lim = bench_limits(data);
  const json& envs = at(report, "environments");
  const bool several = envs.is_array() && envs.size() > 1;
  // In the order the records came: per environment, per framework.
  std::vector<std::pair<std::string, std::string>> order;
  std::map<std::pair<std::string, std::string>, std::vector<const json*>> groups;
  for (const auto& r : recs) {
    if (!r.is_object()) continue;
    const std::pair<std::string, std::string> k{r.value("python", std::string("?")), r.value("framework", std::string("?"))};
    if (!groups.count(k)) order.push_back(k);
    groups[k].push_back(&r);
  }
  for (const auto& k : order) {
    const json& first = *groups[k].front();
    const std::string pre = several ? "[" + k.first + "] " : "";
    const std::string version = first.value("framework_version", std::string());
    judge_one(pre, framework_title(k.second) + (version.empty() ? "" : " " + version), k.second, groups[k], lim, out);
  }
}

}  // namespace nb::frameworks_detail
