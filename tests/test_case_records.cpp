// Records from a case's parts (run/case_records) and the MPI rank merge (cluster/): no MPI, no
// GPU needed.
#include <gtest/gtest.h>

#include "bench/benchmark.hpp"
#include "cluster/cluster.hpp"
#include "cluster/mpi.hpp"
#include "run/case_records.hpp"

using namespace nb;
using nlohmann::json;
namespace {

Measurement samples(double t) {
  Measurement m;
  m.samples_s = {t, t, t};
  m.stop = StopReason::fixed;
  return m;
}

}  // namespace

TEST(CaseRecords, PartsBecomeRecords) {
  Case c;
  c.family = "p2p";
  c.name = "one_way/enabled/ce/256MiB";
  c.params = {{"mode", "one_way"}, {"peer", "enabled"}};
  std::vector<GpuInfo> gpus(2);
  gpus[0].index = 0;
  gpus[1].index = 1;
  CaseOutput out;
  CasePart ok;
  ok.name = "gpu0-gpu1";
  ok.params = {{"src", 0}, {"dst", 1}};
  ok.gpus = {0, 1};
  ok.out.measurement = samples(0.01);
  ok.out.throughput_metric = "gbps";
  ok.out.work_per_launch = 0.25;
  out.parts.push_back(ok);
  CasePart skipped;
  skipped.name = "gpu1-gpu0";
  skipped.params = {{"src", 1}, {"dst", 0}};
  skipped.gpus = {1, 0};
  skipped.status = Status::skipped;
  skipped.reason = "no peer access";
  out.parts.push_back(skipped);
  out.analysis = {{"p2p", {{"gpus", {0, 1}}}}};
  RecordInput in;
  in.c = &c;
  in.gpus = {0, 1};
  in.gpu = &gpus[0];
  in.status = Status::ok;
  in.out = &out;
  in.started_at = "2026-11-29T00:00:00.000Z";
  const CaseRecords r = make_case_records(in, gpus);
  ASSERT_EQ(r.records.size(), 2u);  // the case itself timed nothing: no record of its own
  EXPECT_EQ(r.records[0]["id"], "p2p/one_way/enabled/ce/256MiB/gpu0-gpu1");
  EXPECT_EQ(r.records[0]["status"], "ok");
  EXPECT_EQ(r.records[0]["params"]["src"], 0);
  EXPECT_EQ(r.records[0]["params"]["mode"], "one_way");
  EXPECT_NEAR(r.records[0]["metrics"]["gbps"].get<double>(), 25.0, 1e-9);
  EXPECT_EQ(r.records[1]["status"], "skipped");
  EXPECT_EQ(r.records[1]["reason"], "no peer access");
  EXPECT_EQ(r.records[1]["gpus"], json({1, 0}));
  EXPECT_EQ(r.analysis["p2p"]["gpus"], json({0, 1}));

  // A case that failed after emitting parts keeps its own (failed) record too.
  in.status = Status::failed;
  in.reason = "watchdog";
  const CaseRecords f = make_case_records(in, gpus);
  ASSERT_EQ(f.records.size(), 3u);
  EXPECT_EQ(f.records[2]["id"], "p2p/one_way/enabled/ce/256MiB");
  EXPECT_EQ(f.records[2]["status"], "failed");
}

TEST(CaseRecords, ExtraParamsMergeIntoTheCasesRecord) {
  Case c;
  c.family = "nccl";
  c.name = "all_reduce/float/out_of_place/eager/8B";
  c.params = {{"collective", "all_reduce"}, {"bytes", 8}};
  GpuInfo g;
  CaseOutput out;
  out.measurement = samples(1e-5);
  out.extra_params = {{"ngpus", 4}};
  out.metrics = {{"busbw_gbps", 1.0}};
  RecordInput in;
  in.c = &c;
  in.gpus = {0, 1, 2, 3};
  in.gpu = &g;
  in.status = Status::ok;
  in.out = &out;
  in.started_at = "2026-11-29T00:00:00.000Z";
  const CaseRecords r = make_case_records(in, {g});
  ASSERT_EQ(r.records.size(), 1u);
  EXPECT_EQ(r.records[0]["id"], "nccl/all_reduce/float/out_of_place/eager/8B");
  EXPECT_EQ(r.records[0]["params"]["ngpus"], 4);
  EXPECT_EQ(r.records[0]["params"]["bytes"], 8);
}

