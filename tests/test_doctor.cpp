// The doctor's rules on recorded environments: the real H200 capture and fixtures derived from it
// (tests/data/doctor/make_fixtures.py), each with the verdict and fix it must give.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include "check/doctor.hpp"
#include "run/header.hpp"

using namespace nb;
using nlohmann::json;

namespace {

const char* kCuda13Archs = "75-real;80-real;86-real;87-real;88-real;89-real;90-real;100-real;103-real;110-real;120-real;121";

json read_json(const std::string& rel) {
  std::ifstream f(std::string(NB_TEST_DATA_DIR) + "/" + rel);
  EXPECT_TRUE(f.good()) << rel;
  return json::parse(f);
}

DoctorInput fixture(const std::string& name) { return DoctorInput::from_json(read_json("doctor/" + name)); }

DoctorInput h200_as_captured() {
  DoctorInput in;
  in.environment = read_json("h200_environment.json");
  in.cuda_architectures = kCuda13Archs;
  return in;  // live facts not recorded
}

const Check& get(const std::vector<Check>& checks, const std::string& id, std::optional<int> gpu = std::nullopt) {
  const Check* c = find_check(checks, id, gpu);
  if (!c) {
    static Check missing;
    missing.id = "MISSING " + id;
    missing.severity = Severity::ok;
    ADD_FAILURE() << "no check " << id;
    return missing;
  }
  return *c;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string dump(const std::vector<Check>& checks) {
  std::ostringstream os;
  print_checks(checks, os);
  return os.str();
}

}  // namespace

TEST(DoctorVersions, ParseAndCompare) {
  EXPECT_EQ(parse_version("580.159.04"), (std::vector<int>{580, 159, 4}));
  EXPECT_EQ(parse_version("13.0"), (std::vector<int>{13, 0}));
  EXPECT_EQ(parse_version("9.14.0-rc"), (std::vector<int>{9, 14, 0}));
  EXPECT_TRUE(parse_version("abc").empty());
  EXPECT_LT(compare_versions(parse_version("525.60.12"), parse_version("525.60.13")), 0);
  EXPECT_EQ(compare_versions(parse_version("580"), parse_version("580.00")), 0);
  EXPECT_GT(compare_versions(parse_version("9.10.2"), parse_version("9.9")), 0);
  EXPECT_EQ(parse_cc("6.1"), 61);
  EXPECT_EQ(parse_cc("12.1"), 121);
  EXPECT_FALSE(parse_cc("6").has_value());
  EXPECT_EQ(cc_string(121), "12.1");
}

TEST(DoctorArch, ParsesCmakeTorchAndTensorflowNotations) {
  bool unknown = true;
  auto a = parse_arch_list("75-real;90;120-virtual;90a-real", &unknown);
  EXPECT_FALSE(unknown);
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(a[0].cc, 75);
  EXPECT_TRUE(a[0].sass);
  EXPECT_FALSE(a[0].ptx);
  const auto t = parse_arch_list("5.0;6.0;9.0+PTX");
  ASSERT_EQ(t.size(), 3u);
  EXPECT_TRUE(t[2].sass && t[2].ptx);
  EXPECT_FALSE(t[1].ptx);
  const auto f = parse_arch_list("sm_60,sm_89,compute_90");
  ASSERT_EQ(f.size(), 3u);
  EXPECT_TRUE(f[2].ptx && !f[2].sass);
  parse_arch_list("native", &unknown);
  EXPECT_TRUE(unknown);
}

// The table of the one build-architectures rule (node/arch_rule.hpp).
TEST(DoctorArch, TheSharedTableOfVerdicts) {
  const json table = read_json("arch_rule.json");
  ASSERT_GE(table["cases"].size(), 10u);
  for (const json& c : table["cases"]) {
    const std::string cc = c["cc"];
    const int value = std::stoi(cc.substr(0, cc.find('.'))) * 10 + std::stoi(cc.substr(cc.find('.') + 1));
    const ArchFit fit = match_arch(parse_arch_list(c["archs"].get<std::string>()), value).fit;
    const std::string code = fit == ArchFit::native ? "native" : fit == ArchFit::jit ? "jit" : "none";
    EXPECT_EQ(code, c["code"].get<std::string>()) << c.dump();
  }
}

// The verdict a run records per GPU (environment.gpus[].build_support) is the same rule's: each
// case of the table as sass, ptx or none, and the words the reports' checklist shows.
TEST(DoctorArch, TheRecordedVerdictFollowsTheTable) {
  const json table = read_json("arch_rule.json");
  const std::map<std::string, std::string> status{{"native", "sass"}, {"jit", "ptx"}, {"none", "none"}};
  for (const json& c : table["cases"]) {
    const std::string cc = c["cc"];
    const int value = std::stoi(cc.substr(0, cc.find('.'))) * 10 + std::stoi(cc.substr(cc.find('.') + 1));
    const BuildSupport b = build_support(c["archs"].get<std::string>(), value);
    EXPECT_EQ(b.status, status.at(c["code"].get<std::string>())) << c.dump();
    EXPECT_EQ(b.arch.empty(), b.status == "none") << c.dump();
  }
  auto words = [](const std::string& archs, int cc) { return build_support(archs, cc).reason; };
  EXPECT_EQ(words("61-real", 61), "native code (sm_61)");
  EXPECT_EQ(words("60-real;70", 61), "binary-compatible code (sm_60 runs on 6.1)");
  EXPECT_EQ(words("90a-real", 90), "native code (sm_90a)");
  EXPECT_EQ(words("compute_70", 75),
            "only PTX (compute_70), JIT-compiled at start-up: slower start, may miss 7.5 features");
  EXPECT_EQ(words("75-real;80-real;90-real;90", 61), "no code for this GPU in the build");
  const BuildSupport native = build_support("native", 90);
  EXPECT_EQ(native.status, "unknown");
  EXPECT_NE(native.reason.find("'native'"), std::string::npos);
  EXPECT_EQ(build_support_json(build_support("70-real", 61)), json::parse(R"({"status": "none", "arch": null,
            "reason": "no code for this GPU in the build"})"));
}

// Every GPU of the run's environment, and of each host's under MPI, gets the verdict for its own
// compute capability; a GPU without one is left as it is.
TEST(DoctorArch, TheRunHeaderRecordsTheVerdictPerGpu) {
  const json env = json::parse(R"({"gpus": [{"index": 0, "compute_capability": "6.1"},
                                            {"index": 1, "compute_capability": "9.0"}, {"index": 2}],
                                   "nodes": [{"environment": {"gpus": [{"compute_capability": "9.0"}]}}]})");
  const json out = with_build_support(env, "61-real;90-virtual");
  EXPECT_EQ(out["gpus"][0]["build_support"]["status"], "sass");
  EXPECT_EQ(out["gpus"][0]["build_support"]["arch"], "sm_61");
  EXPECT_EQ(out["gpus"][1]["build_support"]["status"], "ptx");
  EXPECT_EQ(out["gpus"][1]["build_support"]["arch"], "compute_90");
  EXPECT_FALSE(out["gpus"][2].contains("build_support"));
  EXPECT_EQ(out["nodes"][0]["environment"]["gpus"][0]["build_support"]["status"], "ptx");
  EXPECT_EQ(with_build_support(env, "70-real")["gpus"][1]["build_support"]["status"], "none");
}

