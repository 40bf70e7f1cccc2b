// `nodebench advise`: the data-parallel model (advise.hpp), the inputs read from result
// documents (advise_inputs.hpp) and the advice (advise/advice.hpp). Expectations computed by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

#include "advise/advise.hpp"
#include "advise/advise_inputs.hpp"
#include "advise/advice.hpp"
#include "advise/advise_overhead.hpp"
#include "app/cli.hpp"
#include "base/error.hpp"

using namespace nb::advise;
using nlohmann::json;

TEST(AdviseModel, RingCostAtKnownNumbers) {
  // 1 GB over 4 GPUs at 10 GB/s with 5 us a hop: 2*3/4 * 1e9/1e10 = 0.15 s, + 2*3*5e-6 = 3e-5 s.
  EXPECT_NEAR(ring_allreduce_s(1e9, 4, 10.0, 5e-6), 0.15003, 1e-12);
  // 2 GPUs, no latency: 2*1/2 * 1e8 / 1e10 = 0.01 s.
  EXPECT_NEAR(ring_allreduce_s(1e8, 2, 10.0, 0), 0.01, 1e-15);
  EXPECT_EQ(ring_allreduce_s(1e9, 1, 10.0, 5e-6), 0.0);
  EXPECT_THROW(ring_allreduce_s(1e9, 2, 0.0, 0), nb::Error);
}

TEST(AdviseModel, HierarchicalCost) {
  // 1 GB, 2 nodes of 4 GPUs, 100 GB/s inside, 10 GB/s between: reduce-scatter 3/4*1e9/1e11 =
  // 7.5 ms, inter-node ring 2*1/2*1e9/1e10 = 100 ms + 2*1*1 us, all-gather 7.5 ms.
  EXPECT_NEAR(hierarchical_allreduce_s(1e9, 4, 2, 100.0, 10.0, 1e-6), 0.0075 + 0.1 + 2e-6 + 0.0075, 1e-12);
  // One GPU per node: only the network ring.
  EXPECT_NEAR(hierarchical_allreduce_s(1e9, 1, 4, 0.0, 10.0, 0), 2.0 * 3 / 4 * 0.1, 1e-12);
}

TEST(AdviseModel, AlgbwFromBusbw) {
  EXPECT_DOUBLE_EQ(algbw_from_busbw(100.0, 2), 100.0);
  EXPECT_NEAR(algbw_from_busbw(100.0, 4), 100.0 * 4 / 6, 1e-12);
  EXPECT_TRUE(std::isinf(algbw_from_busbw(100.0, 1)));
}

TEST(AdviseModel, InterpolatesInLogSize) {
  std::vector<BwPoint> pts = {{4.0 * 1048576, 30.0, 0}, {1048576, 10.0, 0}, {16.0 * 1048576, 0.0, 0}};
  EXPECT_NEAR(interpolate_busbw(pts, 2.0 * 1048576), 20.0, 1e-12);  // log2 midpoint of 1 and 4 MiB
  EXPECT_NEAR(interpolate_busbw(pts, 1048576 * std::pow(2.0, 1.5)), 25.0, 1e-12);
  EXPECT_DOUBLE_EQ(interpolate_busbw(pts, 1024), 10.0);              // below: the smallest point
  EXPECT_DOUBLE_EQ(interpolate_busbw(pts, 1e12), 30.0);              // above: the zero point is ignored
  EXPECT_THROW(interpolate_busbw({{1024, 0.0, 0}}, 1024), nb::Error);
  EXPECT_THROW(interpolate_busbw({}, 1024), nb::Error);
}

TEST(AdviseModel, OverlapNoCommunication) {
  const Overlap o = overlap(100e6, 25e6, 0.05, [](double) { return 0.0; });
  EXPECT_EQ(o.buckets, 4);
  EXPECT_EQ(o.exposed_s, 0.0);
}

TEST(AdviseModel, OverlapCommLongerThanBackward) {
  // 4 buckets of 10 ms; backward 12 ms, window 12*3/4 = 9 ms: exposed = (30 - 9) + 10 = 31 ms.
  const Overlap o = overlap(100e6, 25e6, 0.012, [](double) { return 0.010; });
  EXPECT_EQ(o.buckets, 4);
  EXPECT_NEAR(o.comm_s, 0.040, 1e-12);
  EXPECT_NEAR(o.window_s, 0.009, 1e-12);
  EXPECT_NEAR(o.exposed_s, 0.031, 1e-12);
}

