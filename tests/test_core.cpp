// The library core without a GPU: statuses and their kinds, the settings parser, the schedule of a
// plan (which cases run on every GPU at once), the --runs combiner and the Google Benchmark output.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "output/gbench_out.hpp"
#include "run/plan.hpp"
#include "run/result.hpp"
#include "run/run_combine.hpp"
#include "run/session.hpp"
#include "bench/resources_store.hpp"
#include "bench/settings.hpp"
#include "base/status.hpp"
#include "base/error.hpp"
#include "settings_test_util.hpp"

using namespace nb;
using nlohmann::json;

TEST(Status, EveryValueRoundTrips) {
  for (Status s : {Status::ok, Status::skipped, Status::failed, Status::wrong})
    EXPECT_EQ(parse_status(to_string(s)), s);
  for (ReasonKind k : {ReasonKind::oom, ReasonKind::unsupported, ReasonKind::needs_gpus, ReasonKind::timeout,
                       ReasonKind::error, ReasonKind::wrong_result, ReasonKind::above_peak, ReasonKind::shared_gpu,
                       ReasonKind::not_built, ReasonKind::interrupted, ReasonKind::unusable_gpu, ReasonKind::peer_rank,
                       ReasonKind::smaller_oom, ReasonKind::plateau})
    EXPECT_EQ(parse_reason_kind(to_string(k)), k);
  EXPECT_FALSE(parse_status("passed").has_value());
  EXPECT_FALSE(parse_reason_kind("out of memory").has_value());
}

TEST(Status, OutOfMemoryIsASkipAndOtherErrorsFail) {
  const Outcome oom = outcome_of(CudaError(cudaErrorMemoryAllocation, "cudaMalloc: out of memory"));
  EXPECT_EQ(oom.status, Status::skipped);
  EXPECT_EQ(oom.kind, ReasonKind::oom);
  EXPECT_EQ(oom.reason.rfind("out of memory", 0), 0u);
  const Outcome bad = outcome_of(CudaError(cudaErrorIllegalAddress, "illegal address"));
  EXPECT_EQ(bad.status, Status::failed);
  EXPECT_EQ(bad.kind, ReasonKind::error);
  EXPECT_EQ(outcome_of(std::runtime_error("x")).status, Status::failed);
}

TEST(Record, ReasonKindAndPrimaryMetricAreWritten) {
  Case c;
  c.family = "x";
  c.name = "y";
  GpuInfo g;
  RecordInput skip;
  skip.c = &c;
  skip.gpus = {0};
  skip.gpu = &g;
  skip.status = Status::skipped;
  skip.reason = "does not fit";
  skip.reason_kind = ReasonKind::oom;
  json r = make_record(skip);
  EXPECT_EQ(r["reason_kind"], "oom");
  // The record reads no meaning from the reason's text: without a kind, the status's.
  skip.reason = "out of memory: does not fit";
  skip.reason_kind = ReasonKind::none;
  EXPECT_EQ(make_record(skip)["reason_kind"], "unsupported");
  skip.status = Status::failed;
  EXPECT_EQ(make_record(skip)["reason_kind"], "error");
  skip.status = Status::skipped;
  skip.reason = "needs two GPUs";
  skip.reason_kind = ReasonKind::needs_gpus;
  EXPECT_EQ(make_record(skip)["reason_kind"], "needs_gpus");

  CaseOutput out;
  out.measurement = Measurement{};
  out.measurement->samples_s = {1e-3, 1e-3, 1e-3};
  out.measurement->stop = StopReason::fixed;
  out.config.fixed_samples = 3;
  RecordInput ok = skip;
  ok.status = Status::ok;
  ok.reason.clear();
  ok.reason_kind = ReasonKind::none;
  ok.out = &out;
  r = make_record(ok);  // nothing declared: the time, lower is better
  EXPECT_TRUE(r["reason_kind"].is_null());
  EXPECT_EQ(r["primary_metric"], "time_us");
  EXPECT_EQ(r["primary_better"], "lower");
  out.throughput_metric = "gbps";
  out.work_per_launch = 1.0;
  r = make_record(ok);
  EXPECT_EQ(r["primary_metric"], "gbps");
  EXPECT_EQ(r["primary_better"], "higher");
  out.primary_metric = "images_per_s";
  r = make_record(ok);
  EXPECT_EQ(r["primary_metric"], "images_per_s");
  // A wrong result says so in its kind.
  out.wrong = true;
  out.wrong_reason = "3 sampled outputs outside the bound";
  EXPECT_EQ(make_record(ok)["reason_kind"], "wrong_result");
}

