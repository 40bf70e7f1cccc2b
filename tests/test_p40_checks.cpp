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
  EXPECT_TRUE(has(load_error("/nonexistent/node.json"), "/nonexistent/node.json: cannot be read"));
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
  EXPECT_DOUBLE_EQ(min_of("gemm.fp32"), 80);     // SGEMM near the 1303 MHz base clock: 85% of boost
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
  EXPECT_NEAR(*gemm->value, 100 * 10.4 / 11.76, 0.01);
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

TEST(P40Validate, SgemmBelowTheBaseClockRateFails) {
  json doc = read_json("p40_result.json");
  // 79% of 11.76 TFLOPS: below even the base clock's 85% of boost, with margin -> fail; 80% passes.
  for (double pct : {79.0, 80.0})
    for (auto& r : doc["records"])
      if (r["id"] == "gemm/fp32/cublas/square_8192") {
        r["metrics"]["tflops"] = 11.76 * pct / 100;
        r["percent_of_peak"]["percent"] = pct;
        const auto checks = judge_results(doc, resolve_profile("auto", doc["environment"]), 2, {"gemm"}, {0});
        EXPECT_EQ(find_check(checks, "gemm.fp32", 0)->severity, pct < 80 ? Severity::fail : Severity::ok) << pct;
      }
}