TEST(DoctorArch, SassOfTheSameMajorWithLowerMinorOrOlderPtx) {
  const auto archs = parse_arch_list(kCuda13Archs);
  EXPECT_EQ(match_arch(archs, 90).fit, ArchFit::native);
  EXPECT_EQ(match_arch(archs, 90).via, 90);
  EXPECT_EQ(match_arch(archs, 86).via, 86);
  EXPECT_EQ(match_arch(archs, 61).fit, ArchFit::none);  // PTX 121 is newer than 6.1
  EXPECT_EQ(match_arch(archs, 70).fit, ArchFit::none);
  const auto torch = parse_arch_list("5.0;6.0;7.0;7.5;8.0;8.6;9.0");
  EXPECT_EQ(match_arch(torch, 61).fit, ArchFit::native);  // sm_60 SASS runs on 6.1
  EXPECT_EQ(match_arch(torch, 61).via, 60);
  EXPECT_EQ(match_arch(torch, 89).via, 86);
  EXPECT_EQ(match_arch(torch, 100).fit, ArchFit::none);  // no PTX
  const auto tf = parse_arch_list("sm_60,sm_70,sm_80,sm_89,compute_90");
  EXPECT_EQ(match_arch(tf, 90).fit, ArchFit::jit);
  EXPECT_EQ(match_arch(tf, 120).fit, ArchFit::jit);
  const auto specific = parse_arch_list("90a-real");
  EXPECT_EQ(match_arch(specific, 90).fit, ArchFit::native);
  EXPECT_EQ(match_arch(specific, 91).fit, ArchFit::none);
}

