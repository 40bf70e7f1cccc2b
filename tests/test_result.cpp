#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "run/case_records.hpp"
#include "output/json_file.hpp"
#include "run/result.hpp"

using namespace nb;
using nlohmann::json;

namespace {

Case make_case() {
  Case c;
  c.family = "gemm";
  c.name = "fp32/cublaslt/square_64";
  c.params = {{"precision", "fp32"}, {"m", 64}};
  return c;
}

GpuInfo make_gpu() {
  GpuInfo g;
  g.name = "NVIDIA H200";
  g.peaks["fp32_tflops"] = Peak{50.0, "profile:test"};
  return g;
}

}  // namespace

TEST(Record, ThroughputAndPercentOfPeakFromMedian) {
  Case c = make_case();
  GpuInfo g = make_gpu();
  CaseOutput out;
  out.measurement = Measurement{};
  out.measurement->samples_s = {2e-3, 1e-3, 1e-3, 1e-3, 3e-3};  // median 1 ms
  out.measurement->stop = StopReason::converged;
  out.config.min_samples = 3;
  out.throughput_metric = "tflops";
  out.work_per_launch = 0.025;  // 25 TFLOP... per second at 1 ms: 25 TFLOPS
  out.peak_key = "fp32_tflops";
  RecordInput in;
  in.c = &c;
  in.gpus = {0};
  in.status = Status::ok;
  in.out = &out;
  in.gpu = &g;
  in.nvml_available = true;
  in.started_at = "2026-11-29T00:00:00.000Z";
  const json r = make_record(in);
  EXPECT_EQ(r["status"], "ok");
  EXPECT_TRUE(r["reason"].is_null());
  EXPECT_DOUBLE_EQ(r["stats"]["median"].get<double>(), 1e-3);
  EXPECT_NEAR(r["metrics"]["tflops"].get<double>(), 25.0, 1e-9);
  EXPECT_NEAR(r["metrics"]["time_us"].get<double>(), 1000.0, 1e-9);
  EXPECT_NEAR(r["percent_of_peak"]["percent"].get<double>(), 50.0, 1e-9);
  EXPECT_EQ(r["percent_of_peak"]["peak_key"], "fp32_tflops");
  EXPECT_EQ(r["samples_s"].size(), 5u);
  // CV of these samples is far above 1%: flagged noisy.
  EXPECT_NE(std::find(r["flags"].begin(), r["flags"].end(), "noisy"), r["flags"].end());
}

TEST(Record, NoPeakForUnknownKeyAndFlagsForClockAndThrottle) {
  Case c = make_case();
  GpuInfo g = make_gpu();
  CaseOutput out;
  out.measurement = Measurement{};
  out.measurement->samples_s = std::vector<double>(20, 1e-3);
  out.measurement->throttled = true;
  out.measurement->power_capped = true;
  out.measurement->stop = StopReason::time_cap;
  out.throughput_metric = "tflops";
  out.work_per_launch = 1;
  out.peak_key = "tf32_tflops";  // this GPU's peaks lack it
  RecordInput in{&c, {0}, Status::ok, "", &out, &g, std::nullopt, std::nullopt, false, "2026-11-29T00:00:00.000Z", 0.1};
  const json r = make_record(in);
  EXPECT_TRUE(r["percent_of_peak"].is_null());
  std::set<std::string> flags(r["flags"].begin(), r["flags"].end());
  EXPECT_TRUE(flags.count("throttled"));
  EXPECT_TRUE(flags.count("power_capped"));
  EXPECT_TRUE(flags.count("time_capped"));
  EXPECT_TRUE(flags.count("clock_unknown"));
  EXPECT_FALSE(flags.count("noisy"));
}

TEST(Record, WrongAndSkippedAndEmptyOk) {
  Case c = make_case();
  GpuInfo g = make_gpu();
  CaseOutput out;
  out.measurement = Measurement{};
  out.measurement->samples_s = {1e-3};
  out.wrong = true;
  out.wrong_reason = "3 of 24 sampled entries outside the bound";
  RecordInput in{&c, {0}, Status::ok, "", &out, &g, std::nullopt, std::nullopt, true, "2026-11-29T00:00:00.000Z", 0.1};
  json r = make_record(in);
  EXPECT_EQ(r["status"], "wrong");
  EXPECT_EQ(r["reason"], out.wrong_reason);
  EXPECT_TRUE(r["stats"].is_object());  // a wrong case keeps its timing

  RecordInput skip{&c, {0}, Status::skipped, "tf32 needs compute capability 8.0", nullptr, &g, std::nullopt,
                   std::nullopt, true, "2026-11-29T00:00:00.000Z", 0};
  r = make_record(skip);
  EXPECT_EQ(r["status"], "skipped");
  EXPECT_TRUE(r["stats"].is_null());
  EXPECT_EQ(r["reason"], "tf32 needs compute capability 8.0");

  CaseOutput empty;
  RecordInput none{&c, {0}, Status::ok, "", &empty, &g, std::nullopt, std::nullopt, true, "2026-11-29T00:00:00.000Z", 0};
  r = make_record(none);
  EXPECT_EQ(r["status"], "failed");  // ok without a timing is not ok
  EXPECT_FALSE(r["reason"].get<std::string>().empty());
}

