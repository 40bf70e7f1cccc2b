// The burn (issue 37) without a GPU: the workload chosen per compute capability (the P40 fixture's
// device and newer ones), the planted-fault setting, the command line, and every verdict on
// recorded (synthetic) timelines standing in for NVML: thermal slowdown, an Xid, rising PCIe
// replays, a link that drops width, new ECC errors, heat near the slowdown temperature, a rate
// that sags after the first minute, and a GPU slower than its twin, each judged through
// validate's own judge_results with the thresholds built in.
#include <gtest/gtest.h>

#include <fstream>

#include "app/cli.hpp"
#include "app/commands.hpp"
#include "base/error.hpp"
#include "burn/burn_rules.hpp"
#include "check/validate.hpp"

using namespace nb;
using namespace nb::burn;
using nlohmann::json;

namespace {

json p40_env() {
  std::ifstream f(std::string(NB_TEST_DATA_DIR) + "/p40_environment.json");
  return json::parse(f);
}

int cc_of(const json& gpu) {
  const std::string s = gpu.at("compute_capability").get<std::string>();
  return std::stoi(s.substr(0, s.find('.'))) * 10 + std::stoi(s.substr(s.find('.') + 1));
}

// A healthy GPU for `n` seconds: `tflops` every second, 250 W of 250 W, 70 C, link gen3 x16.
std::vector<Sample> steady(int n, double tflops) {
  std::vector<Sample> v;
  for (int i = 1; i <= n; ++i) {
    Sample s;
    s.t_s = i;
    s.gemm_tflops = tflops;
    s.mem_gbps = 10;
    s.power_w = 250;
    s.power_limit_w = 250;
    s.temperature_c = 70;
    s.throttle_mask = 0x4;  // the power cap: not a slowdown
    s.ecc_corrected = 0;
    s.ecc_uncorrected = 0;
    s.pcie_replays = 7;
    s.link_gen = 3;
    s.link_width = 16;
    v.push_back(s);
  }
  return v;
}

GpuFacts p40_facts() {
  GpuFacts f;
  f.slowdown_c = 92;
  f.link_gen_max = 3;
  f.link_width_max = 16;
  return f;
}

json burn_record(int gpu, const std::vector<Sample>& tl, const GpuFacts& f, unsigned long long faulty = 0,
                 unsigned long long mem_errors = 0) {
  return {{"id", "burn/sustained"},
          {"family", "burn"},
          {"case", "sustained"},
          {"params", json::object()},
          {"gpus", json::array({gpu})},
          {"status", faulty || mem_errors ? "wrong" : "ok"},
          {"reason", faulty || mem_errors ? json("GPU " + std::to_string(gpu) + ": faulty") : json(nullptr)},
          {"flags", json::array()},
          {"details",
           {{"summary", to_json(summarize(tl, f))},
            {"faulty_elements", faulty},
            {"gemm_iterations", 100},
            {"memory_test", {{"errors", mem_errors}}}}}};
}

// The burn checks of a document with these records (GPUs 0 and 1 of the P40 fixture), level 4.
std::vector<Check> judge(const json& records) {
  json doc = {{"environment", p40_env()}, {"records", records}};
  const ProfileChoice profile = resolve_profile("auto", doc["environment"]);
  std::vector<int> gpus;
  for (const auto& r : records) gpus.push_back(r["gpus"][0].get<int>());
  return judge_results(doc, profile, 4, {"burn"}, gpus);
}

const Check& find(const std::vector<Check>& cs, const std::string& id, std::optional<int> gpu) {
  for (const auto& c : cs)
    if (c.id == id && c.gpu == gpu) return c;
  throw std::runtime_error("no check " + id);
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST(BurnWorkload, P40FixtureGetsFp32Sgemm) {
  const json env = p40_env();
  ASSERT_FALSE(env["gpus"].empty());
  const int cc = cc_of(env["gpus"][0]);
  ASSERT_EQ(cc, 61);
  std::string why;
  const auto w = choose_workload(cc, std::nullopt, why);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->precision, Precision::fp32);
  EXPECT_FALSE(w->tensor_cores);
  EXPECT_EQ(w->in_bytes, 4);
  // TF32 and BF16 need Ampere: refused with the reason naming the GPU's capability.
  EXPECT_FALSE(choose_workload(cc, Precision::tf32, why));
  EXPECT_TRUE(has(why, "8.0")) << why;
  EXPECT_TRUE(has(why, "6.1")) << why;
  EXPECT_FALSE(choose_workload(cc, Precision::bf16, why));
  // What the P40 can run when asked: FP64 and FP16 (no tensor cores).
  const auto d = choose_workload(cc, Precision::fp64, why);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->in_bytes, 8);
  EXPECT_EQ(d->accumulate, "fp64");
  const auto h = choose_workload(cc, Precision::fp16, why);
  ASSERT_TRUE(h);
  EXPECT_FALSE(h->tensor_cores);
}

