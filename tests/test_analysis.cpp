// The FP16-versus-FP32 verdict on inputs built from published rates (no GPU needed), and the
// per-architecture unit rates the peak family uses.
#include <gtest/gtest.h>

#include "bench/analysis.hpp"
#include "node/profiles.hpp"

using namespace nb;
using nlohmann::json;

namespace {

json rec(const std::string& family, json params, const std::string& metric, double v, int gpu = 0) {
  return {{"family", family}, {"status", "ok"}, {"gpus", {gpu}}, {"params", params}, {"metrics", {{metric, v}}}};
}

json gemm(const std::string& prec, int n, double v) {
  return rec("gemm", {{"precision", prec}, {"shape", "square"}, {"m", n}, {"api", "cublaslt"}},
             prec == "int8" ? "tops" : "tflops", v);
}

json peak(const std::string& unit, double v) {
  return rec("peak", {{"unit", unit}}, unit.find("int") == 0 || unit == "mma_int8" ? "tops" : "tflops", v);
}

}  // namespace

TEST(Fp16Verdict, P40DoesNotPayAndNamesInt8) {
  // Tesla P40 published rates: FP32 11.76 TFLOPS, FP16 1/64 of it (0.18), INT8 DP4A 47 TOPS.
  // cuBLAS FP16 GEMM with FP32 compute on sm_61 runs at about the FP32 rate.
  const json records = json::array({peak("fp32_ffma", 11.76), peak("fp16_hfma2", 11.76 / 64), peak("int8_dp4a", 47.0),
                                    gemm("fp32", 8192, 11.0), gemm("fp16", 8192, 10.6), gemm("int8", 8192, 40.0)});
  const json a = fp16_vs_fp32(records, {{0, "Tesla P40", 6, 1}});
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0]["verdict"], "does_not_pay");
  EXPECT_NE(a[0]["reason"].get<std::string>().find("1/64"), std::string::npos);
  EXPECT_NE(a[0]["recommendation"].get<std::string>().find("INT8"), std::string::npos);
  bool saw_peak = false;
  for (const auto& r : a[0]["rows"])
    if (r["source"] == "peak: fp16_hfma2 / fp32_ffma") {
      saw_peak = true;
      EXPECT_NEAR(r["speedup_x"].get<double>(), 1.0 / 64, 1e-9);
    }
  EXPECT_TRUE(saw_peak);
}

TEST(Fp16Verdict, H200Pays) {
  // H200: FP32 66.9 TFLOPS, FP16 tensor 989; GEMMs reach a large part of each.
  const json records = json::array({peak("fp32_ffma", 63.0), peak("mma_fp16", 600.0), gemm("fp32", 8192, 51.0),
                                    gemm("fp16", 8192, 700.0), gemm("fp32", 1024, 30.0)});
  const json a = fp16_vs_fp32(records, {{0, "NVIDIA H200", 9, 0}});
  EXPECT_EQ(a[0]["verdict"], "pays");
  EXPECT_NE(a[0]["reason"].get<std::string>().find("8192"), std::string::npos);  // the largest common size
  EXPECT_FALSE(a[0].contains("recommendation"));
}

TEST(Fp16Verdict, PeakOnlyAndNothingMeasured) {
  const json only_peak = json::array({peak("fp32_ffma", 10.0), peak("fp16_hfma2", 20.0)});
  EXPECT_EQ(fp16_vs_fp32(only_peak, {{0, "x", 7, 0}})[0]["verdict"], "pays");
  const json none = json::array({gemm("fp32", 1024, 10.0)});
  EXPECT_EQ(fp16_vs_fp32(none, {{0, "x", 7, 0}})[0]["verdict"], "not_measured");
  // Records of another GPU do not count.
  json other = json::array({gemm("fp32", 1024, 10.0), gemm("fp16", 1024, 100.0)});
  other[1]["gpus"] = {1};
  EXPECT_EQ(fp16_vs_fp32(other, {{0, "x", 9, 0}})[0]["verdict"], "not_measured");
  EXPECT_EQ(fp16_verdict_lines(fp16_vs_fp32(only_peak, {{0, "x", 7, 0}})).size(), 1u);
}