TEST(Doctor, RealH200CaptureHasNoProblem) {
  const auto checks = run_doctor_rules(h200_as_captured());
  const CheckCounts n = count_checks(checks);
  EXPECT_EQ(n.fail, 0) << dump(checks);
  EXPECT_EQ(n.warn, 0) << dump(checks);
  EXPECT_EQ(get(checks, "driver.cuda_runtime").severity, Severity::ok);
  EXPECT_TRUE(has(get(checks, "driver.cuda_runtime").summary, "580.159.04"));
  EXPECT_EQ(get(checks, "arch.binary", 0).severity, Severity::ok);
  EXPECT_TRUE(has(get(checks, "arch.binary", 0).summary, "sm_90"));
  for (const char* id : {"libs.cublas", "libs.cudnn", "libs.nccl", "pcie.link", "ecc.mode", "gpu.persistence",
                         "gpu.throttle", "gpu.thermal", "driver.gpu_support", "gpu.mig"})
    EXPECT_EQ(get(checks, id, 0).severity, Severity::ok) << id;
  // Live facts were not recorded: those checks say so instead of guessing.
  EXPECT_EQ(get(checks, "ecc.errors", 0).severity, Severity::info);
  EXPECT_EQ(get(checks, "gpu.processes", 0).severity, Severity::info);
  const Check& pt = get(checks, "frameworks.pytorch");
  EXPECT_EQ(pt.severity, Severity::info);
  for (const char* tag : {"cu118", "cu126", "cu128", "cu129", "cu130"}) EXPECT_TRUE(has(pt.summary, tag)) << pt.summary;
  EXPECT_TRUE(has(pt.fix, "whl/cu130"));
  const Check& tf = get(checks, "frameworks.tensorflow");
  EXPECT_TRUE(has(tf.summary, "2.21"));
  // An H200 runs the cuDNN pip resolves: no pin in its install line.
  EXPECT_EQ(tf.fix, "pip install 'tensorflow[and-cuda]==2.21.*'");
}

TEST(Doctor, HealthyH200FixturePasses) {
  const auto checks = run_doctor_rules(fixture("h200_healthy.json"));
  const CheckCounts n = count_checks(checks);
  EXPECT_EQ(n.fail, 0) << dump(checks);
  EXPECT_EQ(n.warn, 0) << dump(checks);
  EXPECT_EQ(get(checks, "ecc.errors", 0).severity, Severity::ok);
  EXPECT_EQ(get(checks, "ecc.retired", 0).severity, Severity::ok);
  EXPECT_EQ(get(checks, "gpu.processes", 0).severity, Severity::ok);
  EXPECT_EQ(get(checks, "gpu.visibility").severity, Severity::ok);
  EXPECT_TRUE(has(get(checks, "pcie.link", 0).evidence, "under load"));
  EXPECT_EQ(get(checks, "p2p.access").severity, Severity::ok);
  EXPECT_EQ(get(checks, "p2p.iommu").severity, Severity::ok);
}