TEST(BurnWorkload, TensorCoreGpusGetFp16WithFp32Accumulation) {
  std::string why;
  for (int cc : {70, 75, 80, 86, 89, 90, 100}) {
    const auto w = choose_workload(cc, std::nullopt, why);
    ASSERT_TRUE(w) << cc;
    EXPECT_EQ(w->precision, Precision::fp16) << cc;
    EXPECT_TRUE(w->tensor_cores) << cc;
    EXPECT_EQ(w->in_bytes, 2) << cc;
    EXPECT_EQ(w->accumulate, "fp32") << cc;
  }
  for (int cc : {60, 61, 52}) EXPECT_EQ(choose_workload(cc, std::nullopt, why)->precision, Precision::fp32) << cc;
  const auto t = choose_workload(90, Precision::tf32, why);
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->tensor_cores);
  EXPECT_EQ(t->in_bytes, 4);
  EXPECT_EQ(parse_precision("auto"), std::nullopt);
  EXPECT_EQ(parse_precision("bf16"), Precision::bf16);
  EXPECT_THROW(parse_precision("fp8x"), Error);
}

TEST(BurnFault, ParsesTheTestOnlySetting) {
  const Fault g = parse_fault("gemm:1:17");
  EXPECT_EQ(g.kind, Fault::Kind::gemm);
  EXPECT_EQ(g.gpu, 1);
  EXPECT_EQ(g.iteration, 17);
  EXPECT_EQ(g.elements, 3);
  EXPECT_EQ(parse_fault("gemm:0:2:9").elements, 9);
  const Fault m = parse_fault("mem:0:4096:31");
  EXPECT_EQ(m.kind, Fault::Kind::mem);
  EXPECT_EQ(m.word, 4096u);
  EXPECT_EQ(m.bit, 31);
  EXPECT_EQ(parse_fault("").kind, Fault::Kind::none);
  for (const char* bad : {"gemm", "gemm:x:1", "mem:0:1", "mem:0:1:32", "disk:0:1", "gemm:0:-1"})
    EXPECT_THROW(parse_fault(bad), Error) << bad;
}

TEST(BurnCli, BurnCommandParsesDurationPrecisionAndFiles) {
  auto p = parse_cli({"nodebench", "burn", "--duration", "60s", "--precision", "tf32", "--gpus", "0,1", "--out-file",
                      "/tmp/b.json", "--quiet"});
  ASSERT_TRUE(p.command) << p.err;
  const BurnOptions& o = p.command->as<BurnCommand>()->options;
  EXPECT_DOUBLE_EQ(o.duration_s, 60);
  EXPECT_EQ(o.precision, "tf32");
  EXPECT_EQ(o.gpus, "0,1");
  EXPECT_EQ(o.out_file, "/tmp/b.json");
  EXPECT_TRUE(o.quiet);
  EXPECT_STREQ(p.command->name(), "burn");
  EXPECT_DOUBLE_EQ(parse_cli({"nodebench", "burn"}).command->as<BurnCommand>()->options.duration_s, 600);
  EXPECT_DOUBLE_EQ(parse_cli({"nodebench", "burn", "--duration", "1h30m"}).command->as<BurnCommand>()->options.duration_s, 5400);
  EXPECT_EQ(burn_timeline_path("out/x.json"), "out/x.timeline.jsonl");
  for (auto args : std::vector<std::vector<std::string>>{{"nodebench", "burn", "--duration", "soon"},
                                                         {"nodebench", "burn", "--duration", "0"},
                                                         {"nodebench", "burn", "--precision", "fp4"}}) {
    auto b = parse_cli(args);
    EXPECT_FALSE(b.command) << args.back();
    EXPECT_EQ(b.exit_code, 2) << args.back();
    EXPECT_TRUE(has(b.err, args[2])) << b.err;
  }
  EXPECT_TRUE(has(parse_cli({"nodebench", "--help"}).out, "burn"));
  EXPECT_TRUE(has(parse_cli({"nodebench", "burn", "--help"}).out, "--precision"));
}