TEST(AdviseModel, OverlapHiddenButTheLastBucket) {
  // Backward 80 ms hides the first three 10 ms buckets; only the last is exposed.
  const Overlap o = overlap(100e6, 25e6, 0.080, [](double) { return 0.010; });
  EXPECT_NEAR(o.exposed_s, 0.010, 1e-12);
}

TEST(AdviseModel, OverlapPartialLastBucketAndSingleBucket) {
  // 110 MB in 25 MB buckets: 4 full and a 10 MB last one; time proportional to size (1 ms/MB).
  const Overlap o = overlap(110e6, 25e6, 1.0, [](double b) { return b / 1e6 * 1e-3; });
  EXPECT_EQ(o.buckets, 5);
  EXPECT_NEAR(o.last_s, 0.010, 1e-12);
  EXPECT_NEAR(o.comm_s, 0.110, 1e-12);
  EXPECT_NEAR(o.exposed_s, 0.010, 1e-12);
  // Gradient smaller than a bucket: one bucket, nothing overlaps.
  const Overlap one = overlap(10e6, 25e6, 1.0, [](double b) { return b / 1e6 * 1e-3; });
  EXPECT_EQ(one.buckets, 1);
  EXPECT_NEAR(one.exposed_s, 0.010, 1e-12);
}

TEST(AdviseModel, AccumulationSteps) {
  EXPECT_EQ(accumulation_steps(256, 2, 64), 2);
  EXPECT_EQ(accumulation_steps(256, 2, 256), 1);
  EXPECT_EQ(accumulation_steps(1000, 3, 64), 6);  // 192 a step: ceil(1000/192)
  EXPECT_EQ(accumulation_steps(1, 8, 1), 1);
  EXPECT_THROW(accumulation_steps(256, 0, 64), nb::Error);
}

TEST(AdviseModel, StepBottleneckAllReduce) {
  StepInputs in;
  in.compute_s = 0.100;
  in.batch = 64;
  in.gpus = 2;
  in.exposed_comm_s = 0.020;
  const StepPrediction p = predict_step(in);
  EXPECT_NEAR(p.step_s, 0.120, 1e-12);
  EXPECT_NEAR(p.images_per_s, 128 / 0.120, 1e-9);
  EXPECT_NEAR(p.efficiency, 0.100 / 0.120, 1e-12);
  EXPECT_EQ(p.bottleneck, "gradient all-reduce");  // 16.7% of the step
}

TEST(AdviseModel, StepBottleneckComputeAndAccumulation) {
  StepInputs in;
  in.compute_s = 0.100;
  in.batch = 64;
  in.gpus = 2;
  in.exposed_comm_s = 0.020;
  in.accumulation = 4;  // 400 ms compute, 20 ms exposed: 4.8% of the step
  const StepPrediction p = predict_step(in);
  EXPECT_NEAR(p.step_s, 0.420, 1e-12);
  EXPECT_NEAR(p.images_per_s, 2 * 4 * 64 / 0.420, 1e-9);
  EXPECT_NEAR(p.efficiency, 0.400 / 0.420, 1e-12);
  EXPECT_EQ(p.bottleneck, "compute");
}

TEST(AdviseModel, StepBottleneckHostInput) {
  StepInputs in;
  in.compute_s = 0.100;
  in.batch = 64;
  in.gpus = 1;
  in.host_pinned_gbps = 0.05;  // 64 x 150528 B at 0.05 GB/s = 192.7 ms
  in.host_pageable_gbps = 0.025;
  const StepPrediction p = predict_step(in);
  EXPECT_NEAR(p.input_pinned_s, 64 * 150528.0 / 0.05e9, 1e-12);
  EXPECT_NEAR(p.input_pageable_s, 64 * 150528.0 / 0.025e9, 1e-12);
  EXPECT_NEAR(p.step_s, p.input_pinned_s, 1e-12);
  EXPECT_EQ(p.bottleneck, "host input pipeline");
  EXPECT_LT(p.efficiency, 1.0);
}