TEST(Doctor, P40WithCuda13LibrariesFailsWithTheCuda12Fix) {
  const auto checks = run_doctor_rules(fixture("p40_cuda13.json"));
  const Check& arch = get(checks, "arch.binary", 0);
  EXPECT_EQ(arch.severity, Severity::fail);
  EXPECT_TRUE(has(arch.summary, "cc 6.1")) << arch.summary;
  EXPECT_TRUE(has(arch.fix, "CUDA 12")) << arch.fix;
  EXPECT_TRUE(has(arch.fix, "61-real")) << arch.fix;
  const Check& blas = get(checks, "libs.cublas", 0);
  EXPECT_EQ(blas.severity, Severity::fail);
  EXPECT_TRUE(has(blas.summary, "needs 7.5")) << blas.summary;
  EXPECT_TRUE(has(blas.fix, "12.9")) << blas.fix;
  const Check& dnn = get(checks, "libs.cudnn", 0);
  EXPECT_EQ(dnn.severity, Severity::fail);
  EXPECT_TRUE(has(dnn.fix, "9.10.2")) << dnn.fix;
  const Check& nccl = get(checks, "libs.nccl", 0);
  EXPECT_EQ(nccl.severity, Severity::warn);  // NCCL's CUDA is inferred, not read
  EXPECT_TRUE(has(nccl.fix, "cu12")) << nccl.fix;
  const Check& branch = get(checks, "driver.gpu_support", 0);
  EXPECT_EQ(branch.severity, Severity::info);
  EXPECT_TRUE(has(branch.summary, "R580")) << branch.summary;
  EXPECT_TRUE(has(branch.summary, "Pascal"));
  EXPECT_EQ(get(checks, "driver.cuda_runtime").severity, Severity::ok);
  EXPECT_EQ(get(checks, "pcie.link", 0).severity, Severity::ok);  // Gen3 x16 under load, although Gen1 at idle
  const Check& pt = get(checks, "frameworks.pytorch");
  EXPECT_TRUE(has(pt.summary, "cu126")) << pt.summary;
  EXPECT_FALSE(has(pt.summary, "cu128")) << pt.summary;
  EXPECT_FALSE(has(pt.summary, "cu130")) << pt.summary;
  EXPECT_TRUE(has(pt.evidence, "cu128 (CUDA 12.8, torch 2.7 and newer): no - no code for cc 6.1")) << pt.evidence;
  // 2.15 removed the cu126 builds with Pascal: 2.14 is the last release that runs on a P40.
  EXPECT_TRUE(has(pt.evidence, "cu126 (CUDA 12.6, torch 2.6 to 2.14): runs")) << pt.evidence;
  // TensorFlow's advice for a P40: the cuDNN pip resolves has dropped cc 6.1, so the install line
  // pins the last cuDNN wheel that carries it, and the evidence says what pip really brings.
  const Check& tf = get(checks, "frameworks.tensorflow");
  EXPECT_TRUE(has(tf.summary, "2.21"));
  EXPECT_EQ(tf.fix, "pip install 'tensorflow[and-cuda]==2.21.*' 'nvidia-cudnn-cu12==9.10.2.21'");
  EXPECT_TRUE(has(tf.evidence, "which pip resolves to the newest 9.x wheel (9.28.0.42")) << tf.evidence;
  EXPECT_TRUE(has(tf.evidence, "below cc 7.5, so the install line pins nvidia-cudnn-cu12==9.10.2.21")) << tf.evidence;
  EXPECT_FALSE(has(tf.evidence, "bring the tested cuDNN themselves")) << tf.evidence;
}