TEST(BurnVerdicts, SustainedRuleComparesTheLastMinutesWithTheFirst) {
  EXPECT_DOUBLE_EQ(head_window_s(600), 60);
  EXPECT_DOUBLE_EQ(tail_window_s(600), 300);
  EXPECT_DOUBLE_EQ(head_window_s(60), 15);
  EXPECT_DOUBLE_EQ(tail_window_s(60), 30);
  // 100 TFLOPS for the first 5 minutes, 80 for the last 5: the tail is 80% of the head.
  std::vector<Sample> tl = steady(600, 100);
  for (auto& s : tl)
    if (s.t_s > 300) s.gemm_tflops = 80;
  const Summary sm = summarize(tl, p40_facts());
  EXPECT_DOUBLE_EQ(sm.first_minute_tflops, 100);
  EXPECT_NEAR(sm.sustained_tflops, 80, 1e-9);
  EXPECT_NEAR(*sm.sustained_pct, 80, 1e-9);
  EXPECT_DOUBLE_EQ(sm.mean_power_w, 250);
  const auto cs = judge(json::array({burn_record(0, tl, p40_facts())}));
  EXPECT_EQ(find(cs, "burn.sustained", 0).severity, Severity::fail);
  // A steady GPU passes every burn check.
  const auto ok = judge(json::array({burn_record(0, steady(600, 100), p40_facts())}));
  for (const char* id : {"burn.correct", "burn.sustained", "burn.slowdown", "burn.temperature", "burn.ecc", "burn.xid",
                         "burn.pcie_replay", "burn.link"})
    EXPECT_EQ(find(ok, id, 0).severity, Severity::ok) << id << ": " << find(ok, id, 0).summary;
  // A short dip inside the first minute only: the sustained rate is the tail's, unchanged.
  std::vector<Sample> dip = steady(600, 100);
  dip[10].gemm_tflops = 10;
  EXPECT_NEAR(summarize(dip, p40_facts()).sustained_tflops, 100, 1e-9);
  EXPECT_LT(summarize(dip, p40_facts()).first_minute_tflops, 100);
}

TEST(BurnVerdicts, ThermalSlowdownFiresWithItsEvidence) {
  std::vector<Sample> tl = steady(100, 50);
  for (auto& s : tl)
    if (s.t_s >= 31 && s.t_s < 51) s.throttle_mask = 0x40 | 0x4;  // HW thermal slowdown for 20 s
  const Summary sm = summarize(tl, p40_facts());
  EXPECT_NEAR(sm.slowdown_pct, 20, 1e-9);
  EXPECT_TRUE(has(sm.slowdown_evidence, "t=31 s")) << sm.slowdown_evidence;
  EXPECT_TRUE(has(sm.slowdown_evidence, "hw_thermal_slowdown")) << sm.slowdown_evidence;
  const Check& c = find(judge(json::array({burn_record(0, tl, p40_facts())})), "burn.slowdown", 0);
  EXPECT_EQ(c.severity, Severity::fail);
  EXPECT_TRUE(has(c.evidence, "hw_thermal_slowdown")) << c.evidence;
  EXPECT_FALSE(c.fix.empty());
  // The power cap alone (0x4) is no slowdown.
  EXPECT_EQ(summarize(steady(100, 50), p40_facts()).slowdown_pct, 0);
}

TEST(BurnVerdicts, XidReplaysLinkDropEccAndHeatFireWithEvidence) {
  std::vector<Sample> tl = steady(60, 50);
  tl[11].xids = {79};                         // t=12 s
  for (auto& s : tl) s.pcie_replays = 7 + (unsigned long long)s.t_s;  // rising: 8 -> 67
  for (auto& s : tl)
    if (s.t_s >= 20) s.link_width = 8;        // x16 -> x8 from t=20 s
  tl.back().ecc_corrected = 2;
  tl[40].temperature_c = 90;                  // 2 C below the 92 C slowdown
  const auto cs = judge(json::array({burn_record(0, tl, p40_facts())}));
  const Check& xid = find(cs, "burn.xid", 0);
  EXPECT_EQ(xid.severity, Severity::fail);
  EXPECT_TRUE(has(xid.evidence, "Xid 79 at t=12 s")) << xid.evidence;
  const Check& rep = find(cs, "burn.pcie_replay", 0);
  EXPECT_EQ(rep.severity, Severity::fail);
  EXPECT_EQ(*rep.value, 59);
  EXPECT_TRUE(has(rep.evidence, "8 -> 67")) << rep.evidence;
  const Check& link = find(cs, "burn.link", 0);
  EXPECT_EQ(link.severity, Severity::fail);
  EXPECT_TRUE(has(link.evidence, "x8 from t=20 s")) << link.evidence;
  EXPECT_TRUE(has(link.evidence, "gen3 x16")) << link.evidence;
  const Check& ecc = find(cs, "burn.ecc", 0);
  EXPECT_EQ(ecc.severity, Severity::fail);
  EXPECT_TRUE(has(ecc.evidence, "0 -> 2")) << ecc.evidence;
  const Check& temp = find(cs, "burn.temperature", 0);
  EXPECT_EQ(temp.severity, Severity::fail);
  EXPECT_DOUBLE_EQ(*temp.value, 2);
  EXPECT_TRUE(has(temp.evidence, "92 C")) << temp.evidence;
  // No slowdown and a steady rate in the same timeline: those checks pass.
  EXPECT_EQ(find(cs, "burn.slowdown", 0).severity, Severity::ok);
  EXPECT_EQ(find(cs, "burn.sustained", 0).severity, Severity::ok);
}