TEST(AdviseModel, ParameterServer) {
  // 1 GB, 4 workers, 10 GB/s: each worker 2e9/1e10 = 0.2 s; 4 servers 2e9*4/(4*1e10) = 0.2 s.
  EXPECT_NEAR(parameter_server_s(1e9, 4, 4, 10.0, 0), 0.2, 1e-12);
  EXPECT_NEAR(parameter_server_s(1e9, 4, 1, 10.0, 0), 0.8, 1e-12);  // one server: its link
}

TEST(AdviseModel, AllReduceTimeFromCurve) {
  CommModel m;
  m.curves.push_back({2, {{1e6, 100.0, 0}, {1e9, 100.0, 0}}});
  const CommEstimate two = allreduce_time(m, 1e8, 2);
  EXPECT_NEAR(two.seconds, 1e8 / 100e9, 1e-15);
  EXPECT_TRUE(two.measured_count);
  const CommEstimate four = allreduce_time(m, 1e8, 4);  // extrapolated: busbw held, ring factor 2*3/4
  EXPECT_NEAR(four.seconds, 1.5 * 1e8 / 100e9, 1e-15);
  EXPECT_FALSE(four.measured_count);
  EXPECT_EQ(allreduce_time(m, 1e8, 1).seconds, 0.0);
  // Two nodes of 2 GPUs over 10 GB/s: hierarchical 0.5e8/100e9*2 + 1e8/10e9 + 2 hops of latency.
  m.nodes = 2;
  m.inter_gbps = 10.0;
  m.inter_latency_s = 1e-6;
  const double hier = 2 * 0.5 * 1e8 / 100e9 + 1e8 / 10e9 + 2e-6;
  EXPECT_NEAR(allreduce_time(m, 1e8, 2).seconds, hier, 1e-12);  // flat ring: 1.5e8/10e9 + 6 us, slower
  m.inter_gbps.reset();
  EXPECT_THROW(allreduce_time(m, 1e8, 2), nb::Error);
}

TEST(AdviseModel, LinkTableHasSources) {
  for (const char* n : {"pcie-gen3", "pcie-gen4", "nvlink"}) {
    const LinkFigure* l = find_link(n);
    ASSERT_NE(l, nullptr) << n;
    EXPECT_GT(l->busbw_gbps, 0);
    EXPECT_FALSE(l->source.empty());
  }
  EXPECT_EQ(find_link("infiniband"), nullptr);
}

namespace {

json record(const std::string& id, json params, json metrics, json gpus = {0}, const char* status = "ok") {
  return {{"id", id}, {"params", params}, {"metrics", metrics}, {"gpus", gpus}, {"status", status}};
}

json sample_doc() {
  json recs = json::array();
  for (double b : {1048576.0, 268435456.0})
    recs.push_back(record("nccl/all_reduce/float/x", {{"collective", "all_reduce"}, {"dtype", "float"}, {"bytes", b}},
                          {{"busbw_gbps", 100.0}, {"data_bytes", b}, {"gpu_count", 2}}, {0, 1}));
  recs.push_back(record("nccl/all_reduce/float/bad", {{"collective", "all_reduce"}, {"dtype", "float"}},
                        {{"busbw_gbps", 1.0}, {"data_bytes", 4096.0}, {"gpu_count", 2}}, {0, 1}, "failed"));
  recs.push_back(record("hostlink/h2d/pinned/ce/1GiB", {{"bytes", 1 << 30}, {"direction", "h2d"}, {"engine", "ce"}, {"memory", "pinned"}}, {{"gbps", 50.0}}, {0}));
  recs.push_back(record("hostlink/h2d/pinned/ce/1GiB", {{"bytes", 1 << 30}, {"direction", "h2d"}, {"engine", "ce"}, {"memory", "pinned"}}, {{"gbps", 40.0}}, {1}));
  recs.push_back(record("hostlink/h2d/pinned/ce/1MiB", {{"bytes", 1 << 20}, {"direction", "h2d"}, {"engine", "ce"}, {"memory", "pinned"}}, {{"gbps", 5.0}}, {1}));
  recs.push_back(record("hostlink/h2d/pageable/ce/1GiB", {{"bytes", 1 << 30}, {"direction", "h2d"}, {"engine", "ce"}, {"memory", "pageable"}}, {{"gbps", 6.0}}, {0}));
  recs.push_back(record("train/resnet50/fp16/nhwc/b256", {{"precision", "fp16"}, {"layout", "nhwc"}, {"batch", 256}}, {{"step_time_ms", 100.0}}, {0}));
  recs.push_back(record("train/resnet50/fp16/nhwc/b256", {{"precision", "fp16"}, {"layout", "nhwc"}, {"batch", 256}}, {{"step_time_ms", 110.0}}, {1}));
  recs.push_back(record("conv/resnet50/fp16/nhwc/b256", {{"precision", "fp16"}, {"layout", "nhwc"}, {"batch", 256}, {"pass", "train"}}, {{"time_us", 20000.0}}));
  recs.push_back(record("conv/resnet50/fp32/nhwc/b256", {{"precision", "fp32"}, {"layout", "nhwc"}, {"batch", 256}, {"pass", "train"}}, {{"time_us", 90000.0}}));
  recs.push_back(record("train_dp/resnet50/fp16/nhwc/b256/g2", {{"precision", "fp16"}, {"layout", "nhwc"}, {"batch", 256}, {"gpus", 2}, {"accumulation", 1}},
                        {{"images_per_s", 4000.0}, {"scaling_efficiency_ratio", 0.86}}, {0, 1}));
  return {{"records", recs},
          {"analysis", {{"fp16_vs_fp32", {{{"gpu", 0}, {"verdict", "pays"}, {"reason", "FP16 runs 12x as fast"}},
                                          {{"gpu", 1}, {"verdict", "not_measured"}, {"reason", "no gemm"}}}}}}};
}

}  // namespace