TEST(ResultFile, WritesCompleteDocumentsAtomically) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(NB_TEST_OUTPUT_DIR) / "result_file_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "run.json").string();
  json header = {{"run_id", "0123456789abcdef"},
                 {"started_at", "2026-11-29T00:00:00.000Z"},
                 {"nodebench", {{"version", "0.1.0"}, {"git_commit", "test"}, {"command_line", {"nodebench", "run"}}}},
                 {"options", json::object()},
                 {"environment", {{"host", {{"hostname", "h"}, {"os", "o"}, {"kernel", "k"}, {"cpu_model", "c"},
                                            {"cpu_count", 2}, {"numa_nodes", json::array()}}},
                                  {"software", {{"driver_version", nullptr}, {"cuda_driver_version", nullptr},
                                                {"cuda_runtime_version", "13.0"}, {"cublas_version", "13.1.0"},
                                                {"cudnn_version", nullptr}, {"nccl_version", nullptr}}},
                                  {"nvml", {{"available", false}, {"error", "test"}}},
                                  {"gpus", json::array()}}}};
  RunDocument d(header);
  JsonResultFile f(path, d, 1e9);  // never rewrite between records on its own
  {
    std::ifstream in(path);
    const json first = json::parse(in);
    EXPECT_EQ(first["run_status"], "running");
    EXPECT_EQ(first["records"].size(), 0u);
  }
  Case c = make_case();
  GpuInfo g = make_gpu();
  CaseOutput out;
  out.measurement = Measurement{};
  out.measurement->samples_s = {1e-3, 1.01e-3, 0.99e-3};
  out.throughput_metric = "tflops";
  out.work_per_launch = 0.01;
  out.peak_key = "fp32_tflops";
  RecordInput in{&c, {0}, Status::ok, "", &out, &g, ClockSnapshot{1980.0, 3201.0, 40.0, 300.0, 0x4ull}, std::nullopt,
                 true, "2026-11-29T00:00:00.000Z", 0.5};
  d.add(make_record(in));
  f.recorded(d, d.doc()["records"].back(), Progress{});
  Case c2 = make_case();  // another case: a case appears once in a run on its GPUs (the schema test checks it)
  c2.name = "fp32/cublaslt/square_128";
  RecordInput skip{&c2, {0}, Status::skipped, "needs two GPUs", nullptr, &g, std::nullopt, std::nullopt, true,
                   "2026-11-29T00:00:01.000Z", 0};
  d.add(make_record(skip));
  {
    std::ifstream mid(path);
    EXPECT_EQ(json::parse(mid)["records"].size(), 0u);  // throttled: not rewritten yet
  }
  d.finish("complete");
  f.finished(d);
  std::ifstream in2(path);
  const json done = json::parse(in2);
  EXPECT_EQ(done["run_status"], "complete");
  EXPECT_EQ(done["schema"], "nodebench.result");
  EXPECT_EQ(done["schema_version"], 1);
  EXPECT_EQ(done["summary"]["ok"], 1);
  EXPECT_EQ(done["summary"]["skipped"], 1);
  EXPECT_EQ(done["summary"]["total"], 2);
  EXPECT_FALSE(done["finished_at"].is_null());
  // No temporary file is left behind.
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1u);
  // Kept for the schema validation test (tests/CMakeLists.txt).
  fs::copy_file(path, fs::path(NB_TEST_OUTPUT_DIR) / "writer_output.json", fs::copy_options::overwrite_existing);
}

TEST(ResultFile, UnwritableFolderThrows) {
  EXPECT_THROW(write_file_atomic("/nonexistent-dir/x.json", "{}"), Error);
}