TEST(Doctor, PascalOnADriverBranchAfterR580Fails) {
  DoctorInput in = fixture("p40_cuda13.json");
  in.environment["software"]["driver_version"] = "590.10.01";
  const auto checks = rule_driver_gpu_support(in, RuleData::builtin());
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0].severity, Severity::fail);
  EXPECT_TRUE(has(checks[0].fix, "R580"));
  // Since R560 the packages install the open kernel modules by default, which cannot drive
  // Pascal: the fix names the proprietary ones and warns off the -open package.
  EXPECT_TRUE(has(checks[0].fix, "proprietary kernel modules")) << checks[0].fix;
  EXPECT_TRUE(has(checks[0].fix, "nvidia-driver-580 (not nvidia-driver-580-open)")) << checks[0].fix;
  EXPECT_TRUE(has(checks[0].fix, "only one still maintained")) << checks[0].fix;
  // On R580 itself the pin advice names the flavour too.
  in.environment["software"]["driver_version"] = "580.95.05";
  const auto on580 = rule_driver_gpu_support(in, RuleData::builtin());
  ASSERT_EQ(on580.size(), 1u);
  EXPECT_EQ(on580[0].severity, Severity::info);
  EXPECT_TRUE(has(on580[0].fix, "proprietary kernel modules")) << on580[0].fix;
  EXPECT_FALSE(has(on580[0].fix, "580 meta-package")) << on580[0].fix;  // the old advice, which installs -open
}

TEST(Doctor, KeplerPastItsLastBranchIsNotToldR580IsMaintained) {
  DoctorInput in = fixture("p40_cuda13.json");
  in.environment["software"]["driver_version"] = "535.288.01";
  for (auto& g : in.environment["gpus"]) g["compute_capability"] = "3.7";
  const auto checks = rule_driver_gpu_support(in, RuleData::builtin());
  ASSERT_FALSE(checks.empty());
  EXPECT_EQ(checks[0].severity, Severity::fail);
  EXPECT_TRUE(has(checks[0].fix, "R470")) << checks[0].fix;
  EXPECT_FALSE(has(checks[0].fix, "still maintained")) << checks[0].fix;
  EXPECT_FALSE(has(checks[0].fix, "proprietary")) << checks[0].fix;
}

TEST(Doctor, LinkAtX8UnderLoadFails) {
  const auto checks = run_doctor_rules(fixture("h200_link_x8.json"));
  const Check& c = get(checks, "pcie.link", 0);
  EXPECT_EQ(c.severity, Severity::fail);
  EXPECT_TRUE(has(c.summary, "x8 of x16")) << c.summary;
  EXPECT_TRUE(has(c.evidence, "under load")) << c.evidence;
  EXPECT_TRUE(has(c.fix, "Reseat")) << c.fix;
  // The same link read at idle only warns, and says to read it under load.
  DoctorInput idle = fixture("h200_link_x8.json");
  idle.environment["gpus"][0]["pcie"]["width_current"] = 8;
  idle.live.gpus[0].pcie_loaded.reset();
  EXPECT_EQ(rule_pcie(idle)[0].severity, Severity::warn);
  // A lower generation at idle is normal power saving.
  DoctorInput gen = h200_as_captured();
  gen.environment["gpus"][0]["pcie"]["gen_current"] = 1;
  EXPECT_EQ(rule_pcie(gen)[0].severity, Severity::info);
}