TEST(AdviseInputs, GathersEveryFamily) {
  const Inputs in = gather_inputs({sample_doc()}, "fp32");
  ASSERT_EQ(in.curves.size(), 1u);
  EXPECT_EQ(in.curves[0].ngpus, 2);
  EXPECT_EQ(in.curves[0].points.size(), 2u);  // the failed record is not used
  EXPECT_EQ(in.curve_dtype, "float");
  ASSERT_TRUE(in.pinned_gbps);
  EXPECT_DOUBLE_EQ(*in.pinned_gbps, 40.0);  // slowest GPU's largest transfer, not the 1 MiB one
  EXPECT_DOUBLE_EQ(*in.pageable_gbps, 6.0);
  ASSERT_EQ(in.steps.size(), 2u);  // fp16 from train (conv not used for it), fp32 from conv
  EXPECT_EQ(in.steps[0].precision, "fp16");
  EXPECT_FALSE(in.steps[0].partial);
  EXPECT_DOUBLE_EQ(in.steps[0].step_s, 0.110);  // the slowest GPU
  EXPECT_TRUE(in.steps[1].partial);
  EXPECT_DOUBLE_EQ(in.steps[1].step_s, 0.090);
  ASSERT_EQ(in.dp.size(), 1u);
  EXPECT_EQ(in.dp[0].gpus, 2);
  ASSERT_EQ(in.fp16_verdicts.size(), 1u);  // the not_measured verdict says nothing
}

TEST(AdviseInputs, OneRankIsNotALink) {
  // One GPU's all-reduce moves nothing: 220,254 GB/s "algbw" (files before the flag wrote it) or,
  // now, no bandwidth and the flag single_rank. Neither is a point of the curve.
  json doc = sample_doc();
  const double b = 67108864.0;
  doc["records"].push_back(record("nccl/all_reduce/float/in_place/eager/64MiB",
                                  {{"collective", "all_reduce"}, {"dtype", "float"}, {"bytes", b}, {"ngpus", 1}},
                                  {{"algbw_gbps", 220254.0}, {"busbw_gbps", 0.0}, {"data_bytes", b}, {"gpu_count", 1}}));
  json flagged = record("nccl/all_reduce/float/out_of_place/eager/64MiB",
                        {{"collective", "all_reduce"}, {"dtype", "float"}, {"bytes", b}, {"ngpus", 2}},
                        {{"busbw_gbps", 2058.0}, {"data_bytes", b}, {"gpu_count", 2}}, {0, 1});
  flagged["flags"] = {"single_rank"};  // the flag decides, whatever else the record says
  doc["records"].push_back(flagged);
  const Inputs in = gather_inputs({doc}, "fp32");
  ASSERT_EQ(in.curves.size(), 1u);
  EXPECT_EQ(in.curves[0].ngpus, 2);
  ASSERT_EQ(in.curves[0].points.size(), 2u);
  for (const auto& p : in.curves[0].points) EXPECT_DOUBLE_EQ(p.busbw_gbps, 100.0);
}