TEST(Settings, DefaultsAndValidValues) {
  const Settings d = Settings::from_map({});
  EXPECT_EQ(d.integer("NODEBENCH_CUDNN_WORKSPACE_MIB"), 4096);
  EXPECT_DOUBLE_EQ(d.number("NODEBENCH_NCCL_TIMEOUT_S"), 120.0);
  EXPECT_FALSE(d.tristate("NODEBENCH_NCCL_NONBLOCKING").has_value());
  const Settings s = Settings::from_map({{"NODEBENCH_CUDNN_WORKSPACE_MIB", "1024"},
                                         {"NODEBENCH_NCCL_TIMEOUT_S", "4.5"},
                                         {"NODEBENCH_NCCL_NONBLOCKING", "1"},
                                         {"NODEBENCH_P2P_LOOPBACK", "0"}});
  EXPECT_EQ(s.integer("NODEBENCH_CUDNN_WORKSPACE_MIB"), 1024);
  EXPECT_DOUBLE_EQ(s.number("NODEBENCH_NCCL_TIMEOUT_S"), 4.5);
  EXPECT_EQ(s.tristate("NODEBENCH_NCCL_NONBLOCKING"), std::optional<bool>(true));
  EXPECT_FALSE(s.flag("NODEBENCH_P2P_LOOPBACK"));
  EXPECT_EQ(s.to_json()["cudnn_workspace_mib"], 1024);
  // The result's `settings` keeps the keys it had before the settings were declared by families.
  const nlohmann::json j = d.to_json();
  for (const char* key : {"cudnn_workspace_mib", "nccl_timeout_s", "nccl_nonblocking", "nccl_hold", "nccl_trace",
                          "nccl_graph_multi", "p2p_loopback", "dp_bucket_mib", "dp_accumulation", "mpi"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_TRUE(j["nccl_nonblocking"].is_null());
  EXPECT_FALSE(j.contains("test_nccl_stall_s"));
}

TEST(Settings, ReadingAnUndeclaredOrMistypedSettingThrows) {
  const Settings d = Settings::from_map({});
  EXPECT_THROW((void)d.number("NODEBENCH_NO_SUCH_THING"), Error);
  EXPECT_THROW((void)d.flag("NODEBENCH_NCCL_TIMEOUT_S"), Error);  // a number read as a flag
}

TEST(Settings, HelpListsEveryDeclaredSettingButTheTestHooks) {
  const std::string h = settings_help();
  for (const auto& s : setting_registry())
    EXPECT_EQ(h.find(s.name) != std::string::npos, !s.test_hook) << s.name;
  // Declared by the families, not by the core.
  for (const char* fam : {"NODEBENCH_DP_BUCKET_MIB", "NODEBENCH_P2P_LOOPBACK", "NODEBENCH_CUDNN_WORKSPACE_MIB"}) {
    bool found = false;
    for (const auto& s : setting_registry()) found = found || (s.name == fam && s.owner != "core");
    EXPECT_TRUE(found) << fam;
  }
}

TEST(Settings, BadValuesNameTheVariable) {
  const auto message = &test::settings_error;
  // 1e99 MiB used to wrap to a zero workspace when shifted to bytes.
  EXPECT_NE(message({{"NODEBENCH_CUDNN_WORKSPACE_MIB", "1e99"}}).find("NODEBENCH_CUDNN_WORKSPACE_MIB='1e99': too large"),
            std::string::npos);
  EXPECT_NE(message({{"NODEBENCH_CUDNN_WORKSPACE_MIB", "4G"}}).find("must be a positive whole number"), std::string::npos);
  EXPECT_NE(message({{"NODEBENCH_CUDNN_WORKSPACE_MIB", "1.5"}}).find("whole number"), std::string::npos);
  EXPECT_NE(message({{"NODEBENCH_NCCL_TIMEOUT_S", "-5"}}).find("NODEBENCH_NCCL_TIMEOUT_S='-5'"), std::string::npos);
  EXPECT_NE(message({{"NODEBENCH_NCCL_TIMEOUT_S", "nan"}}).find("positive number"), std::string::npos);
  EXPECT_NE(message({{"NODEBENCH_NCCL_HOLD", "yes"}}).find("NODEBENCH_NCCL_HOLD='yes': must be 0 or 1"), std::string::npos);
  if (!test_hooks_built())
    EXPECT_NE(message({{"NODEBENCH_NCCL_TEST_STALL_S", "3"}}).find("this build has none"), std::string::npos);
  std::vector<std::string> unknown;
  (void)Settings::from_map({{"NODEBENCH_CUDNN_WORKSPCE_MIB", "1"}, {"NODEBENCH_BIN", "x"}}, &unknown);
  ASSERT_EQ(unknown.size(), 1u);
  EXPECT_EQ(unknown[0], "NODEBENCH_CUDNN_WORKSPCE_MIB");
}

namespace {
Case make(const std::string& name, bool shares_host, bool multi) {
  Case c;
  c.family = "f";
  c.name = name;
  c.shares_host = shares_host;
  c.multi_gpu = multi;
  return c;
}
}  // namespace

// A family that runs one GPU at a time lets go of what it kept on the other GPUs (no GPU is
// needed: the slots are made without one, and a GPU that cannot be made current is released too).
TEST(Session, ReleasingAFamilysResourcesSparesOneGpuAndOtherFamilies) {
  struct Kept {
    int* alive;
    explicit Kept(int* a) : alive(a) { ++*alive; }
    ~Kept() { --*alive; }
  };
  Session session(ProfileDb::builtin(), Settings::from_map({}));
  int alive = 0;
  auto keep = [&](int gpu, const std::string& family) {
    GpuSlot& s = session.slot(gpu);
    s.family = family;
    s.family_resources->get<Kept>([&] { return std::make_unique<Kept>(&alive); });
  };
  keep(0, "hostlink");
  keep(1, "hostlink");
  keep(2, "hostlink");
  keep(3, "latency");
  ASSERT_EQ(alive, 4);
  session.release_family_resources("hostlink", 1);
  EXPECT_EQ(alive, 2);  // GPU 1's and the other family's stay
  EXPECT_EQ(session.slot(0).family_resources->size(), 0u);
  EXPECT_EQ(session.slot(0).family, "");
  EXPECT_EQ(session.slot(1).family_resources->size(), 1u);
  EXPECT_EQ(session.slot(2).family_resources->size(), 0u);
  EXPECT_EQ(session.slot(3).family_resources->size(), 1u);
  EXPECT_EQ(session.slot(3).family, "latency");
}

TEST(Schedule, CasesThatShareNothingRunOnEveryGpuAtOnce) {
  Plan p;
  p.cases = {make("a", false, false), make("h", true, false), make("b", false, false), make("m", false, true)};
  p.gpus = {0, 1};
  const std::vector<Step> s = schedule(p);
  // a and b on both GPUs together (2 waves of 2), then h GPU after GPU, then m over both.
  ASSERT_EQ(s.size(), 7u);
  EXPECT_EQ(s[0].c->name, "a");
  EXPECT_EQ(s[1].c->name, "a");
  EXPECT_EQ(s[0].wave, s[1].wave);
  EXPECT_NE(s[0].gpus, s[1].gpus);
  EXPECT_EQ(s[0].mode, RunMode::concurrent);
  EXPECT_EQ(s[2].c->name, "b");
  EXPECT_EQ(s[2].wave, s[3].wave);
  EXPECT_NE(s[1].wave, s[2].wave);
  EXPECT_EQ(s[4].c->name, "h");
  EXPECT_EQ(s[5].c->name, "h");
  EXPECT_NE(s[4].wave, s[5].wave);  // one GPU at a time
  EXPECT_EQ(s[4].mode, RunMode::alone);
  EXPECT_EQ(s[6].c->name, "m");
  EXPECT_EQ(s[6].gpus, (std::vector<int>{0, 1}));
  // Every wave number of a lone step is its own.
  p.concurrent = false;
  const std::vector<Step> alone = schedule(p);
  ASSERT_EQ(alone.size(), 7u);
  for (size_t i = 0; i < alone.size(); ++i) {
    EXPECT_EQ(alone[i].mode, RunMode::alone);
    for (size_t j = i + 1; j < alone.size(); ++j) EXPECT_NE(alone[i].wave, alone[j].wave);
  }
  // GPU after GPU: GPU 0's a and b first.
  EXPECT_EQ(alone[0].gpus, std::vector<int>{0});
  EXPECT_EQ(alone[1].c->name, "b");
  // One GPU: nothing to run together.
  p.concurrent = true;
  p.gpus = {0};
  for (const Step& st : schedule(p)) EXPECT_EQ(st.mode, RunMode::alone);
}

TEST(SelectCases, FamiliesDeclareWhetherTheyShareTheHost) {
  const std::vector<Case> cases = select_cases(Suite::quick, {}, "");
  bool saw_host = false, saw_gemm = false;
  for (const Case& c : cases) {
    if (c.family == "hostlink" || c.family == "latency") {
      EXPECT_TRUE(c.shares_host) << c.id();
      saw_host = true;
    }
    if (c.family == "gemm") {
      EXPECT_FALSE(c.shares_host) << c.id();
      saw_gemm = true;
    }
  }
  EXPECT_TRUE(saw_host);
  EXPECT_TRUE(saw_gemm);
  EXPECT_THROW(select_cases(Suite::quick, {"nosuch"}, ""), Error);
  EXPECT_THROW(select_cases(Suite::quick, {}, "["), Error);
}

TEST(RunCombine, SpreadOfTheMediansOverRuns) {
  auto doc = [](double median_a, bool with_b) {
    json recs = json::array();
    recs.push_back({{"id", "gemm/a"}, {"gpus", {0}}, {"stats", {{"median", median_a}}}});
    if (with_b) recs.push_back({{"id", "gemm/b"}, {"gpus", {0}}, {"stats", {{"median", 1.0}}}});
    recs.push_back({{"id", "gemm/s"}, {"gpus", {0}}, {"stats", nullptr}});
    return json{{"records", recs}, {"summary", {{"wall_time_s", 10.0}}}};
  };
  const json c = combine_runs({doc(2.0, true), doc(4.0, false), doc(3.0, true)}, {"r1", "r2", "r3"});
  const json& a = c["records"][0]["run_to_run"];
  EXPECT_EQ(a["runs"], 3);
  EXPECT_EQ(a["medians_s"], (json{2.0, 4.0, 3.0}));
  // cv: the sample standard deviation of ln 2, ln 4, ln 3 (mean ln(24)/3; computed by hand with Python's
  // statistics.stdev: 0.3482374531...); max/min 2.
  EXPECT_NEAR(a["cv"].get<double>(), 0.3482374531, 1e-9);
  EXPECT_DOUBLE_EQ(a["max_over_min"].get<double>(), 2.0);
  // b was timed in two runs of three; s never.
  EXPECT_EQ(c["records"][1]["run_to_run"]["runs"], 2);
  EXPECT_FALSE(c["records"][2].contains("run_to_run"));
  EXPECT_EQ(c["runs"]["count"], 3);
  EXPECT_DOUBLE_EQ(c["summary"]["wall_time_s"].get<double>(), 30.0);
}

TEST(GbenchOut, OneRepetitionPerSampleInGoogleBenchmarkJson) {
  const json doc = {{"records",
                     {{{"id", "memory/copy/8xL2"},
                       {"gpus", {0}},
                       {"samples_s", {1e-3, 2e-3, 3e-3}},
                       {"stats", {{"mean", 2e-3}, {"median", 2e-3}, {"stddev", 1e-3}}},
                       {"metrics", {{"gbps", 100.0}}}},
                      {{"id", "gemm/skipped"}, {"gpus", {0}}, {"samples_s", json::array()}, {"stats", nullptr}, {"metrics", json::object()}}}}};
  const std::string path = std::string(NB_TEST_OUTPUT_DIR) + "/gbench_out.json";
  write_gbench_json(doc, path);
  std::ifstream f(path);
  const json g = json::parse(f);
  ASSERT_TRUE(g.contains("context"));
  const json& b = g["benchmarks"];
  ASSERT_EQ(b.size(), 6u);  // 3 samples + mean, median, stddev; the skipped record is left out
  EXPECT_EQ(b[0]["name"], "memory/copy/8xL2/gpu0");
  EXPECT_EQ(b[0]["run_type"], "iteration");
  EXPECT_EQ(b[0]["repetitions"], 3);
  EXPECT_EQ(b[2]["repetition_index"], 2);
  EXPECT_EQ(b[0]["time_unit"], "us");
  EXPECT_NEAR(b[1]["real_time"].get<double>(), 2000.0, 1e-9);  // 2 ms in microseconds
  EXPECT_NEAR(b[0]["gbps"].get<double>(), 100.0, 1e-9);
  EXPECT_EQ(b[4]["run_type"], "aggregate");
  EXPECT_EQ(b[4]["aggregate_name"], "median");
}

TEST(Axes, CartesianProductNamesAndParams) {
  Axes a;
  a.add_string("precision", {"fp32", "fp16"}).add_int64("batch", {32, 64}, "b").add_bytes("bytes", {8, 64 << 10});
  const std::vector<AxisPoint> p = a.points();
  ASSERT_EQ(p.size(), 8u);
  EXPECT_EQ(p[0].name, "fp32/b32/8B");
  EXPECT_EQ(p[1].name, "fp32/b32/64KiB");  // the last axis varies fastest
  EXPECT_EQ(p[7].name, "fp16/b64/64KiB");
  EXPECT_EQ(p[7].params, (json{{"precision", "fp16"}, {"batch", 64}, {"bytes", 65536}}));
  EXPECT_EQ(p[7].int64("batch"), 64);
  EXPECT_EQ(p[7].str("precision"), "fp16");
  const std::vector<Case> cs = a.cases("fam", [](const AxisPoint& pt, Case& c) { c.min_gpus = int(pt.int64("batch")); });
  ASSERT_EQ(cs.size(), 8u);
  EXPECT_EQ(cs[2].id(), "fam/fp32/b64/8B");
  EXPECT_EQ(cs[2].min_gpus, 64);
  EXPECT_EQ(bytes_label(int64_t(3) << 30), "3GiB");
  EXPECT_EQ(bytes_label(1000), "1000B");
  EXPECT_TRUE(Axes().points().empty());
}

TEST(Axes, ValuesSettingSeveralParamsFiltersAndTemplates) {
  // A shape axis whose values set m, n and k, a fixed param, a filter and a template that places
  // the labels in another order than the axes and reads a param where no axis has the name.
  Axes a;
  a.add_values("shape", {{{{"shape", "square"}, {"m", 8}, {"n", 8}}, "square_8"}, {{{"shape", "mlp"}, {"m", 4}, {"n", 2}}, "mlp"}})
      .add_string("precision", {"fp32", "fp16", "bf16"})
      .set("api", "lt")
      .where([](const AxisPoint& p) { return !(p.str("shape") == "mlp" && p.str("precision") == "bf16"); })
      .name("{precision}/{api}/{shape}_m{m}");
  const std::vector<AxisPoint> p = a.points();
  ASSERT_EQ(p.size(), 5u);  // 2 x 3, less mlp/bf16
  EXPECT_EQ(p[0].name, "fp32/lt/square_8_m8");
  EXPECT_EQ(p[2].name, "bf16/lt/square_8_m8");
  EXPECT_EQ(p[3].name, "fp32/lt/mlp_m4");
  EXPECT_EQ(p[4].name, "fp16/lt/mlp_m4");
  EXPECT_EQ(p[4].params, (json{{"shape", "mlp"}, {"m", 4}, {"n", 2}, {"precision", "fp16"}, {"api", "lt"}}));
  EXPECT_EQ(p[4].labels.at("shape"), "mlp");
  EXPECT_TRUE(p[4].has("api"));
  EXPECT_FALSE(p[4].has("k"));
  // Without a template: the non-empty labels in declaration order (a fixed param has none).
  Axes b;
  b.set("test", "bandwidth").add_string("mode", {"one_way"}).add_bytes("bytes", {4});
  ASSERT_EQ(b.points().size(), 1u);
  EXPECT_EQ(b.points()[0].name, "one_way/4B");
  // A template naming nothing known is a programming error, said loudly.
  EXPECT_THROW(Axes().add_string("x", {"1"}).name("{y}").points(), Error);
  EXPECT_THROW(Axes().add_string("x", {"1"}).name("{x").points(), Error);
  // A suite of two products: their cases one after the other.
  std::vector<Case> all = a.cases("fam", {});
  append_cases(all, b.cases("fam", {}));
  ASSERT_EQ(all.size(), 6u);
  EXPECT_EQ(all[5].id(), "fam/one_way/4B");
  EXPECT_EQ(all[5].params, (json{{"test", "bandwidth"}, {"mode", "one_way"}, {"bytes", 4}}));
}

// The store makes an item once, by `make` or by default construction; a type that cannot be
// default-constructed needs `make` (asking without it is a programming error, said loudly).
TEST(ResourceStore, MakesOnceAndKnowsWhatItCannotMake) {
  struct Counted {
    explicit Counted(int v) : value(v) {}
    int value;
  };
  ResourceStore store;
  int made = 0;
  auto make = [&] {
    ++made;
    return std::make_unique<Counted>(42);
  };
  EXPECT_EQ(store.get<Counted>(make).value, 42);
  EXPECT_EQ(store.get<Counted>(make).value, 42);
  EXPECT_EQ(made, 1);
  EXPECT_EQ(store.get<Counted>().value, 42);  // made already: no `make` needed
  struct Other {
    explicit Other(int) {}
  };
  EXPECT_THROW(store.get<Other>(), std::logic_error);
  EXPECT_EQ(store.get<std::string>(), "");
  EXPECT_EQ(store.size(), 2u);
}