TEST(CaseRecords, AnalysisMergesAcrossCases) {
  RunDocument file(json{{"run_id", "x"}});  // in memory only
  merge_analysis(file, {{"p2p", {{"gpus", {0, 1}}, {"bandwidth_gbps", {{"a", {{nullptr, 1.0}, {2.0, nullptr}}}}}}}});
  merge_analysis(file, {{"p2p", {{"gpus", {0, 1}}, {"bandwidth_gbps", {{"b", {{nullptr, 3.0}, {4.0, nullptr}}}}}}}});
  const json& a = file.doc()["analysis"]["p2p"];
  EXPECT_TRUE(a["bandwidth_gbps"].contains("a"));
  EXPECT_TRUE(a["bandwidth_gbps"].contains("b"));
  EXPECT_EQ(a["bandwidth_gbps"]["a"][0][1], 1.0);
  EXPECT_TRUE(a["bandwidth_gbps"]["a"][0][0].is_null());
}

TEST(Cluster, MergeRankRecords) {
  const json ok = {{"id", "x"}, {"status", "ok"}};
  const json failed = {{"id", "x"}, {"status", "failed"}, {"reason", "hang"}};
  const json skipped = {{"id", "x"}, {"status", "skipped"}, {"reason", "reported by rank 0"}};
  // Per-GPU case: every rank's record, each with its rank and host.
  auto per_gpu = cluster::merge_rank_records(false, {{ok}, {ok}, {failed}}, {"a", "a", "b"});
  ASSERT_EQ(per_gpu.size(), 3u);
  EXPECT_EQ(per_gpu[2]["rank"], 2);
  EXPECT_EQ(per_gpu[2]["host"], "b");
  // Multi-GPU case: rank 0's, and what other ranks saw go wrong.
  auto multi = cluster::merge_rank_records(true, {{ok}, {ok}, {skipped}, {failed}}, {"a", "a", "b", "b"});
  ASSERT_EQ(multi.size(), 2u);
  EXPECT_EQ(multi[0]["rank"], 0);
  EXPECT_EQ(multi[1]["rank"], 3);
  EXPECT_EQ(multi[1]["status"], "failed");
}

TEST(Cluster, RankEnvironmentListsNodesAndRanks) {
  auto info = [](int rank, int local, const std::string& host, int gpu) {
    return json{{"rank", rank},
                {"local_rank", local},
                {"host", host},
                {"gpu", gpu},
                {"pci_bus_id", "0000:0" + std::to_string(gpu) + ":00.0"},
                {"gpu_name", "NVIDIA H200"},
                {"environment", {{"host", {{"hostname", host}}}}}};
  };
  json env = {{"host", {{"hostname", "a"}}}, {"gpus", json::array()}};
  cluster::add_rank_environment(env, {info(0, 0, "a", 0), info(1, 1, "a", 1), info(2, 0, "b", 0)});
  ASSERT_EQ(env["ranks"].size(), 3u);
  EXPECT_EQ(env["ranks"][2]["host"], "b");
  EXPECT_FALSE(env["ranks"][0].contains("environment"));
  ASSERT_EQ(env["nodes"].size(), 2u);
  EXPECT_EQ(env["nodes"][0]["ranks"], json({0, 1}));
  EXPECT_EQ(env["nodes"][1]["environment"]["host"]["hostname"], "b");
  EXPECT_EQ(env["mpi"]["world_size"], 3);
  EXPECT_EQ(env["mpi"]["node_count"], 2);
}

TEST(Cluster, SingleProcessIsAPassThrough) {
  // Not started by an MPI launcher: a world of one, operations act locally.
  ASSERT_FALSE(mpi::active());
  EXPECT_EQ(mpi::rank(), 0);
  EXPECT_EQ(mpi::size(), 1);
  EXPECT_EQ(mpi::gather_strings("x", 0), (std::vector<std::string>{"x"}));
  EXPECT_EQ(mpi::allgather_strings("y"), (std::vector<std::string>{"y"}));
  EXPECT_DOUBLE_EQ(mpi::allreduce(2.5, mpi::Op::max), 2.5);
  EXPECT_TRUE(mpi::any(true));
  EXPECT_FALSE(mpi::all(false));
  EXPECT_TRUE(cluster::root());
  EXPECT_EQ(cluster::local_gpus({0, 1, 2}), (std::vector<int>{0, 1, 2}));
  const auto recs = cluster::gather_records(true, {json{{"id", "x"}}});
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_FALSE(recs[0].contains("rank"));
}