TEST(Fp16Verdict, ATensorCaseOffTheDensePathSaysSoInItsRow) {
  // A Blackwell GPU where the peak family measured mma.sync (details.dense_tensor_peak false):
  // the row names it; the same record without that flag gives the plain row.
  json tensor = peak("mma_fp16", 500.0);
  tensor["details"] = {{"dense_tensor_peak", false}};
  const json flagged = json::array({peak("fp32_ffma", 70.0), tensor});
  const json plain = json::array({peak("fp32_ffma", 70.0), peak("mma_fp16", 500.0)});
  auto sources = [](const json& a) {
    std::vector<std::string> s;
    for (const auto& r : a[0]["rows"]) s.push_back(r["source"].get<std::string>());
    return s;
  };
  EXPECT_EQ(sources(fp16_vs_fp32(flagged, {{0, "B200", 10, 0}})),
            std::vector<std::string>{"peak: mma_fp16 (mma.sync, not the dense tensor rate) / fp32_ffma"});
  EXPECT_EQ(sources(fp16_vs_fp32(plain, {{0, "H200", 9, 0}})), std::vector<std::string>{"peak: mma_fp16 / fp32_ffma"});
}

TEST(UnitRates, MatchPublishedPeaks) {
  // ops/clock/SM x SMs x boost clock reproduces the datasheet figure.
  auto tf = [](const char* unit, int maj, int min, int sms, double ghz) {
    return *unit_ops_per_clock_per_sm(unit, maj, min) * sms * ghz / 1e3;
  };
  EXPECT_NEAR(tf("fp32_ffma", 6, 1, 30, 1.531), 11.76, 0.01);   // P40
  EXPECT_NEAR(tf("int8_dp4a", 6, 1, 30, 1.531), 47.0, 0.1);     // P40 INT8
  EXPECT_NEAR(tf("fp16_hfma2", 6, 1, 30, 1.531), 0.18, 0.01);   // P40 FP16
  EXPECT_NEAR(tf("mma_fp16", 7, 0, 80, 1.530), 125.0, 0.5);     // V100
  EXPECT_NEAR(tf("mma_fp16", 8, 0, 108, 1.410), 312.0, 0.5);    // A100
  EXPECT_NEAR(tf("fp64_dfma", 8, 0, 108, 1.410), 9.7, 0.05);    // A100
  EXPECT_NEAR(tf("fp32_ffma", 9, 0, 132, 1.980), 66.9, 0.05);   // H100/H200
  EXPECT_NEAR(tf("mma_fp16", 9, 0, 132, 1.830), 989.0, 1.0);    // H100/H200 at the tensor boost clock
  EXPECT_FALSE(unit_ops_per_clock_per_sm("mma_fp16", 6, 1).has_value());  // no tensor cores on sm_61
  EXPECT_FALSE(unit_ops_per_clock_per_sm("nonsense", 9, 0).has_value());
}

namespace {
json net(int64_t batch, double ips, double mem_frac, const std::string& status = "ok", const std::string& prec = "fp16") {
  json r = {{"family", "conv"}, {"status", status}, {"gpus", {0}},
            {"params", {{"layer", "resnet50_total"}, {"precision", prec}, {"layout", "nchw"}, {"batch", batch}}},
            {"metrics", json::object()}, {"reason", nullptr}};
  if (status == "ok")
    r["metrics"] = {{"train_images_per_s", ips}, {"memory_fraction_x", mem_frac}, {"peak_memory_bytes", mem_frac * 1e11}};
  else
    r["reason"] = "out of memory: does not fit: asked for 1 bytes";
  return r;
}
}  // namespace

TEST(BatchRecommendation, SmallestBatchNearThePlateauThatFits) {
  // Throughput saturates at 1000 images/s; 95% of it is first reached at batch 64.
  json recs = json::array({net(16, 700, 0.05), net(32, 900, 0.10), net(64, 960, 0.20), net(128, 1000, 0.40),
                           net(256, 990, 0.80), net(512, 0, 0, "skipped")});
  json a = batch_recommendation(recs, 0.9);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0]["batch"], 64);
  EXPECT_DOUBLE_EQ(a[0]["plateau_images_per_s"].get<double>(), 1000);
  EXPECT_EQ(a[0]["smallest_batch_out_of_memory"], 512);
  // A tighter memory limit that the plateau batches exceed leaves no recommendation, with why.
  json b = batch_recommendation(recs, 0.15);
  EXPECT_TRUE(b[0]["batch"].is_null());
  EXPECT_NE(b[0]["reason"].get<std::string>().find("15%"), std::string::npos);
  EXPECT_EQ(batch_recommendation_lines(a).size(), 1u);
}

