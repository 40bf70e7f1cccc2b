// What the families contribute to the core's commands (bench/contributions.hpp) and the metric
// declarations they read records through (bench/metric.hpp's MetricDecl): each registered where
// its family is linked, each read checked against records made here.
#include <gtest/gtest.h>

#include <set>

#include "bench/contributions.hpp"
#include "bench/metric.hpp"

using namespace nb;
using nlohmann::json;

TEST(MetricDecl, NameAndValueOfARecord) {
  constexpr MetricDecl step{"step_time", Unit::ms, Better::lower};
  EXPECT_EQ(step.name(), "step_time_ms");
  EXPECT_EQ((MetricDecl{"", Unit::gbps, Better::higher}.name()), "gbps");
  const Metric m = step.with(12.5);
  EXPECT_EQ(m.name, "step_time_ms");
  EXPECT_EQ(m.unit, Unit::ms);
  EXPECT_EQ(m.better, Better::lower);
  EXPECT_DOUBLE_EQ(m.value, 12.5);
  EXPECT_EQ(step.of(json{{"metrics", {{"step_time_ms", 3.0}}}}), 3.0);
  EXPECT_FALSE(step.of(json{{"metrics", {{"step_time_us", 3.0}}}}));  // another unit is another metric
  EXPECT_FALSE(step.of(json{{"metrics", {{"step_time_ms", "fast"}}}}));
  EXPECT_FALSE(step.of(json{{"metrics", nullptr}}));
  EXPECT_FALSE(step.of(json::array()));
  EXPECT_EQ(kTimeMetric.name(), "time_us");
}

TEST(Contributions, FamilyOfARecordIsItsIdsFirstPart) {
  EXPECT_EQ(family_of_record(json{{"id", "nccl/all_reduce/float/1MiB"}, {"family", "other"}}), "nccl");
  EXPECT_EQ(family_of_record(json{{"family", "gemm"}}), "gemm");
  EXPECT_EQ(family_of_record(json{{"id", 3}}), "");
  EXPECT_EQ(family_of_record(json("nccl/x")), "");
}

TEST(Contributions, EveryFamilyAdviseReadsHasRegistered) {
  std::set<std::string> families;
  int inputs = 0;
  for (const AdviceContribution& c : advice_contributions()) {
    families.insert(c.family);
    inputs += c.input.has_value();
  }
  for (const char* f : {"nccl", "hostlink", "train", "conv", "train_dp", "input"}) EXPECT_TRUE(families.count(f)) << f;
  EXPECT_EQ(inputs, 1);  // one input rate: the input family's judge
  EXPECT_FALSE(link_classifiers().empty());
}

// The facts one family reads from one record, through its registered contribution.
AdviceFacts read_as(const std::string& family, const json& record) {
  AdviceFacts f;
  for (const AdviceContribution& c : advice_contributions())
    if (c.family == family && c.read) c.read(record, f);
  return f;
}