TEST(AdviseBuild, PredictionBesideMeasurement) {
  nb::AdviseOptions o;
  o.files = {"sample"};
  o.params = 25e6;  // 100 MB of FP32 gradients
  o.bucket_mib = 1e6 / 1048576.0 * 200;  // one 200 MB bucket: nothing overlaps
  const json a = build_advice(gather_inputs({sample_doc()}, "fp32"), o);
  // fp16 b256 at 2 GPUs: all-reduce 100 MB at 100 GB/s busbw = 1 ms, all exposed; step 111 ms.
  const json* row = nullptr;
  for (const auto& r : a["rows"])
    if (r["precision"] == "fp16" && r["gpus"] == 2) row = &r;
  ASSERT_NE(row, nullptr);
  EXPECT_NEAR((*row)["exposed_comm_ms"].get<double>(), 1.0, 1e-9);
  EXPECT_NEAR((*row)["step_ms"].get<double>(), 111.0, 1e-9);
  const double ips = 512 / 0.111;
  EXPECT_NEAR((*row)["images_per_s"].get<double>(), ips, 1e-6);
  ASSERT_FALSE((*row)["measured"].is_null());
  EXPECT_NEAR((*row)["measured"]["error_pct"].get<double>(), 100 * (ips - 4000) / 4000, 1e-6);
  bool strategy = false, fp16 = false;
  for (const auto& s : a["recommendation"]) {
    const std::string t = s["text"];
    if (s["topic"] == "strategy") strategy = t.find("MirroredStrategy, PyTorch DDP") != std::string::npos;
    if (s["topic"] == "fp16") fp16 = t.find("FP16 (mixed precision) pays") == 0 && t.find("12x") != std::string::npos;
  }
  EXPECT_TRUE(strategy);
  EXPECT_TRUE(fp16);
}

TEST(AdviseEfficiency, MeasuredOverheadOfATrainDpRecord) {
  MeasuredDp d;
  d.step_ms = 100.0;
  d.efficiency = 0.9;
  d.exposed_comm_ms = 4.0;
  // 100 ms x (1 - 0.9) = 10 ms lost against 2 x one GPU, 4 of them the all-reduce: 6 ms left out.
  EXPECT_NEAR(*measured_overhead_s(d), 0.006, 1e-12);
  d.efficiency = 0.99;  // 1 ms lost, less than its all-reduce: noise, no negative overhead
  EXPECT_EQ(*measured_overhead_s(d), 0.0);
  d.exposed_comm_ms.reset();
  EXPECT_FALSE(measured_overhead_s(d).has_value());
}