TEST(BatchRecommendation, SeriesAreSeparateAndNothingFitIsSaid) {
  json recs = json::array({net(8, 100, 0.1, "ok", "fp32"), net(8, 300, 0.1, "ok", "fp16"), net(1, 0, 0, "skipped", "tf32")});
  json a = batch_recommendation(recs, 0.9);
  ASSERT_EQ(a.size(), 3u);
  for (const auto& e : a) {
    if (e["precision"] == "tf32") {
      EXPECT_TRUE(e["batch"].is_null());
      EXPECT_EQ(e["reason"], "no batch size fit in memory");
    } else {
      EXPECT_EQ(e["batch"], 8);
    }
  }
}

namespace {
json on(json r, const std::string& host, int rank) {
  r["host"] = host;
  r["rank"] = rank;
  return r;
}
}  // namespace

TEST(AnalysisKeys, GpuZeroOfTwoHostsDoesNotMerge) {
  // Host A's GPU 0 is a P40 (FP16 GEMM at the FP32 rate), host B's GPU 0 an H200 (FP16 7x FP32).
  // Merged by index alone, host A would borrow host B's fast FP16 figure and "pay".
  const json records = json::array({on(gemm("fp32", 8192, 11.0), "hostA", 0), on(gemm("fp16", 8192, 10.6), "hostA", 0),
                                    on(gemm("fp32", 8192, 51.0), "hostB", 1), on(gemm("fp16", 8192, 700.0), "hostB", 1)});
  const json env = {
      {"ranks", {{{"rank", 0}, {"host", "hostA"}, {"gpu", 0}, {"gpu_name", "Tesla P40"}, {"pci_bus_id", "0000:3B:00.0"}},
                 {{"rank", 1}, {"host", "hostB"}, {"gpu", 0}, {"gpu_name", "NVIDIA H200"}, {"pci_bus_id", "0000:18:00.0"}}}},
      {"nodes", {{{"hostname", "hostA"}, {"environment", {{"gpus", {{{"index", 0}, {"pci_bus_id", "0000:3B:00.0"}, {"compute_capability", "6.1"}}}}}}},
                 {{"hostname", "hostB"}, {"environment", {{"gpus", {{{"index", 0}, {"pci_bus_id", "0000:18:00.0"}, {"compute_capability", "9.0"}}}}}}}}}};
  const auto briefs = gpu_briefs(env, {{0, "Tesla P40", 6, 1}});
  ASSERT_EQ(briefs.size(), 2u);
  EXPECT_EQ(briefs[1].cc_major, 9);
  EXPECT_EQ(briefs[1].host, "hostB");
  const json a = fp16_vs_fp32(records, briefs);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0]["verdict"], "does_not_pay");
  EXPECT_EQ(a[0]["host"], "hostA");
  EXPECT_EQ(a[0]["compute_capability"], "6.1");
  EXPECT_EQ(a[1]["verdict"], "pays");
  EXPECT_EQ(a[1]["rank"], 1);
  EXPECT_NE(fp16_verdict_lines(a)[1].find("rank 1 (hostB) gpu0"), std::string::npos);
  // Without ranks in the environment (one process) the local GPUs are the briefs.
  EXPECT_EQ(gpu_briefs(json::object(), {{0, "x", 7, 0}}).size(), 1u);
  EXPECT_EQ(gpu_briefs(json::object(), {{0, "x", 7, 0}})[0].rank, -1);
}

TEST(AnalysisKeys, BatchSeriesPerHostAndRank) {
  // GPU 0 on two hosts: two series, each with its own plateau and batch.
  json recs = json::array({on(net(16, 500, 0.1), "hostA", 0), on(net(32, 1000, 0.2), "hostA", 0),
                           on(net(16, 2000, 0.1), "hostB", 1), on(net(32, 2010, 0.2), "hostB", 1)});
  json a = batch_recommendation(recs, 0.9);
  ASSERT_EQ(a.size(), 2u);
  for (const auto& e : a) {
    if (e["host"] == "hostA") {
      EXPECT_EQ(e["rank"], 0);
      EXPECT_EQ(e["batch"], 32);
      EXPECT_DOUBLE_EQ(e["plateau_images_per_s"].get<double>(), 1000);
    } else {
      EXPECT_EQ(e["host"], "hostB");
      EXPECT_EQ(e["batch"], 16);
      EXPECT_DOUBLE_EQ(e["plateau_images_per_s"].get<double>(), 2010);
    }
  }
  const auto lines = batch_recommendation_lines(a);
  EXPECT_NE(lines[0].find("(hostA) gpu0"), std::string::npos) << lines[0];
  // A one-process run's entries carry neither.
  EXPECT_FALSE(batch_recommendation(json::array({net(16, 500, 0.1)}), 0.9)[0].contains("host"));
}
