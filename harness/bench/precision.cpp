#include "bench/precision.hpp"

#include <algorithm>
#include <cmath>

#include "base/text.hpp"
#include "bench/benchmark.hpp"
#include "node/arch_facts.hpp"

namespace nb {
using nlohmann::json;

std::vector<PrecisionEvidence>& precision_evidence_registry() {
  static std::vector<PrecisionEvidence> r;
  return r;
}

namespace {

// The registered evidence in table order (stable: equal orders keep registration order).
std::vector<const PrecisionEvidence*> by_order() {
  std::vector<const PrecisionEvidence*> out;
  for (const auto& e : precision_evidence_registry()) out.push_back(&e);
  std::stable_sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->order < b->order; });
  return out;
}

// "run the gemm or peak family": the evidences marked `suggested`, most preferred first.
// With what INT8 inference runs on a GPU below compute capability 7.5: TensorRT 10 and later refuse
// Pascal, so the last TensorRT that builds engines for it is named (harness/profiles/arch_facts.json).
std::string int8_stack(int cc) {
  if (cc >= 75) return "";
  const std::string trt = arch_pin("tensorrt_last");
  if (trt.empty()) return "";
  return "; with TensorRT " + trt + " (" + arch_pin("tensorrt_wheel") + "), the last TensorRT for compute capability " +
         std::to_string(cc / 10) + "." + std::to_string(cc % 10) + ": TensorRT 10 and later refuse it; or cuBLASLt INT8 "
         "GEMMs (CUDA 12.x) directly";
}

std::string suggestion() {
  std::vector<const PrecisionEvidence*> marked;
  for (const auto& e : precision_evidence_registry())
    if (e.suggested) marked.push_back(&e);
  std::stable_sort(marked.begin(), marked.end(), [](auto* a, auto* b) { return a->preference < b->preference; });
  std::vector<std::string> names;
  for (const PrecisionEvidence* e : marked)
    if (std::find(names.begin(), names.end(), e->family) == names.end()) names.push_back(e->family);
  if (names.empty()) return "";
  std::string s = names.back();
  if (names.size() > 1) s = join(std::vector<std::string>(names.begin(), names.end() - 1), ", ") + " or " + s;
  return " (run the " + s + " family)";
}

struct Best {
  double speedup = NAN;
  std::string source;
};

// The best speedup among rows of `other` (and, for FP16, of the given preference).
Best best_of(const std::vector<std::pair<PrecisionRow, int>>& rows, const std::string& other, const int* preference) {
  Best b;
  for (const auto& [r, pref] : rows) {
    if (r.other != other || (preference && pref != *preference)) continue;
    const double s = r.value / r.fp32;
    if (!std::isfinite(b.speedup) || s > b.speedup) b = {s, r.source};
  }
  return b;
}

json verdict_of(const GpuBrief& g, const std::vector<std::pair<PrecisionRow, int>>& rows,
                const std::vector<std::string>& notes) {
  json v = json::object();
  Best fp16;
  std::vector<int> prefs;
  for (const auto& [r, pref] : rows)
    if (r.other == "fp16") prefs.push_back(pref);
  std::sort(prefs.begin(), prefs.end());
  if (!prefs.empty()) fp16 = best_of(rows, "fp16", &prefs.front());
  const Best i8 = best_of(rows, "int8", nullptr);
  if (!std::isfinite(fp16.speedup)) {
    v["verdict"] = "not_measured";
    v["reason"] = "no FP16 and FP32 results to compare on this GPU" + suggestion();
  } else if (fp16.speedup >= 1.5) {
    v["verdict"] = "pays";
    v["reason"] = "FP16 runs " + fmt(fp16.speedup) + "x as fast as FP32 (" + fp16.source + "): mixed precision pays on this GPU";
  } else {
    v["verdict"] = "does_not_pay";
    std::string reason =
        "FP16 runs only " + fmt(fp16.speedup) + "x as fast as FP32 (" + fp16.source + "): mixed precision does not pay";
    // Only 6.1 (GP102/104/106/107: P40, P4, GTX 10x0) has FP16 at 1/64 of FP32; 6.0 (P100) and 6.2
    // (Jetson TX2) run it at twice FP32 (CUDA C++ Programming Guide, arithmetic instruction
    // throughput): there a slow measured FP16 is not the hardware's rate, and is not called so.
    if (g.cc_major * 10 + g.cc_minor == 61)
      reason += " (compute capability 6.1: FP16 arithmetic at 1/64 of FP32, no tensor cores)";
    for (const auto& n : notes) reason += "; " + n;
    v["reason"] = reason;
    if (std::isfinite(i8.speedup) && i8.speedup >= 2.0)
      v["recommendation"] = "train in FP32; for inference use INT8 (DP4A): " + fmt(i8.speedup) + "x FP32 (" + i8.source +
                            ")" + int8_stack(g.cc_major * 10 + g.cc_minor);
    else
      v["recommendation"] = "train and infer in FP32";
  }
  return v;
}

