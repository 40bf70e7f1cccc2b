// The burn family (burn.cpp runs its case): its settings, its case and its validation checks at
// level 4. Its records and checks: README.md beside this file; what the checks mean and what to
// do: docs/VALIDATE.md.
#include <algorithm>

#include "base/json_fields.hpp"
#include "base/text.hpp"
#include "bench/benchmark.hpp"
#include "bench/cost.hpp"
#include "burn_metrics.hpp"
#include "burn_rules.hpp"
#include "burn_run.hpp"

namespace nb {
namespace {

using nlohmann::json;
using burn::run_burn;

const SettingRegistrar kDuration({"NODEBENCH_BURN_DURATION", SettingKind::number, "burn_duration_s", 600.0, 1e7, false,
                                  "seconds the burn loads every GPU (default 600; `nodebench burn --duration`)", "burn", false, false,
                                  nullptr, "", {}});
const SettingRegistrar kPrecision({"NODEBENCH_BURN_PRECISION", SettingKind::choice, "burn_precision", "auto", 0, false,
                                   "=auto|fp64|fp32|tf32|fp16|bf16 the burn's GEMM precision (auto: the GPU's fastest: "
                                   "FP16 tensor cores from cc 7.0, FP32 before)",
                                   "burn", false, false, nullptr, "", {"auto", "fp64", "fp32", "tf32", "fp16", "bf16"}});
const SettingRegistrar kTimeline({"NODEBENCH_BURN_TIMELINE", SettingKind::text, "burn_timeline", nullptr, 0, false,
                                  "FILE: the burn's per-second timeline as JSON lines (`nodebench burn` sets it beside "
                                  "the result file)",
                                  "burn", false, true, nullptr, "", {}});
const SettingRegistrar kFault({"NODEBENCH_BURN_TEST_FAULT", SettingKind::text, "burn_test_fault", nullptr, 0, false,
                               "TEST ONLY: plants a fault to prove the burn's detectors: gemm:GPU:ITERATION[:ELEMENTS] "
                               "corrupts a GEMM result, mem:GPU:WORD:BIT flips a bit of the memory test's pattern",
                               "burn", false, true,
                               [](const std::string& v) -> std::string {
                                 try {
                                   burn::parse_fault(v);
                                   return "";
                                 } catch (const std::exception& e) {
                                   return e.what();
                                 }
                               },
                               "", {}});

// ---- The family and its checks ------------------------------------------------------------

const json* summary_of(const json& rec) {
  if (!rec.contains("details") || !rec["details"].is_object() || !rec["details"].contains("summary")) return nullptr;
  return &rec["details"]["summary"];
}

// A check of one GPU's burn record: `field` of details.summary, with `evidence` from it.
ValidationCheck gpu_check(const std::string& id, const std::string& what, const std::string& fix, const char* field,
                          const char* evidence) {
  ValidationCheck vc;
  vc.id = id;
  vc.what = what;
  vc.fix = fix;
  vc.min_level = 4;
  vc.runs_case = [](const Case& c) { return c.family == "burn"; };
  vc.judges = [](const json& r) { return jf::str_or(r, "family") == "burn"; };
  vc.value = [field, evidence](const json& r, const CheckInput&, std::string& how) -> std::optional<double> {
    const json* sm = summary_of(r);
    if (!sm) {
      how = "the record has no burn summary";
      return std::nullopt;
    }
    how = jf::str_or(*sm, evidence);
    if (!sm->contains(field) || !(*sm)[field].is_number()) {
      if (how.empty()) how = std::string("no ") + field;
      return std::nullopt;
    }
    return (*sm)[field].get<double>();
  };
  return vc;
}

class BurnFamily : public Family {
 public:
  std::string name() const override { return "burn"; }
  std::string description() const override {
    return "burn-in: every GPU under sustained full load at once (GEMM checked bit for bit, a memory test), a "
           "timeline from NVML; runs only when named (nodebench burn, --family burn, validate --level 4)";
  }
  bool explicit_only() const override { return true; }
  std::vector<Case> cases(Suite) const override {
    Case c;
    c.family = "burn";
    c.name = "sustained";
    c.params = {{"gemm", "cublas"}, {"memory_test", true}};
    c.run = run_burn;
    c.cost = [](const CostInput&) {
      CaseCost k;
      k.kind = "burn";
      k.setup_s = 5;
      k.sample_s = current_settings().number("NODEBENCH_BURN_DURATION");
      return k;
    };
    return {c};
  }
  std::vector<ValidationCheck> validation_checks() const override {
    std::vector<ValidationCheck> out;
    {
      ValidationCheck vc;
      vc.id = "burn.correct";
      vc.what = "burn";
      vc.fix = "Faulty GEMM elements or memory errors under load: the GPU computes or stores wrong data. Rerun the burn; "
               "if it repeats on the same GPU, drain it, check ECC and Xid errors (nvidia-smi -q -d ECC, dmesg) and RMA "
               "it.";
      vc.min_level = 4;
      vc.runs_case = [](const Case& c) { return c.family == "burn"; };
      vc.judges = [](const json& r) { return jf::str_or(r, "family") == "burn"; };
      vc.value = [](const json& r, const CheckInput&, std::string& how) -> std::optional<double> {
        if (!r.contains("details")) return std::nullopt;
        const json& d = r["details"];
        const double f = jf::num_or(d, "faulty_elements", 0);
        const double m = d.contains("memory_test") ? jf::num_or(d["memory_test"], "errors", 0) : 0;
        how = fmt(f, 0) + " faulty GEMM element(s) in " + fmt(jf::num_or(d, "gemm_iterations", 0), 0) +
              " checked results, " + fmt(m, 0) + " memory error(s)";
        return f + m;
      };
      out.push_back(vc);
    }
    out.push_back(gpu_check("burn.sustained", "burn",
                            "The GPU loses rate as it heats: check airflow through the chassis (a passive P40 needs "
                            "the chassis fans' full flow across its fins), the fan policy (BMC: full or performance), "
                            "and that nothing blocks the intake; compare with the GPU's twins (burn.spread).",
                            "sustained_pct", "slowdown_evidence"));
    out.push_back(gpu_check("burn.slowdown", "burn",
                            "Thermal or hardware slowdown under load: improve the airflow, set the chassis fan policy to "
                            "full, check the power supply and cabling (HW slowdown, power brake); reseat the GPU.",
                            "slowdown_pct", "slowdown_evidence"));
    out.push_back(gpu_check("burn.temperature", "burn",
                            "The GPU ran close to its own slowdown temperature: more airflow (fan policy, blanking "
                            "panels, intake temperature), or fewer GPUs loaded side by side.",
                            "temperature_margin_c", "temperature_evidence"));
    out.push_back(gpu_check("burn.ecc", "burn",
                            "New ECC errors under load: read nvidia-smi -q -d ECC,PAGE_RETIREMENT (or ROW_REMAPPER); "
                            "repeated or uncorrectable errors: drain the GPU and RMA it.",
                            "new_ecc_errors", "ecc_evidence"));
    out.push_back(gpu_check("burn.xid", "burn",
                            "Xid errors under load: read the codes in dmesg (NVIDIA's Xid table); 79 (fallen off the "
                            "bus) or 48/63/64 (memory): reseat, check power cabling, RMA if it repeats.",
                            "xid_events", "xid_evidence"));
    out.push_back(gpu_check("burn.pcie_replay", "burn",
                            "PCIe replays under load: the link retransmits. Reseat the GPU and its riser, check the "
                            "slot and cabling; replays that keep rising: move it to another slot, RMA the riser or GPU.",
                            "new_pcie_replays", "replay_evidence"));
    out.push_back(gpu_check("burn.link", "burn",
                            "The PCIe link ran below its generation or width under load: reseat the GPU and riser, check "
                            "the BIOS slot settings (generation, bifurcation), try another slot.",
                            "link_downtrained_s", "link_evidence"));
    {
      ValidationCheck vc;
      vc.id = "burn.spread";
      vc.what = "burn";
      vc.fix = "One GPU sustains less than its twins under the same load: it runs hotter (its slot's airflow) or is "
               "power-capped lower; compare their temperatures and slowdown in the burn's timeline.";
      vc.min_level = 4;
      vc.min_gpus = 2;
      vc.runs_case = [](const Case& c) { return c.family == "burn"; };
      vc.node = [](const NodeCheckInput& in) {
        std::vector<Judgement> out;
        const json* slow = nullptr;
        const json* fast = nullptr;
        int slow_gpu = 0, fast_gpu = 0;
        auto rate = [](const json& r) {
          const json* sm = summary_of(r);
          return sm ? jf::num_or(*sm, "sustained_tflops", 0) : 0.0;
        };
        if (in.doc.contains("records"))
          for (const json& r : in.doc["records"]) {
            if (jf::str_or(r, "family") != "burn" || jf::str_or(r, "status") != "ok" || !r.contains("gpus") ||
                !r["gpus"].is_array() || r["gpus"].size() != 1)
              continue;
            const int gi = r["gpus"][0].is_object() ? r["gpus"][0].value("index", -1) : r["gpus"][0].get<int>();
            if (std::find(in.gpus.begin(), in.gpus.end(), gi) == in.gpus.end()) continue;
            if (!slow || rate(r) < rate(*slow)) slow = &r, slow_gpu = gi;
            if (!fast || rate(r) > rate(*fast)) fast = &r, fast_gpu = gi;
          }
        Judgement j;
        j.id = "burn.spread";
        j.what = "burn";
        if (!slow || slow == fast) {
          j.skip = "fewer than two GPUs with a burn record";
          out.push_back(j);
          return out;
        }
        j.gpu = slow_gpu;
        j.model_gpu = slow_gpu;
        j.record = slow;
        const double fr = rate(*fast);
        j.value = [rate, fr, fast_gpu, slow_gpu](const json& r, std::string& how) -> std::optional<double> {
          if (!(fr > 0)) return std::nullopt;
          how = "GPU " + std::to_string(slow_gpu) + " sustained " + fmt(rate(r), 1) + " TFLOPS, GPU " +
                std::to_string(fast_gpu) + " (the fastest) " + fmt(fr, 1) + " TFLOPS";
          return 100.0 * rate(r) / fr;
        };
        out.push_back(j);
        return out;
      };
      out.push_back(vc);
    }
    return out;
  }
};

const Registrar kRegistrar(std::make_unique<BurnFamily>());
NB_REGISTER_METRICS("burn", {burn::kTflops, burn::kSustainedGemm, burn::kFirstMinuteGemm, burn::kMeanPower, burn::kMemoryTest,
                             burn::kFaultyElements, burn::kMemoryErrors, burn::kMaxTemperature});

}  // namespace
}  // namespace nb