TEST(Doctor, GpuHiddenByCudaVisibleDevicesWarns) {
  const DoctorInput in = fixture("hidden_gpu_cvd.json");
  const auto checks = run_doctor_rules(in);
  const Check& v = get(checks, "gpu.visibility");
  EXPECT_EQ(v.severity, Severity::warn);
  EXPECT_TRUE(has(v.summary, "3 of the 4")) << v.summary;
  EXPECT_TRUE(has(v.summary, "hides 1")) << v.summary;
  EXPECT_TRUE(has(v.fix, "CUDA_VISIBLE_DEVICES")) << v.fix;
  // GPU 2 is on the other socket: its pairs cannot reach each other (expected there), and the
  // topology warns; the IOMMU translates.
  EXPECT_EQ(get(checks, "p2p.access").severity, Severity::info);
  const Check& topo = get(checks, "p2p.topology");
  EXPECT_EQ(topo.severity, Severity::warn);
  EXPECT_TRUE(has(topo.evidence, "(0,2)") && has(topo.evidence, "(1,2)")) << topo.evidence;
  EXPECT_TRUE(has(topo.fix, "numactl"));
  const Check& iommu = get(checks, "p2p.iommu");
  EXPECT_EQ(iommu.severity, Severity::warn);
  EXPECT_TRUE(has(iommu.fix, "iommu=pt")) << iommu.fix;
  EXPECT_EQ(get(checks, "gpu.device_order").severity, Severity::info);
  // A blocked pair under one switch is a problem.
  DoctorInput blocked = in;
  blocked.live.p2p[0][1] = false;
  const auto p = rule_p2p(blocked);
  EXPECT_EQ(p[0].severity, Severity::warn);
  EXPECT_TRUE(has(p[0].evidence, "0->1 (PIX")) << p[0].evidence;
  // ACS redirect above a GPU.
  DoctorInput acs = in;
  acs.live.iommu_groups = 0;
  acs.live.gpus[1].acs_redirect = true;
  acs.live.gpus[1].acs_evidence = "ACS on 1 bridge(s) above 0000:38:00.0: redirect on 0000:37:00.0 ctrl 0x1d";
  const auto a = rule_iommu(acs);
  EXPECT_EQ(a[0].severity, Severity::warn);
  EXPECT_TRUE(has(a[0].summary, "ACS")) << a[0].summary;
}

TEST(Doctor, GpuTheDriverListsButCudaCannotUseFails) {
  const auto checks = run_doctor_rules(fixture("hidden_gpu_lost.json"));
  const Check& v = get(checks, "gpu.visibility");
  EXPECT_EQ(v.severity, Severity::fail);
  EXPECT_TRUE(has(v.summary, "1 of the 4")) << v.summary;
  EXPECT_TRUE(has(v.fix, "Xid")) << v.fix;
}

TEST(Doctor, EccErrorsFailWithDrainAndReset) {
  const auto checks = run_doctor_rules(fixture("h200_ecc_errors.json"));
  const Check& e = get(checks, "ecc.errors", 0);
  EXPECT_EQ(e.severity, Severity::fail);
  EXPECT_TRUE(has(e.summary, "2 uncorrectable")) << e.summary;
  EXPECT_TRUE(has(e.fix, "RMA")) << e.fix;
  const Check& r = get(checks, "ecc.retired", 0);
  EXPECT_EQ(r.severity, Severity::fail);
  EXPECT_TRUE(has(r.fix, "nvidia-smi -r -i 0")) << r.fix;
  // Corrected errors alone are information.
  DoctorInput in = fixture("h200_ecc_errors.json");
  in.live.gpus[0].ecc.volatile_uncorrected = 0;
  in.live.gpus[0].ecc.aggregate_uncorrected = 0;
  EXPECT_EQ(find_check(rule_ecc(in), "ecc.errors")->severity, Severity::info);
  in.live.gpus[0].ecc.aggregate_uncorrected = 3;
  EXPECT_EQ(find_check(rule_ecc(in), "ecc.errors")->severity, Severity::warn);
}

TEST(Doctor, ThermalSlowdownFailsWithCoolingFix) {
  const auto checks = run_doctor_rules(fixture("h200_throttled.json"));
  const Check& t = get(checks, "gpu.throttle", 0);
  EXPECT_EQ(t.severity, Severity::fail);
  EXPECT_TRUE(has(t.summary, "thermal")) << t.summary;
  EXPECT_TRUE(has(t.evidence, "hw_thermal_slowdown")) << t.evidence;
  EXPECT_TRUE(has(t.fix, "cooling")) << t.fix;
  EXPECT_EQ(get(checks, "gpu.thermal", 0).severity, Severity::warn);
  // A power brake is named as such.
  DoctorInput in = fixture("h200_throttled.json");
  in.environment["gpus"][0]["throttle_reasons"] = json::array({"hw_power_brake_slowdown"});
  in.live.gpus[0].throttle_mask_loaded.reset();
  const auto b = rule_throttle(in);
  EXPECT_EQ(b[0].severity, Severity::fail);
  EXPECT_TRUE(has(b[0].fix, "power supplies"));
}