TEST(BurnVerdicts, FaultyElementsAndMemoryErrorsFailTheGpu) {
  const auto cs = judge(json::array({burn_record(0, steady(60, 50), p40_facts(), 3, 0),
                                     burn_record(1, steady(60, 50), p40_facts(), 0, 1)}));
  EXPECT_EQ(find(cs, "burn.correct", 0).severity, Severity::fail);
  EXPECT_EQ(find(cs, "burn.correct", 1).severity, Severity::fail);
  EXPECT_TRUE(has(find(cs, "burn.correct", 0).summary, "GPU 0")) << find(cs, "burn.correct", 0).summary;
}

TEST(BurnVerdicts, SpreadNamesTheSlowerTwin) {
  const auto cs = judge(json::array({burn_record(0, steady(60, 100), p40_facts()), burn_record(1, steady(60, 80), p40_facts())}));
  const Check& c = find(cs, "burn.spread", 1);
  EXPECT_EQ(c.severity, Severity::fail);
  EXPECT_NEAR(*c.value, 80, 1e-9);
  EXPECT_TRUE(has(c.evidence, "GPU 1 sustained 80.0 TFLOPS")) << c.evidence;
  const auto ok = judge(json::array({burn_record(0, steady(60, 100), p40_facts()), burn_record(1, steady(60, 95), p40_facts())}));
  EXPECT_EQ(find(ok, "burn.spread", 1).severity, Severity::ok);
}

TEST(BurnVerdicts, TimelineSamplesRoundTripThroughJson) {
  std::vector<Sample> tl = steady(3, 42);
  tl[1].xids = {13, 79};
  tl[2].throttle_mask = 0x28;
  for (const auto& s : tl) {
    const Sample back = sample_from_json(to_json(s));
    EXPECT_EQ(to_json(back), to_json(s));
  }
  EXPECT_EQ(sample_from_json(to_json(tl[1])).xids, (std::vector<unsigned long long>{13, 79}));
}

TEST(BurnValidate, LevelFourRunsTheBurnAndLevelsTwoAndThreeDoNot) {
  std::vector<Case> quick;
  Case g;
  g.family = "gemm";
  g.name = "fp32/cublas/square_8192";
  g.params = {{"precision", "fp32"}, {"api", "cublas"}};
  Case b;
  b.family = "burn";
  b.name = "sustained";
  quick = {g, b};
  EXPECT_TRUE(level_includes(4, 2));
  EXPECT_TRUE(level_includes(4, 4));
  EXPECT_FALSE(level_includes(4, 3));
  EXPECT_FALSE(level_includes(3, 4));
  const BenchPlan l4 = plan_benchmarks(4, {"gemm", "burn"}, quick, 1);
  EXPECT_NE(std::find(l4.case_ids.begin(), l4.case_ids.end(), "burn/sustained"), l4.case_ids.end());
  const BenchPlan l2 = plan_benchmarks(2, {"gemm", "burn"}, quick, 1);
  EXPECT_EQ(std::find(l2.case_ids.begin(), l2.case_ids.end(), "burn/sustained"), l2.case_ids.end());
  const BenchPlan l3 = plan_benchmarks(3, {"gemm", "burn"}, quick, 1);
  EXPECT_EQ(std::find(l3.families.begin(), l3.families.end(), "burn"), l3.families.end());
}

TEST(BurnValidate, MaxThresholdsPassUpToTheLimit) {
  Threshold t;
  t.max = 0;
  t.unit = "errors";
  EXPECT_EQ(judge_value("burn.xid", 0, 0, t, "e", "fix").severity, Severity::ok);
  const Check c = judge_value("burn.xid", 0, 1, t, "e", "fix");
  EXPECT_EQ(c.severity, Severity::fail);
  EXPECT_EQ(c.fix, "fix");
  EXPECT_TRUE(has(c.evidence, "at most 0")) << c.evidence;
}