bool applies(const json& records) {
  for (const auto& r : records) {
    const std::string f = r.value("family", "");
    for (const auto& e : precision_evidence_registry())
      if (e.triggers && e.family == f) return true;
  }
  return false;
}

Analysis fp16_analysis() {
  Analysis a;
  a.key = "fp16_vs_fp32";
  a.applies = applies;
  a.run = [](const json& records, const AnalysisContext& ctx) {
    std::vector<GpuBrief> briefs;
    for (const GpuInfo* g : ctx.gpus) briefs.push_back({g->index, g->name, g->cc_major, g->cc_minor, "", -1});
    // Under MPI every rank's GPU, identified by host and rank as well as index.
    return fp16_vs_fp32(records, gpu_briefs(ctx.environment, briefs));
  };
  a.lines = [](const json& result) { return fp16_verdict_lines(result); };
  return a;
}

}  // namespace

PrecisionEvidenceRegistrar::PrecisionEvidenceRegistrar(PrecisionEvidence e) {
  if (precision_evidence_registry().empty()) analysis_registry().push_back(fp16_analysis());
  precision_evidence_registry().push_back(std::move(e));
}

json fp16_vs_fp32(const json& records, const std::vector<GpuBrief>& gpus) {
  json out = json::array();
  for (const auto& g : gpus) {
    std::vector<std::pair<PrecisionRow, int>> rows;  // with the evidence's preference
    std::vector<std::string> notes;
    json table = json::array();
    for (const PrecisionEvidence* e : by_order())
      for (PrecisionRow& r : e->rows(records, g, notes)) {
        if (!std::isfinite(r.fp32) || !std::isfinite(r.value) || r.fp32 <= 0) continue;
        table.push_back({{"source", r.source}, {"kind", r.kind}, {"fp32", r.fp32}, {r.other, r.value}, {"speedup_x", r.value / r.fp32}});
        rows.emplace_back(std::move(r), e->preference);
      }
    json verdict = {{"gpu", g.index}, {"name", g.name},
                    {"compute_capability", std::to_string(g.cc_major) + "." + std::to_string(g.cc_minor)},
                    {"rows", table}};
    if (g.rank >= 0) verdict["rank"] = g.rank;
    if (!g.host.empty()) verdict["host"] = g.host;
    verdict.update(verdict_of(g, rows, notes));
    out.push_back(verdict);
  }
  return out;
}

std::vector<std::string> fp16_verdict_lines(const json& analysis) {
  std::vector<std::string> lines;
  for (const auto& v : analysis) {
    std::string l = where_label(v) + " " + v.value("name", "") + ": mixed precision " +
                    (v["verdict"] == "pays" ? "PAYS" : v["verdict"] == "does_not_pay" ? "DOES NOT PAY" : "not measured") +
                    ": " + v["reason"].get<std::string>();
    if (v.contains("recommendation")) l += "; " + v["recommendation"].get<std::string>();
    lines.push_back(l);
  }
  return lines;
}

}  // namespace nb