TEST(Doctor, DriverTooOldForTheRuntimeFails) {
  DoctorInput in = h200_as_captured();
  in.environment["software"]["driver_version"] = "570.86.15";
  in.environment["software"]["cuda_driver_version"] = "12.8";
  const auto c = rule_driver_runtime(in, RuleData::builtin());
  EXPECT_EQ(c[0].severity, Severity::fail);
  EXPECT_TRUE(has(c[0].summary, "too old for CUDA 13.0")) << c[0].summary;
  EXPECT_TRUE(has(c[0].fix, ">= 580")) << c[0].fix;
}

TEST(Doctor, MinorVersionCompatibilityWarnsAndBlocksPtxJit) {
  DoctorInput in = h200_as_captured();
  in.environment["software"]["cuda_runtime_version"] = "12.9";
  in.environment["software"]["driver_version"] = "535.104.05";
  in.environment["software"]["cuda_driver_version"] = "12.2";
  const auto c = rule_driver_runtime(in, RuleData::builtin());
  EXPECT_EQ(c[0].severity, Severity::warn);
  EXPECT_TRUE(has(c[0].fix, "cannot be JIT-compiled")) << c[0].fix;
  in.cuda_architectures = "80-real;86";  // cc 9.0 only by PTX JIT, which this driver cannot do for 12.9 PTX
  EXPECT_EQ(rule_arch_binary(in, RuleData::builtin())[0].severity, Severity::fail);
  in.environment["software"]["driver_version"] = "520.61.05";  // below 525.60.13
  EXPECT_EQ(rule_driver_runtime(in, RuleData::builtin())[0].severity, Severity::fail);
}

TEST(Doctor, NoGpuAndNoDriverExplainsItself) {
  DoctorInput in;
  in.environment = read_json("h200_environment.json");
  in.environment["gpus"] = json::array();
  in.environment["cuda_error"] = "cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version";
  in.environment["nvml"] = {{"available", false}, {"error", "libnvidia-ml.so.1 not loadable"}};
  in.environment["software"]["driver_version"] = nullptr;
  in.environment["software"]["cuda_driver_version"] = nullptr;
  in.cuda_architectures = kCuda13Archs;
  in.live.recorded = true;  // and /proc/driver/nvidia/version was absent
  const auto checks = run_doctor_rules(in);
  const Check& d = get(checks, "driver.cuda_runtime");
  EXPECT_EQ(d.severity, Severity::fail);
  EXPECT_TRUE(has(d.summary, "no NVIDIA driver is loaded")) << d.summary;
  EXPECT_EQ(get(checks, "gpu.visibility").severity, Severity::fail);
  EXPECT_EQ(get(checks, "nvml.available").severity, Severity::warn);
  EXPECT_EQ(find_check(checks, "arch.binary"), nullptr);  // nothing per GPU
}

TEST(Doctor, OtherProcessesOnTheGpuWarn) {
  DoctorInput in = fixture("h200_healthy.json");
  in.live.gpus[0].processes = std::vector<ProcessUse>{{4242, 1ull << 30}, {999, 3ull << 30}};
  in.live.gpus[0].process_names = {"nodebench", "python3"};
  const auto c = rule_processes(in);
  EXPECT_EQ(c[0].severity, Severity::warn);
  EXPECT_TRUE(has(c[0].evidence, "pid 999 (python3, 3.0 GiB)")) << c[0].evidence;
  EXPECT_FALSE(has(c[0].evidence, "4242"));  // its own pid is not another process
}