namespace {
nb::CaseOutput timed_output(StopReason stop) {
  CaseOutput out;
  out.measurement = Measurement{};
  out.measurement->samples_s = std::vector<double>(10, 1e-3);
  out.measurement->stop = stop;
  return out;
}
std::set<std::string> flag_set(const json& r) { return std::set<std::string>(r["flags"].begin(), r["flags"].end()); }
}  // namespace

TEST(Record, SampleCapApartFromTimeCap) {
  Case c = make_case();
  GpuInfo g = make_gpu();
  CaseOutput a = timed_output(StopReason::max_samples);
  RecordInput in{&c, {0}, Status::ok, "", &a, &g, std::nullopt, std::nullopt, true, "2026-11-29T00:00:00.000Z", 0.1};
  auto f = flag_set(make_record(in));
  EXPECT_TRUE(f.count("sample_capped"));
  EXPECT_FALSE(f.count("time_capped"));
  CaseOutput b = timed_output(StopReason::time_cap);
  in.out = &b;
  f = flag_set(make_record(in));
  EXPECT_TRUE(f.count("time_capped"));
  EXPECT_FALSE(f.count("sample_capped"));
  CaseOutput d = timed_output(StopReason::converged);
  in.out = &d;
  f = flag_set(make_record(in));
  EXPECT_FALSE(f.count("time_capped"));
  EXPECT_FALSE(f.count("sample_capped"));
}

TEST(Record, PercentOfPeakAtTheMeasuredClock) {
  Case c = make_case();
  GpuInfo g = make_gpu();
  g.peaks["fp32_tflops"] = Peak{50.0, "profile:test", 2000.0};
  CaseOutput out = timed_output(StopReason::converged);
  out.throughput_metric = "tflops";
  out.work_per_launch = 0.03;  // 30 TFLOPS at 1 ms
  out.peak_key = "fp32_tflops";
  out.measurement->sm_mhz_during = 1500.0;  // 3/4 of the peak clock: the peak there is 37.5
  RecordInput in{&c, {0}, Status::ok, "", &out, &g, std::nullopt, std::nullopt, true, "2026-11-29T00:00:00.000Z", 0.1};
  const json r = make_record(in);
  const json& p = r["percent_of_peak"];
  EXPECT_NEAR(p["percent"].get<double>(), 60.0, 1e-9);
  EXPECT_NEAR(p["peak_at_clock"].get<double>(), 37.5, 1e-9);
  EXPECT_NEAR(p["percent_at_clock"].get<double>(), 80.0, 1e-9);
  EXPECT_DOUBLE_EQ(p["peak_clock_mhz"].get<double>(), 2000.0);
  // Without a measured clock, or a peak without a clock, there is no figure at the clock.
  out.measurement->sm_mhz_during.reset();
  EXPECT_FALSE(make_record(in)["percent_of_peak"].contains("percent_at_clock"));
}

TEST(Record, AbovePeakMarksTheCaseWrong) {
  Case c = make_case();
  GpuInfo g = make_gpu();  // fp32_tflops peak 50
  std::vector<GpuInfo> gpus{g};
  CaseOutput out = timed_output(StopReason::converged);
  out.throughput_metric = "tflops";
  out.peak_key = "fp32_tflops";
  RecordInput in{&c, {0}, Status::ok, "", &out, &g, std::nullopt, std::nullopt, true, "2026-11-29T00:00:00.000Z", 0.1};
  out.work_per_launch = 0.0604;  // 60.4 TFLOPS: 120.8%
  json r = make_case_records(in, gpus).records.at(0);
  EXPECT_EQ(r["status"], "wrong");
  EXPECT_EQ(r["reason_kind"], "above_peak");
  EXPECT_NE(r["reason"].get<std::string>().find("120.8%"), std::string::npos);
  EXPECT_NE(r["reason"].get<std::string>().find("fp32_tflops"), std::string::npos);
  EXPECT_TRUE(flag_set(r).count("above_peak"));
  out.work_per_launch = 0.0514;  // 102.8%: within the slack
  r = make_case_records(in, gpus).records.at(0);
  EXPECT_EQ(r["status"], "ok");
  EXPECT_FALSE(flag_set(r).count("above_peak"));
  out.work_per_launch = 0.0516;  // 103.2%
  r = make_case_records(in, gpus).records.at(0);
  EXPECT_EQ(r["status"], "wrong");
  // A wrong case keeps its own reason, flagged too.
  out.wrong = true;
  out.wrong_reason = "5 of 24 sampled entries outside the bound";
  r = make_case_records(in, gpus).records.at(0);
  EXPECT_EQ(r["reason"], out.wrong_reason);
  EXPECT_TRUE(flag_set(r).count("above_peak"));
}