TEST(Contributions, AllReduceAndStepsReadThroughTheDeclarations) {
  const json ar = {{"id", "nccl/all_reduce/float/1MiB/g2"}, {"status", "ok"},
                   {"params", {{"collective", "all_reduce"}, {"dtype", "float"}, {"bytes", 1048576}, {"ngpus", 2}}},
                   {"metrics", {{"busbw_gbps", 80.0}, {"data_bytes", 1048576}, {"gpu_count", 2}, {"time_us", 25.0}}},
                   {"details", {{"nccl_env", {{"NCCL_VERSION", "2.21"}, {"NCCL_P2P_DISABLE", "1"}}}}}};
  const AdviceFacts a = read_as("nccl", ar);
  ASSERT_EQ(a.allreduce.size(), 1u);
  EXPECT_EQ(a.allreduce[0].gpus, 2);
  EXPECT_DOUBLE_EQ(a.allreduce[0].busbw_gbps, 80.0);
  EXPECT_DOUBLE_EQ(a.allreduce[0].time_s, 25e-6);
  EXPECT_EQ(a.allreduce[0].settings, "NCCL_P2P_DISABLE=1");
  json one = ar;
  one["metrics"]["gpu_count"] = 1;  // one rank crosses no link: no point of the curve
  EXPECT_TRUE(read_as("nccl", one).allreduce.empty());
  json bcast = ar;
  bcast["params"]["collective"] = "broadcast";
  EXPECT_TRUE(read_as("nccl", bcast).allreduce.empty());

  const json tr = {{"id", "train/resnet50/fp16/nhwc/b256"}, {"status", "ok"},
                   {"params", {{"precision", "fp16"}, {"layout", "nhwc"}, {"batch", 256}}},
                   {"metrics", {{"step_time_ms", 400.0}, {"peak_memory_bytes", 3e10}}}};
  const AdviceFacts t = read_as("train", tr);
  ASSERT_EQ(t.steps.size(), 1u);
  EXPECT_DOUBLE_EQ(t.steps[0].step_s, 0.4);
  EXPECT_FALSE(t.steps[0].partial);
  EXPECT_EQ(t.steps[0].peak_memory_bytes, 3e10);
  const json cv = {{"id", "conv/resnet50/fp16/nhwc/b256"}, {"status", "ok"},
                   {"params", {{"precision", "fp16"}, {"layout", "nhwc"}, {"batch", 256}, {"pass", "train"}}},
                   {"metrics", {{"time_us", 300000.0}}}};
  const AdviceFacts c = read_as("conv", cv);
  ASSERT_EQ(c.steps.size(), 1u);
  EXPECT_DOUBLE_EQ(c.steps[0].step_s, 0.3);
  EXPECT_TRUE(c.steps[0].partial);  // convolutions only
  EXPECT_TRUE(read_as("train", cv).steps.empty());  // a family reads its own records only
}

TEST(Contributions, ConsoleFigureOfAnAllReduce) {
  const HeadlineContribution* nccl = nullptr;
  for (const HeadlineContribution& h : headline_contributions())
    if (h.family == "nccl") nccl = &h;
  ASSERT_NE(nccl, nullptr);
  EXPECT_EQ(nccl->metric(json{{"metrics", {{"busbw_gbps", 80.0}, {"algbw_gbps", 40.0}}}}), "busbw_gbps");
  // One rank: the bus bandwidth is 0 by definition, the algorithm bandwidth says more.
  EXPECT_EQ(nccl->metric(json{{"metrics", {{"busbw_gbps", 0.0}, {"algbw_gbps", 40.0}}}}), "algbw_gbps");
}

TEST(Contributions, BurnLineOfARecord) {
  const RecordReport* burn = find_record_report("burn");
  ASSERT_NE(burn, nullptr);
  EXPECT_EQ(find_record_report("no_such_family"), nullptr);
  const json r = {{"id", "burn/gemm"}, {"status", "ok"}, {"gpus", {1}}, {"reason", nullptr},
                  {"details", {{"precision", "fp16"}, {"faulty_elements", 0}, {"cut_short", true},
                               {"memory_test", {{"errors", 2}}},
                               {"summary", {{"sustained_tflops", 612.34}, {"first_minute_tflops", 650.0}, {"mean_power_w", 690.4}}}}}};
  EXPECT_EQ(burn->line(r), "burn: GPU 1 ok: sustained 612.3 TFLOPS fp16 (first minute 650.0), mean power 690 W, "
                           "faulty elements 0, memory errors 2");
  EXPECT_TRUE(burn->cut_short(r));
  json failed = r;
  failed["status"] = "failed";
  failed["reason"] = "Xid 79";
  failed["details"].erase("memory_test");
  failed["details"]["cut_short"] = false;
  EXPECT_EQ(burn->line(failed), "burn: GPU 1 failed: sustained 612.3 TFLOPS fp16 (first minute 650.0), mean power 690 W, "
                                "faulty elements 0, memory errors ? -- Xid 79");
  EXPECT_FALSE(burn->cut_short(failed));
}