TEST(Doctor, PersistenceOffAndEccOffWarn) {
  DoctorInput in = h200_as_captured();
  in.environment["gpus"][0]["persistence_mode"] = false;
  in.environment["gpus"][0]["ecc_enabled"] = false;
  const auto checks = run_doctor_rules(in);
  EXPECT_EQ(get(checks, "gpu.persistence", 0).severity, Severity::warn);
  EXPECT_TRUE(has(get(checks, "gpu.persistence", 0).fix, "nvidia-persistenced"));
  EXPECT_EQ(get(checks, "ecc.mode", 0).severity, Severity::warn);
}

TEST(Doctor, EveryProblemHasEvidenceAndAFix) {
  for (const char* f : {"h200_healthy.json", "p40_cuda13.json", "h200_link_x8.json", "hidden_gpu_cvd.json",
                        "hidden_gpu_lost.json", "h200_ecc_errors.json", "h200_throttled.json"}) {
    for (const auto& c : run_doctor_rules(fixture(f))) {
      EXPECT_FALSE(c.id.empty());
      EXPECT_FALSE(c.summary.empty()) << f << " " << c.id;
      if (c.severity == Severity::warn || c.severity == Severity::fail) {
        EXPECT_FALSE(c.evidence.empty()) << f << " " << c.id;
        EXPECT_FALSE(c.fix.empty()) << f << " " << c.id;
      }
    }
  }
}

TEST(Doctor, AcsControlFromConfigurationSpace) {
  std::vector<unsigned char> cfg(4096, 0);
  auto put32 = [&](size_t o, unsigned v) {
    for (int i = 0; i < 4; ++i) cfg[o + i] = (v >> (8 * i)) & 0xff;
  };
  put32(0x100, 0x0001u | (1u << 16) | (0x148u << 20));  // AER, next at 0x148
  put32(0x148, 0x000du | (1u << 16) | (0u << 20));      // ACS, last
  cfg[0x14e] = 0x1d;                                    // SV, RR, CR, UF
  auto ctrl = acs_control_from_config(cfg);
  ASSERT_TRUE(ctrl.has_value());
  EXPECT_EQ(*ctrl, 0x1du);
  EXPECT_TRUE(acs_redirects_peers(*ctrl));
  cfg[0x14e] = 0x01;  // source validation only
  EXPECT_FALSE(acs_redirects_peers(*acs_control_from_config(cfg)));
  EXPECT_FALSE(acs_control_from_config(std::vector<unsigned char>(64, 0)).has_value());  // 64 bytes: not root
}

TEST(Doctor, LiveFactsRoundTripThroughJson) {
  const DoctorInput in = fixture("hidden_gpu_cvd.json");
  const json j = in.live.to_json();
  const LiveFacts back = LiveFacts::from_json(j);
  EXPECT_EQ(back.to_json(), j);
  EXPECT_EQ(back.nvml_device_count, 4);
  ASSERT_EQ(back.p2p.size(), 3u);
  EXPECT_EQ(back.p2p[0][2], false);
  EXPECT_EQ(back.topology[0][2], 50);
}

TEST(Doctor, ReportJsonCarriesVerdictAndChecks) {
  const DoctorInput in = fixture("h200_throttled.json");
  const auto checks = run_doctor_rules(in);
  const json r = doctor_report_json(in, checks);
  EXPECT_EQ(r["schema"], "nodebench.doctor");
  EXPECT_EQ(r["verdict"], "fail");
  EXPECT_EQ(r["checks"].size(), checks.size());
  EXPECT_EQ(Check::from_json(r["checks"][0]).to_json(), r["checks"][0]);
  const std::string text = dump(checks);
  EXPECT_TRUE(has(text, "FAIL  gpu.throttle")) << text;
  EXPECT_TRUE(has(text, "fix: ")) << text;
}