TEST(AdviseEfficiency, IsABoundAndTakesTheMeasuredStepOverhead) {
  json doc = sample_doc();
  for (auto& r : doc["records"])
    if (r["id"] == "train_dp/resnet50/fp16/nhwc/b256/g2")
      r["metrics"].update({{"step_time_ms", 128.0}, {"exposed_comm_ms", 3.0}});  // 512 images / 128 ms = 4000/s
  nb::AdviseOptions o;
  o.files = {"sample"};
  o.gpus = "1,2,4";
  o.params = 25e6;
  o.bucket_mib = 1e6 / 1048576.0 * 200;  // one bucket: the all-reduce (1 ms at 2 GPUs) all exposed
  const json a = build_advice(gather_inputs({doc}, "fp32"), o);
  EXPECT_EQ(a["efficiency_definition"]["kind"], "bound");
  EXPECT_EQ(a["efficiency_definition"]["left_out"].size(), left_out_costs().size());
  const double overhead = 0.128 * (1 - 0.86) - 0.003;  // 14.92 ms the model leaves out, measured
  int with = 0;
  for (const auto& r : a["rows"]) {
    if (r["precision"] != "fp16") continue;
    if (r["gpus"] == 1) {
      EXPECT_FALSE(r.contains("efficiency_with_overhead"));
      continue;
    }
    ++with;
    ASSERT_TRUE(r.contains("efficiency_with_overhead")) << r.dump();
    EXPECT_NEAR(r["measured_overhead"]["overhead_ms"].get<double>(), overhead * 1e3, 1e-9);
    EXPECT_EQ(r["measured_overhead"]["gpus"], 2);
    const int n = r["gpus"].get<int>();
    const double step = r["step_ms"].get<double>() * 1e-3 + overhead;
    EXPECT_NEAR(r["step_with_overhead_ms"].get<double>(), step * 1e3, 1e-9);
    // N x 256 images per step against N x one GPU's 256 images in 110 ms.
    EXPECT_NEAR(r["efficiency_with_overhead"].get<double>(), (n * 256 / step) / (n * 256 / 0.110), 1e-9);
    EXPECT_LT(r["efficiency_with_overhead"].get<double>(), r["efficiency"].get<double>());
    const std::string how = r["measured_overhead"]["how"];
    EXPECT_EQ(how.find("taken as is") != std::string::npos, n != 2) << how;
  }
  EXPECT_EQ(with, 2);  // 2 and 4 GPUs
  // The text names what the figure is and what it leaves out, beside the table.
  const std::string text = advice_text(a);
  EXPECT_NE(text.find("bound%"), std::string::npos);
  EXPECT_NE(text.find("+ovh%"), std::string::npos);
  EXPECT_NE(text.find("an upper bound set by communication and input"), std::string::npos) << text;
  for (const auto& c : left_out_costs()) EXPECT_NE(text.find(c), std::string::npos) << c;
  bool strategy = false;
  for (const auto& st : a["recommendation"])
    if (st["topic"] == "strategy")
      strategy = st["text"].get<std::string>().find("with the step overhead train_dp/resnet50/fp16/nhwc/b256/g2 "
                                                    "measured") != std::string::npos;
  EXPECT_TRUE(strategy);
}

TEST(AdviseBuild, RefusesCurvesOfDifferentNcclSettings) {
  json doc = sample_doc();
  json sockets = doc["records"][0];
  sockets["details"] = {{"nccl_env", {{"NCCL_P2P_DISABLE", "1"}, {"NCCL_SHM_DISABLE", "1"}, {"NCCL_VERSION", "2.28"}}}};
  doc["records"].push_back(sockets);
  const Inputs in = gather_inputs({doc}, "fp32");
  EXPECT_EQ(in.nccl_settings, (std::set<std::string>{"defaults", "NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1"}));
  nb::AdviseOptions o;
  o.files = {"sample"};
  try {
    build_advice(in, o);
    FAIL() << "mixed NCCL settings accepted";
  } catch (const nb::Error& e) {
    EXPECT_NE(std::string(e.what()).find("different NCCL settings"), std::string::npos);
  }
}

TEST(AdviseBuild, GlobalBatchAccumulation) {
  nb::AdviseOptions o;
  o.files = {"sample"};
  o.gpus = "2";
  o.global_batch = 2048;  // 2 GPUs x 256: 4 steps
  const json a = build_advice(gather_inputs({sample_doc()}, "fp32"), o);
  bool k4 = false;
  for (const auto& r : a["rows"]) k4 = k4 || (r["gpus"] == 2 && r["accumulation"] == 4);
  EXPECT_TRUE(k4);
}

TEST(AdviseBuild, WhatIfIsLabelled) {
  nb::AdviseOptions o;
  o.profile = "Tesla P40";
  o.gpus = "1,4";
  o.link = "pcie-gen3";
  const json a = build_advice(Inputs{}, o);
  EXPECT_EQ(a["label"], "predicted from profile, not measured");
  ASSERT_EQ(a["rows"].size(), 2u);
  for (const auto& r : a["rows"]) EXPECT_EQ(r["label"], "predicted from profile, not measured");
  for (const auto& s : a["recommendation"])
    EXPECT_NE(s["text"].get<std::string>().find("predicted from profile, not measured"), std::string::npos);
  // The P40 has no fast FP16: the step is FP32, and FP16 does not pay.
  EXPECT_EQ(a["rows"][0]["precision"], "fp32");
  // 64 images x 24.6 GFLOP at 40% of 11.76 TFLOP/s.
  EXPECT_NEAR(a["rows"][0]["compute_ms"].get<double>(), 64 * 24.6e9 / (11.76e12 * 0.4) * 1e3, 1e-6);
  // The 40% is an assumption, and every place that uses it says so.
  EXPECT_NE(a["rows"][0]["step_source"].get<std::string>().find("an assumed 40%"), std::string::npos);
  EXPECT_NE(a["rows"][0]["step_source"].get<std::string>().find("an assumption, not measured"), std::string::npos);
  bool said = false;
  for (const auto& x : a["assumptions"])
    said = said || x.get<std::string>().find("an assumed 40% of the profile's peak (an assumption, not a measurement") !=
                       std::string::npos;
  EXPECT_TRUE(said) << a["assumptions"].dump();
}

