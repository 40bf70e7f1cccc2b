// doctor and validate on a P40 node without a GPU: `doctor --from` over the P40 captures
// (tests/data/p40_environment.json, p40_doctor.json, p40_result.json), its errors on bad files,
// and validate's P40 thresholds judging the P40 result fixture.
#include <gtest/gtest.h>

#include "fixture_util.hpp"

#include <fstream>
#include <set>

#include "app/cli.hpp"
#include "check/doctor.hpp"
#include "check/doctor_from.hpp"
#include "base/error.hpp"
#include "check/validate.hpp"

using namespace nb;
using nlohmann::json;

namespace nb {
// harness/profiles/builtin_rules.cpp.in: the data files embedded in the binary.
extern const char* const kBuiltinCompatJson;
extern const char* const kBuiltinFrameworksJson;
extern const char* const kBuiltinThresholdsJson;
}  // namespace nb

namespace {

using nb::test::data_path;
using nb::test::has;
using nb::test::read_json;

std::string describe(const std::vector<Check>& checks) {
  std::string s;
  for (const auto& c : checks)
    s += to_string(c.severity) + (c.skipped ? " (skipped) " : " ") + c.id + " [" + c.gpu_label() + "] " + c.summary + "\n";
  return s;
}

std::vector<const Check*> all_of(const std::vector<Check>& checks, const std::string& id) {
  std::vector<const Check*> out;
  for (const auto& c : checks)
    if (c.id == id) out.push_back(&c);
  return out;
}

// Writes `text` to a file of the test output folder and returns its path.
std::string temp_file(const std::string& name, const std::string& text) {
  const std::string path = std::string(NB_TEST_OUTPUT_DIR) + "/" + name;
  std::ofstream(path) << text;
  return path;
}

// The message of the nb::Error that loading `path` throws ("" when none).
std::string load_error(const std::string& path) {
  try {
    (void)load_captured_node(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// ---- doctor --from on the P40 captures ---------------------------------------------------------

TEST(P40Doctor, EnvCaptureIsJudgedWithoutTheLiveFacts) {
  CapturedNode node = load_captured_node(data_path("p40_environment.json"));
  EXPECT_EQ(node.kind, CaptureKind::environment);
  EXPECT_FALSE(node.input.live.recorded);
  const auto checks = judge_captured_node(node);
  const std::string all = describe(checks);
  EXPECT_EQ(count_checks(checks).fail, 0) << all;
  // R580 is the last driver branch that supports Pascal, and CUDA 12.9 runs on its CUDA 13.0 driver API.
  const auto support = all_of(checks, "driver.gpu_support");
  ASSERT_EQ(support.size(), 4u) << all;
  for (const Check* c : support) EXPECT_NE(c->severity, Severity::fail) << c->summary;
  EXPECT_EQ(find_check(checks, "driver.cuda_runtime")->severity, Severity::ok) << all;
  // An env capture does not say which architectures the binary has.
  for (const Check* c : all_of(checks, "arch.binary")) {
    EXPECT_EQ(c->severity, Severity::info);
    EXPECT_TRUE(has(c->summary, "not known")) << c->summary;
  }
  // Captured at idle: Gen1 of Gen3 is information, not a fault.
  const auto links = all_of(checks, "pcie.link");
  ASSERT_EQ(links.size(), 4u);
  for (const Check* c : links) {
    EXPECT_EQ(c->severity, Severity::info) << c->summary;
    EXPECT_TRUE(has(c->summary, "Gen1 of Gen3")) << c->summary;
  }
  EXPECT_TRUE(has(find_check(checks, "p2p.access")->summary, "not recorded"));
}

TEST(P40Doctor, DoctorCaptureShowsNoPeerAccessAcrossSockets) {
  CapturedNode node = load_captured_node(data_path("p40_doctor.json"));
  EXPECT_EQ(node.kind, CaptureKind::doctor);
  EXPECT_TRUE(node.input.live.recorded);
  const auto checks = judge_captured_node(node);
  const std::string all = describe(checks);
  const CheckCounts n = count_checks(checks);
  EXPECT_EQ(n.fail, 0) << all;
  // The one warning: 2 x 2 GPU pairs cross the sockets (keep multi-GPU jobs within one).
  EXPECT_EQ(n.warn, 1) << all;
  const Check* topo = find_check(checks, "p2p.topology");
  ASSERT_NE(topo, nullptr);
  EXPECT_EQ(topo->severity, Severity::warn);
  EXPECT_TRUE(has(topo->summary, std::to_string(2 * 2) + " GPU pair(s) cross CPU sockets")) << topo->summary;
  // GPUs 0-1 on one socket, 2-3 on the other: 2 x 2 pairs across, both ways.
  const Check* p2p = find_check(checks, "p2p.access");
  ASSERT_NE(p2p, nullptr);
  EXPECT_EQ(p2p->severity, Severity::info);
  EXPECT_TRUE(has(p2p->summary, std::to_string(2 * 2 * 2) + " pair(s) across")) << p2p->summary;
  EXPECT_TRUE(has(p2p->evidence, "0->2 (SYS")) << p2p->evidence;
  EXPECT_FALSE(has(p2p->evidence, "0->1")) << "GPUs of one switch reach each other: " << p2p->evidence;
  // Links read under load at Gen3 x16, and sm_61 SASS for cc 6.1.
  for (const Check* c : all_of(checks, "pcie.link")) EXPECT_EQ(c->severity, Severity::ok) << c->summary;
  const auto arch = all_of(checks, "arch.binary");
  ASSERT_EQ(arch.size(), 4u);
  for (const Check* c : arch) EXPECT_EQ(c->severity, Severity::ok) << c->summary;
}

TEST(P40Doctor, SourcesAreDocumentsAUserCanFind) {
  // compat.json and frameworks.json name their sources; doctor prints them. A source is a public
  // document (release notes, support matrix, tested-configurations table), never a private note.
  CapturedNode node = load_captured_node(data_path("p40_doctor.json"));
  std::string all;
  for (const auto& c : judge_captured_node(node)) all += c.summary + "\n" + c.evidence + "\n" + c.fix + "\n";
  EXPECT_TRUE(has(all, "Source: ")) << all;
  EXPECT_TRUE(has(all, "tensorflow.org, 'Build from source', section 'Tested build configurations'")) << all;
  // And the data files themselves, printed or not (the thresholds' "why" included).
  all += std::string(kBuiltinCompatJson) + kBuiltinFrameworksJson + kBuiltinThresholdsJson + RuleData::builtin().arch_facts.dump();
  for (const char* private_note : {"FACTS.md", "/work/", "/shared/"}) EXPECT_FALSE(has(all, private_note)) << private_note;
}

TEST(P40Doctor, LibraryFixesNameVersionsWithTheCodeAndHoldThem) {
  CapturedNode node = load_captured_node(data_path("p40_environment.json"));
  json& sw = node.input.environment["software"];
  // An unpinned cudnn9-cuda-12 brings 9.11 or newer: no code below sm_75.
  sw["cudnn_version"] = "9.11.0";
  const auto checks = rule_libraries(node.input, RuleData::builtin());
  const Check* dnn = find_check(checks, "libs.cudnn", 0);
  ASSERT_NE(dnn, nullptr);
  EXPECT_EQ(dnn->severity, Severity::fail);
  // The pins come from arch_facts.json, the headers package included, and are held.
  const json& pins = RuleData::builtin().arch_facts.at("pins");
  EXPECT_TRUE(has(dnn->fix, pins.at("cudnn_debs_cuda12").get<std::string>())) << dnn->fix;
  EXPECT_TRUE(has(dnn->fix, "libcudnn9-headers-cuda-12=9.10.2.21-1")) << dnn->fix;
  EXPECT_TRUE(has(dnn->fix, "apt-mark hold")) << dnn->fix;
  EXPECT_TRUE(has(dnn->fix, "nvidia-cudnn-cu12==9.10.2.21")) << dnn->fix;
  EXPECT_FALSE(has(dnn->fix, "{pin.")) << "an unfilled pin: " << dnn->fix;
  // NCCL built with CUDA 12: 2.27.7 starts at sm_50, 2.28 on at sm_60 (sm_61 kept).
  auto nccl = [&](const std::string& version, const std::string& cc) {
    CapturedNode n = load_captured_node(data_path("p40_environment.json"));
    n.input.environment["software"]["nccl_version"] = version;
    for (auto& g : n.input.environment["gpus"]) g["compute_capability"] = cc;
    const auto c = rule_libraries(n.input, RuleData::builtin());
    return *find_check(c, "libs.nccl", 0);
  };
  EXPECT_EQ(nccl("2.32.3", "6.1").severity, Severity::ok);
  EXPECT_EQ(nccl("2.28.9", "6.0").severity, Severity::ok);
  const Check maxwell_new = nccl("2.28.9", "5.2");
  EXPECT_EQ(maxwell_new.severity, Severity::warn) << maxwell_new.summary;
  EXPECT_TRUE(has(maxwell_new.evidence, "starts at sm_60")) << maxwell_new.evidence;
  EXPECT_TRUE(has(maxwell_new.fix, "nvidia-nccl-cu12==2.27.7")) << maxwell_new.fix;
  EXPECT_EQ(nccl("2.27.7", "5.2").severity, Severity::ok);
  EXPECT_TRUE(has(nccl("2.27.7", "6.1").evidence, "2.27 and older")) << nccl("2.27.7", "6.1").evidence;
}

TEST(P40Doctor, EccSaysWhatItCostsAP40) {
  CapturedNode node = load_captured_node(data_path("p40_environment.json"));
  // 24,576 MiB with ECC off, 23,040 with it on: 1/16 of the GDDR5, 1,536 MiB.
  const double off_mib = 24576, on_mib = 23040;
  const std::string cost = "1,536 MiB of 24,576 MiB, 6.25%";
  ASSERT_DOUBLE_EQ(off_mib - on_mib, 1536);
  auto ecc_mode = [](const DoctorInput& in) { return *find_check(rule_ecc(in), "ecc.mode", 0); };
  const Check on = ecc_mode(node.input);
  EXPECT_EQ(on.severity, Severity::ok);
  EXPECT_TRUE(has(on.summary, cost)) << on.summary;
  for (auto& g : node.input.environment["gpus"]) g["ecc_enabled"] = false;
  const Check off = ecc_mode(node.input);
  EXPECT_EQ(off.severity, Severity::warn);
  EXPECT_TRUE(has(off.fix, cost)) << off.fix;
  EXPECT_FALSE(has(off.fix, "a few %")) << off.fix;
}

TEST(P40Doctor, MigIsNotApplicableOnceBelowCc80) {
  CapturedNode node = load_captured_node(data_path("p40_environment.json"));
  const auto checks = rule_mig(node.input);
  ASSERT_EQ(checks.size(), 1u) << describe(checks);
  EXPECT_FALSE(checks[0].gpu.has_value());
  EXPECT_TRUE(has(checks[0].summary, "not applicable")) << checks[0].summary;
  // A GPU of cc 8.0 or newer that does not report MIG is still reported on its own.
  node.input.environment["gpus"][3]["compute_capability"] = "9.0";
  const auto mixed = rule_mig(node.input);
  ASSERT_EQ(mixed.size(), 2u) << describe(mixed);
  EXPECT_TRUE(has(mixed[0].evidence, "0, 1, 2")) << mixed[0].evidence;
  EXPECT_EQ(mixed[1].gpu, 3);
  EXPECT_TRUE(has(mixed[1].summary, "not reported")) << mixed[1].summary;
}

TEST(P40Doctor, ClockAndPowerFixesWorkOnAP40) {
  CapturedNode node = load_captured_node(data_path("p40_environment.json"));
  for (auto& g : node.input.environment["gpus"]) g["throttle_reasons"] = json::array({"applications_clocks_setting"});
  const Check clocks = *find_check(rule_throttle(node.input), "gpu.throttle", 0);
  // -rac restores the 1303 MHz default application clock: the fix sets explicit ones instead.
  EXPECT_TRUE(has(clocks.fix, "-ac 3615,1531")) << clocks.fix;
  EXPECT_TRUE(has(clocks.fix, "nvidia-smi -rac is not the fix")) << clocks.fix;
  EXPECT_FALSE(has(clocks.fix, "resets application clocks")) << clocks.fix;
  for (auto& g : node.input.environment["gpus"]) g["throttle_reasons"] = json::array({"sw_power_cap"});
  const Check power = *find_check(rule_throttle(node.input), "gpu.throttle", 0);
  EXPECT_EQ(power.severity, Severity::warn);
  // The default limit is read before anyone is told to restore it.
  const size_t read = power.fix.find("power.default_limit"), set = power.fix.find("-pl ");
  ASSERT_NE(read, std::string::npos) << power.fix;
  ASSERT_NE(set, std::string::npos) << power.fix;
  EXPECT_LT(read, set) << power.fix;
}

TEST(P40Doctor, CrossSocketTopologyAdviceIsForCommunicationBoundJobs) {
  CapturedNode node = load_captured_node(data_path("p40_doctor.json"));
  const auto checks = judge_captured_node(node);
  const Check* topo = find_check(checks, "p2p.topology");
  ASSERT_NE(topo, nullptr);
  EXPECT_TRUE(has(topo->fix, "For communication-bound jobs")) << topo->fix;
  EXPECT_FALSE(has(topo->fix, "Place multi-GPU jobs on GPUs of one socket")) << topo->fix;
}

TEST(P40Doctor, ABuildWithoutSm61FailsWithTheFix) {
  CapturedNode node = load_captured_node(data_path("p40_environment.json"));
  // The architectures a CUDA 13 build carries by default: nothing a P40 can run.
  const auto checks = judge_captured_node(node, "75-real;80-real;86-real;89-real;90-real;100-real;120");
  const auto arch = all_of(checks, "arch.binary");
  ASSERT_EQ(arch.size(), 4u);
  for (const Check* c : arch) {
    EXPECT_EQ(c->severity, Severity::fail) << c->summary;
    EXPECT_TRUE(has(c->fix, "61-real")) << c->fix;
  }
  // The binary's own list, as given, replaces the recorded one.
  CapturedNode result = load_captured_node(data_path("p40_result.json"));
  EXPECT_EQ(result.kind, CaptureKind::result);
  EXPECT_EQ(result.input.cuda_architectures, "61-real");
  for (const Check* c : all_of(judge_captured_node(result), "arch.binary")) EXPECT_EQ(c->severity, Severity::ok) << c->summary;
}

TEST(DoctorFrom, BadFilesAreErrorsNamingTheFileAndField) {
  EXPECT_TRUE(has(load_error("/nonexistent/node.json"), "/nonexistent/node.json: cannot read the file"));
  EXPECT_TRUE(has(load_error(NB_TEST_OUTPUT_DIR), std::string(NB_TEST_OUTPUT_DIR) + ": is a folder"));
  const std::string not_json = temp_file("from_not_json.json", "{\"gpus\": [");
  EXPECT_TRUE(has(load_error(not_json), not_json + ": not valid JSON"));
  const std::string array = temp_file("from_array.json", "[1, 2]");
  EXPECT_TRUE(has(load_error(array), array + ": expected a JSON object"));
  const std::string other = temp_file("from_other.json", "{\"foo\": 1}");
  EXPECT_TRUE(has(load_error(other), "neither an `env --json` capture"));

  json env = read_json("p40_environment.json");
  auto with = [&](const std::string& name, const json& doc) { return load_error(temp_file(name, doc.dump())); };
  json bad = env;
  bad["gpus"] = "four";
  EXPECT_TRUE(has(with("from_gpus.json", bad), "'gpus' must be an array"));
  bad = env;
  bad["gpus"][1]["compute_capability"] = 6.1;
  EXPECT_TRUE(has(with("from_cc.json", bad), "'gpus[1].compute_capability' must be a string (found number)"));
  bad = env;
  bad["gpus"][2]["compute_capability"] = "six";
  EXPECT_TRUE(has(with("from_cc_text.json", bad), "'gpus[2].compute_capability' is not a compute capability"));
  bad = env;
  bad["gpus"][0]["pcie"]["gen_max"] = "3";
  EXPECT_TRUE(has(with("from_pcie.json", bad), "'gpus[0].pcie.gen_max' must be a number"));
  bad = env;
  bad["software"]["driver_version"] = 580;
  EXPECT_TRUE(has(with("from_driver.json", bad), "'software.driver_version' must be a string"));
  json result = read_json("p40_result.json");
  result["environment"]["gpus"][3]["sm_count"] = "thirty";
  EXPECT_TRUE(has(with("from_result.json", result), "'environment.gpus[3].sm_count' must be an integer"));
  json doctor = read_json("p40_doctor.json");
  doctor["live"]["p2p"] = "none";
  EXPECT_TRUE(has(with("from_live.json", doctor), "'live.p2p' must be an array"));
  doctor = read_json("p40_doctor.json");
  doctor.erase("environment");
  EXPECT_TRUE(has(with("from_noenv.json", doctor), "'environment' must be an object"));
  // A result or doctor report of a schema version this build does not read (docs/SCHEMA.md).
  result = read_json("p40_result.json");
  result["schema_version"] = 99;
  EXPECT_TRUE(has(with("from_v99.json", result), "'nodebench.result' schema_version 99: this nodebench reads version 1"));
  result["schema_version"] = "1";
  EXPECT_TRUE(has(with("from_v_text.json", result), "schema_version \"1\""));
  result.erase("schema_version");
  EXPECT_TRUE(has(with("from_v_none.json", result), "without 'schema_version'"));
  doctor = read_json("p40_doctor.json");
  doctor["schema_version"] = 2;
  EXPECT_TRUE(has(with("from_doctor_v2.json", doctor), "'nodebench.doctor' schema_version 2"));
  // An env capture has no schema: it is read as before.
  EXPECT_EQ(with("from_env.json", env), "");
}

TEST(DoctorFrom, CommandLine) {
  auto parse = [](std::vector<std::string> a) {
    a.insert(a.begin(), "nodebench");
    return parse_cli(a);
  };
  ParseOutcome p = parse({"doctor", "--from", "node.json", "--archs", "61-real"});
  ASSERT_TRUE(p.command);
  EXPECT_EQ(std::string(p.command->name()), "doctor");
  EXPECT_EQ(p.command->as<DoctorCommand>()->options.from, "node.json");
  EXPECT_EQ(p.command->as<DoctorCommand>()->options.archs, "61-real");
  p = parse({"doctor", "--archs", "61-real"});
  EXPECT_FALSE(p.command);
  EXPECT_EQ(p.exit_code, kExitUsage);
  EXPECT_TRUE(has(p.err, "--archs: needs --from")) << p.err;
  EXPECT_TRUE(has(p.err, "--from")) << "usage printed: " << p.err;
  p = parse({"doctor", "--from"});
  EXPECT_EQ(p.exit_code, kExitUsage);
}

// ---- validate's P40 thresholds -----------------------------------------------------------------

TEST(P40Validate, ThePreciseP40Thresholds) {
  const json doc = read_json("p40_result.json");
  const ProfileChoice p = resolve_profile("auto", doc["environment"]);
  for (int g = 0; g < 4; ++g) EXPECT_EQ(p.model.at(g), "Tesla P40");
  auto min_of = [&](const std::string& id) { return p.db.get(id, "Tesla P40")->min; };
  // SGEMM judged against the peak at the clock it ran at (the default 85%), the clock on its own.
  EXPECT_DOUBLE_EQ(min_of("gemm.fp32"), 85);
  EXPECT_EQ(p.db.get("gemm.fp32", "Tesla P40")->unit, "percent_of_peak");
  EXPECT_DOUBLE_EQ(min_of("gemm.clock"), 100);
  EXPECT_DOUBLE_EQ(min_of("memory.copy"), 75);
  EXPECT_DOUBLE_EQ(min_of("memory.triad"), 75);
  EXPECT_DOUBLE_EQ(min_of("hostlink.h2d"), 70);  // bandwidthTest H2D 11.8 GB/s = 75% of 15.75
  EXPECT_DOUBLE_EQ(min_of("hostlink.d2h"), 70);
  EXPECT_DOUBLE_EQ(min_of("p2p.pcie"), 70);      // the defaults
  EXPECT_DOUBLE_EQ(min_of("p2p.sys"), 30);
  EXPECT_FALSE(p.db.get("nccl.all_reduce.sys", "Tesla P40"));
  // The published bandwidthTest figure would fail the generic 80% but passes the P40's 70%.
  const double h2d_pct = 100 * 11.8 / (8.0 * 16 * 128 / 130 / 8);
  EXPECT_LT(h2d_pct, p.db.get("hostlink.h2d", "")->min);
  EXPECT_GE(h2d_pct, min_of("hostlink.h2d"));
}

TEST(P40Validate, AHealthyP40ResultPasses) {
  const json doc = read_json("p40_result.json");
  const ProfileChoice p = resolve_profile("auto", doc["environment"]);
  const std::vector<std::string> built = {"gemm", "memory", "hostlink", "p2p", "nccl"};
  const auto checks = judge_results(doc, p, 3, built, {0, 1, 2, 3});
  const std::string all = describe(checks);
  EXPECT_EQ(count_checks(checks).fail, 0) << all;
  const Check* gemm = find_check(checks, "gemm.fp32", 0);
  ASSERT_NE(gemm, nullptr) << all;
  EXPECT_EQ(gemm->severity, Severity::ok);
  // The SGEMM ran at the 1303 MHz base clock: judged against the FP32 peak there,
  // 30 SMs x 128 lanes x 2 x 1.303 GHz = 10.0 TFLOPS, not the 11.76 of the boost clock.
  double tflops = 0;
  for (const auto& r : doc["records"])
    if (r["id"] == "gemm/fp32/cublas/square_8192") tflops = r["metrics"]["tflops"].get<double>();
  const double at_base = 30 * 128 * 2 * 1.303e9 / 1e12;
  EXPECT_NEAR(*gemm->value, 100 * tflops / at_base, 0.05);  // the profile's 11.76 is rounded: 0.02 points apart
  EXPECT_TRUE(has(gemm->evidence, "1303 MHz it ran at")) << gemm->evidence;
  // Against the boost peak the same healthy SGEMM is below 80%: the old rule failed it.
  EXPECT_LT(100 * tflops / 11.76, 80.0);
  const Check* clock = find_check(checks, "gemm.clock", 0);
  ASSERT_NE(clock, nullptr) << all;
  EXPECT_EQ(clock->severity, Severity::ok) << clock->summary;
  EXPECT_NEAR(*clock->value, 100.0, 1e-9);
  EXPECT_NEAR(*find_check(checks, "memory.copy", 0)->value, 100 * 284.0 / 346, 0.01);
  for (int g = 0; g < 4; ++g) {
    const Check* h2d = find_check(checks, "hostlink.h2d", g);
    ASSERT_NE(h2d, nullptr) << all;
    EXPECT_EQ(h2d->severity, Severity::ok) << h2d->summary;
    EXPECT_NEAR(*h2d->value, 100 * 11.84 / 15.754, 0.05);
  }
  // Peers on one switch judged as PCIe; the pairs across sockets have no peer access: not judged.
  const Check* near = find_check(checks, "p2p.pcie", 0);
  ASSERT_NE(near, nullptr) << all;
  EXPECT_EQ(near->severity, Severity::ok);
  EXPECT_EQ(near->peer, 1);
  for (const auto& c : checks)
    if (c.id == "p2p.sys") EXPECT_TRUE(c.skipped) << c.summary;
  // The four-GPU all-reduce crosses the sockets: no threshold for that link class.
  const Check* ar = find_check(checks, "nccl.all_reduce.sys");
  ASSERT_NE(ar, nullptr) << all;
  EXPECT_TRUE(ar->skipped);
  EXPECT_TRUE(has(ar->summary, "no threshold")) << ar->summary;
}

TEST(P40Validate, SgemmIsJudgedAtItsClockAndTheClockOnItsOwn) {
  const json base_doc = read_json("p40_result.json");
  const ProfileChoice profile = resolve_profile("auto", base_doc["environment"]);
  auto judge = [&](double sm_mhz, double pct_at_clock) {
    json doc = base_doc;
    for (auto& r : doc["records"])
      if (r["id"] == "gemm/fp32/cublas/square_8192") {
        const double at_clock = 11.76 * sm_mhz / 1531;
        r["metrics"]["tflops"] = at_clock * pct_at_clock / 100;
        r["clocks"]["sm_mhz_during"] = sm_mhz;
        json& p = r["percent_of_peak"];
        p["sm_mhz"] = sm_mhz;
        p["peak_at_clock"] = at_clock;
        p["percent"] = 100 * at_clock * pct_at_clock / 100 / 11.76;
        p["percent_at_clock"] = pct_at_clock;
      }
    return judge_results(doc, profile, 2, {"gemm"}, {0});
  };
  // At its clock: 86% passes, 84% fails, whatever the clock.
  for (double mhz : {1303.0, 1531.0})
    for (double pct : {84.0, 86.0})
      EXPECT_EQ(find_check(judge(mhz, pct), "gemm.fp32", 0)->severity, pct < 85 ? Severity::fail : Severity::ok)
          << mhz << " MHz, " << pct << "%";
  // Below the 1303 MHz base clock: a cooling or power finding, with the clock and what the GPU said.
  const auto slow = judge(1202, 93);
  const Check* clock = find_check(slow, "gemm.clock", 0);
  ASSERT_NE(clock, nullptr);
  EXPECT_EQ(clock->severity, Severity::fail);
  EXPECT_NEAR(*clock->value, 100 * 1202.0 / 1303, 1e-9);
  EXPECT_TRUE(has(clock->evidence, "SM clock 1202 MHz")) << clock->evidence;
  EXPECT_TRUE(has(clock->evidence, "base clock 1303 MHz")) << clock->evidence;
  EXPECT_TRUE(has(clock->evidence, "sw_power_cap")) << clock->evidence;
  EXPECT_TRUE(has(clock->fix, "cooling or power")) << clock->fix;
  EXPECT_EQ(find_check(slow, "gemm.fp32", 0)->severity, Severity::ok);  // its arithmetic is fine
  EXPECT_EQ(find_check(judge(1303, 93), "gemm.clock", 0)->severity, Severity::ok);
  // Without a recorded clock the GEMM falls back to the peak's own clock, and says so.
  json doc = base_doc;
  for (auto& r : doc["records"])
    if (r["id"] == "gemm/fp32/cublas/square_8192") {
      for (const char* k : {"sm_mhz", "peak_at_clock", "percent_at_clock", "peak_clock_mhz"}) r["percent_of_peak"].erase(k);
      r["clocks"] = json::object();
    }
  const auto no_clock = judge_results(doc, profile, 2, {"gemm"}, {0});
  EXPECT_TRUE(has(find_check(no_clock, "gemm.fp32", 0)->evidence, "not recorded")) << find_check(no_clock, "gemm.fp32", 0)->evidence;
  EXPECT_TRUE(find_check(no_clock, "gemm.clock", 0)->skipped);
}