TEST(AdviseBuild, InputErrorsNameTheOption) {
  nb::AdviseOptions o;
  o.profile = "Tesla P99";
  o.gpus = "4";
  o.link = "pcie-gen3";
  try {
    build_advice(Inputs{}, o);
    FAIL() << "unknown profile accepted";
  } catch (const nb::Error& e) {
    EXPECT_NE(std::string(e.what()).find("--profile"), std::string::npos);
  }
  nb::AdviseOptions l;
  l.link = "nvlink";
  EXPECT_THROW(build_advice(Inputs{}, l), nb::Error);
  nb::AdviseOptions nodes;
  nodes.nodes = 2;
  EXPECT_THROW(build_advice(gather_inputs({sample_doc()}, "fp32"), nodes), nb::Error);
  nb::AdviseOptions step;
  step.step_ms = 100;
  EXPECT_THROW(build_advice(gather_inputs({sample_doc()}, "fp32"), step), nb::Error);  // no --batch
  // Step times but no all-reduce records: nothing to predict 2 GPUs from.
  json doc = sample_doc();
  json kept = json::array();
  for (const auto& r : doc["records"])
    if (r["id"].get<std::string>().rfind("nccl/", 0) != 0) kept.push_back(r);
  doc["records"] = kept;
  nb::AdviseOptions two;
  two.gpus = "1,2";
  EXPECT_THROW(build_advice(gather_inputs({doc}, "fp32"), two), nb::Error);
  EXPECT_THROW(parse_counts("1,x"), nb::Error);
  EXPECT_THROW(parse_counts("0"), nb::Error);
  EXPECT_EQ(parse_counts("4,1,2,2"), (std::vector<int>{1, 2, 4}));
}

TEST(AdviseCli, ParsesTheOptions) {
  const nb::ParseOutcome p = nb::parse_cli({"nodebench", "advise", "a.json", "b.json", "--gpus", "1,2,4", "--nodes", "2",
                                            "--inter-node-gbps", "12.5", "--step-ms", "180", "--batch", "256",
                                            "--global-batch", "1024", "--bucket-mib", "50", "--grad-dtype", "fp16",
                                            "--json", "out.json"});
  ASSERT_TRUE(p.command) << p.err;
  EXPECT_EQ(std::string(p.command->name()), "advise");
  const nb::AdviseOptions& a = p.command->as<nb::AdviseCommand>()->options;
  EXPECT_EQ(a.files, (std::vector<std::string>{"a.json", "b.json"}));
  EXPECT_EQ(a.gpus, "1,2,4");
  EXPECT_EQ(a.nodes, 2);
  EXPECT_DOUBLE_EQ(*a.inter_node_gbps, 12.5);
  EXPECT_DOUBLE_EQ(*a.step_ms, 180.0);
  EXPECT_EQ(*a.batch, 256);
  EXPECT_EQ(*a.global_batch, 1024);
  EXPECT_DOUBLE_EQ(a.bucket_mib, 50.0);
  EXPECT_EQ(a.grad_dtype, "fp16");
  EXPECT_EQ(a.json_file, "out.json");
  const nb::ParseOutcome bad = nb::parse_cli({"nodebench", "advise", "a.json", "--grad-dtype", "fp8"});
  EXPECT_FALSE(bad.command);
  EXPECT_EQ(bad.exit_code, nb::kExitUsage);
  EXPECT_NE(bad.err.find("--grad-dtype"), std::string::npos);
}
