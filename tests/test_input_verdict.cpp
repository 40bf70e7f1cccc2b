// The input family's verdict (cores needed to feed 1, 2, 4, 8 GPUs) against values computed by
// hand, the analysis over records, advise's input line; the family's cases; host-only cases in
// the harness (schedule, no GPU) and the input settings.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "input/input_verdict.hpp"
#include "app/cli.hpp"
#include "advise/advice.hpp"
#include "base/error.hpp"
#include "run/plan.hpp"
#include "bench/settings.hpp"

using namespace nb;
using nb::input::Curve;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// 100 images/s on one core, 190 on two, 300 on four, on a host of 8 CPUs.
Curve curve() { return Curve{"nchw/fp32", "", 8, {{1, 100}, {2, 190}, {4, 300}}}; }

json cpu_record(const std::string& layout, const std::string& dtype, int cores, double ips, int cpus = 8,
                const std::string& placement = "spread") {
  const std::string name = placement == "spread" ? "c" + std::to_string(cores) : "numa_" + placement;
  return {{"id", "input/cpu/" + layout + "/" + dtype + "/" + name}, {"family", "input"}, {"status", "ok"},
          {"params", {{"layout", layout}, {"dtype", dtype}, {"placement", placement}, {"cores", cores}}},
          {"metrics", {{"images_per_s", ips}}}, {"details", {{"cpus_available", cpus}, {"numa_node", 1}}}};
}

json train_record(const std::string& precision, const std::string& layout, int batch, double ips) {
  return {{"id", "train/resnet50/" + precision + "/" + layout + "/b" + std::to_string(batch)}, {"family", "train"},
          {"status", "ok"}, {"gpus", {0}}, {"params", {{"precision", precision}, {"layout", layout}, {"batch", batch}}},
          {"metrics", {{"images_per_s", ips}, {"step_time_ms", 1e3 * batch / ips}}}};
}

json curve_records() {
  return json::array({cpu_record("nchw", "fp32", 1, 100), cpu_record("nchw", "fp32", 2, 190), cpu_record("nchw", "fp32", 4, 300)});
}

}  // namespace

TEST(InputVerdict, ScalingAndWhereItStops) {
  const input::Scaling s = input::scaling_of(curve());
  EXPECT_DOUBLE_EQ(s.per_core_images_per_s, 100);
  ASSERT_EQ(s.efficiency.size(), 3u);
  EXPECT_NEAR(s.efficiency[1], 0.95, 1e-12);   // 190 / (2 x 100)
  EXPECT_NEAR(s.efficiency[2], 0.75, 1e-12);   // 300 / (4 x 100)
  EXPECT_EQ(s.linear_to, 2);
  EXPECT_EQ(s.stops_at, 4);
}

TEST(InputVerdict, WorkersOnAndBeyondTheCurve) {
  bool ext = true;
  EXPECT_NEAR(input::workers_for(curve(), 50, ext), 0.5, 1e-12);
  EXPECT_FALSE(ext);
  EXPECT_NEAR(input::workers_for(curve(), 150, ext), 1 + 50.0 / 90.0, 1e-12);  // between 1 and 2
  EXPECT_NEAR(input::workers_for(curve(), 300, ext), 4, 1e-12);
  EXPECT_FALSE(ext);
  EXPECT_NEAR(input::workers_for(curve(), 450, ext), 6, 1e-12);  // 4 + 150 / (300 / 4)
  EXPECT_TRUE(ext);
  // A slower point than a smaller count is not capacity: the curve is its running maximum.
  const Curve dip{"nchw/fp32", "", 4, {{1, 100}, {2, 90}}};
  EXPECT_NEAR(input::workers_for(dip, 150, ext), 1.5, 1e-12);
  EXPECT_TRUE(ext);
}

TEST(InputVerdict, FeedRowsWithAndWithoutGpuDecode) {
  // One GPU at 209 images/s: 2 + (209 - 190) / 110 x 2 = 2.345 workers, 3 cores, + 1 driving = 4 of 8.
  json r = input::feed_row(curve(), nullptr, 209, 1);
  EXPECT_NEAR(r["decode_workers"].get<double>(), 2 + 19.0 / 110.0 * 2, 1e-9);
  EXPECT_EQ(r["decode_cores"], 3);
  EXPECT_EQ(r["cores_needed"], 4);
  EXPECT_EQ(r["status"], "pass");
  EXPECT_EQ(r["cores_short"], 0);
  EXPECT_NE(r["text"].get<std::string>().find("keeps up"), std::string::npos);
  // Four: 836 images/s, 4 + 536 / 75 = 11.15 workers beyond the curve: 12 + 4 = 16, 8 short.
  const input::GpuDecode g{"input/gpu/hardware/nchw/fp32/b128", "nchw/fp32", 2000, 0.5};
  r = input::feed_row(curve(), &g, 209, 4);
  EXPECT_NEAR(r["need_images_per_s"].get<double>(), 836, 1e-9);
  EXPECT_TRUE(r["extrapolated"].get<bool>());
  EXPECT_EQ(r["decode_cores"], 12);
  EXPECT_EQ(r["cores_needed"], 16);
  EXPECT_EQ(r["cores_short"], 8);
  EXPECT_EQ(r["status"], "warn");
  EXPECT_NE(r["text"].get<std::string>().find("8 cores short"), std::string::npos) << r["text"];
  // GPU decode: 209 x 0.5 ms = 10.45% of each GPU's time, 2 x 4 = 8 cores: closes the gap.
  const json& gd = r["gpu_decode"];
  EXPECT_NEAR(gd["gpu_time_share"].get<double>(), 0.1045, 1e-12);
  EXPECT_NEAR(gd["train_images_per_s_per_gpu"].get<double>(), 209 / 1.1045, 1e-9);
  EXPECT_TRUE(gd["keeps_up"].get<bool>());
  EXPECT_TRUE(gd["closes_gap"].get<bool>());
  // At 8 GPUs 16 cores would be needed for it: it keeps up but does not close the gap.
  EXPECT_FALSE(input::feed_row(curve(), &g, 209, 8)["gpu_decode"]["closes_gap"].get<bool>());
  const input::GpuDecode slow{"x", "nchw/fp32", 150, 0.5};
  EXPECT_FALSE(input::feed_row(curve(), &slow, 209, 1)["gpu_decode"]["keeps_up"].get<bool>());
}

TEST(InputVerdict, AnalysisBesideTheTrainingSteps) {
  json recs = curve_records();
  recs.push_back(train_record("fp32", "nchw", 64, 209));
  recs.push_back(train_record("fp32", "nchw", 128, 200));  // not the fastest batch
  recs.push_back(train_record("fp16", "nhwc", 64, 500));
  json numa_gpu = cpu_record("nchw", "fp32", 4, 300, 8, "gpu_node");
  json numa_other = cpu_record("nchw", "fp32", 4, 240, 8, "other_node");
  recs.push_back(numa_gpu), recs.push_back(numa_other);
  const json a = input::input_pipeline_analysis(recs, 4);
  ASSERT_EQ(a["curves"].size(), 1u);  // NUMA records are not points of the sweep
  EXPECT_EQ(a["curves"][0]["linear_to_cores"], 2);
  EXPECT_EQ(a["curves"][0]["scaling_stops_at_cores"], 4);
  ASSERT_EQ(a["numa"].size(), 1u);
  EXPECT_NEAR(a["numa"][0]["other_over_gpu_node_ratio"].get<double>(), 0.8, 1e-12);
  EXPECT_EQ(a["judged_at_gpus"], 4);
  ASSERT_EQ(a["verdicts"].size(), 2u);
  const json& fp16 = a["verdicts"][0];  // ordered by precision: fp16 < fp32
  const json& fp32 = a["verdicts"][1];
  EXPECT_EQ(fp32["batch"], 64);
  EXPECT_EQ(fp32["curve"], "nchw/fp32");
  EXPECT_FALSE(fp32.contains("note"));
  ASSERT_EQ(fp32["rows"].size(), 4u);
  EXPECT_EQ(fp32["rows"][2]["gpus"], 4);
  EXPECT_EQ(fp32["status"], fp32["rows"][2]["status"]);
  EXPECT_EQ(fp32["status"], "warn");
  // No nhwc/fp16 curve: the nchw/fp32 one stands in, and the verdict says so.
  EXPECT_EQ(fp16["curve"], "nchw/fp32");
  EXPECT_NE(fp16["note"].get<std::string>().find("no nhwc/fp16 decode curve"), std::string::npos);
  const std::vector<std::string> lines = input::input_pipeline_lines(a);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_NE(lines[0].find("100 images/s per core, linear to 2 of 4 workers"), std::string::npos) << lines[0];
  // Without a GPU on the node the verdict is judged at one GPU; without train records there is none.
  EXPECT_EQ(input::input_pipeline_analysis(recs, 0)["judged_at_gpus"], 1);
  const json none = input::input_pipeline_analysis(curve_records(), 2);
  EXPECT_TRUE(none["verdicts"].empty());
  EXPECT_NE(none["note"].get<std::string>().find("nodebench advise"), std::string::npos);
}

TEST(InputVerdict, AdviseInputLineUsesTheDecodeRate) {
  // advise: a train file and an input file; one GPU, so no all-reduce is needed.
  json train = {{"schema", "nodebench.result"}, {"records", json::array({train_record("fp32", "nchw", 64, 209)})},
                {"environment", {{"host", {{"hostname", "gpu-node"}}}}}};
  json in = {{"schema", "nodebench.result"}, {"records", curve_records()},
             {"environment", {{"host", {{"hostname", "cpu-node"}}}}}};
  // The input family's contribution (bench/contributions.hpp) gathers its records and judges.
  const advise::Inputs gathered = advise::gather_inputs({train, in}, "fp32");
  ASSERT_TRUE(gathered.input_pipeline.measured());
  EXPECT_FALSE(advise::gather_inputs({train}, "fp32").input_pipeline.measured());  // no input record: no input line
  ASSERT_EQ(gathered.input_pipeline.records.size(), 3u);
  EXPECT_EQ(gathered.input_pipeline.records[0]["host"], "cpu-node");
  AdviseOptions o;
  o.gpus = "1";
  const json a = advise::build_advice(gathered, o);
  const json* st = nullptr;
  for (const json& s : a["recommendation"])
    if (s["topic"] == "input") st = &s;
  ASSERT_NE(st, nullptr) << a["recommendation"].dump(1);
  EXPECT_EQ((*st)["status"], "pass");
  EXPECT_EQ((*st)["verdict"]["decode_cores"], 3);
  EXPECT_NE((*st)["text"].get<std::string>().find("decoded and augmented on the CPU"), std::string::npos);
  // The same step on the judge directly, at four GPUs: 836 images/s, 8 cores short.
  const json v = input::judge_step(gathered.input_pipeline.records, "fp32", "nchw", 836, 4);
  EXPECT_EQ(v["cores_short"], 8);
  EXPECT_EQ(v["host"], "cpu-node");
  EXPECT_TRUE(input::judge_step(json::array(), "fp32", "nchw", 836, 4).is_null());
}

TEST(InputFamily, QuickCaseFullSweepNumaAndGpu) {
  const std::vector<Case> quick = select_cases(Suite::quick, {"input"}, "");
  ASSERT_EQ(quick.size(), 1u);
  EXPECT_TRUE(quick[0].host_only);
  EXPECT_TRUE(quick[0].shares_host);
  EXPECT_EQ(quick[0].params["layout"], "nchw");
  const int cpus = quick[0].params["cores"].get<int>();
  EXPECT_EQ(quick[0].id(), "input/cpu/nchw/fp32/c" + std::to_string(cpus));
  int sweep = 0, numa = 0, gpu = 0;
  for (const Case& c : select_cases(Suite::full, {"input"}, "")) {
    if (c.name.rfind("gpu/", 0) == 0) {
      ++gpu;
      EXPECT_FALSE(c.host_only) << c.id();
    } else {
      EXPECT_TRUE(c.host_only) << c.id();
      (c.params["placement"] == "spread" ? sweep : numa)++;
    }
  }
  EXPECT_EQ(numa, 4);  // GPU's node and the other, for each of the two series
  EXPECT_EQ(gpu, 6);   // three nvJPEG backends, two series
  EXPECT_GE(sweep, 2);
}

TEST(HostOnly, ScheduledOnceOnNoGpu) {
  Case h, g, m;
  h.family = g.family = m.family = "f";
  h.name = "h", g.name = "g", m.name = "m";
  h.host_only = h.shares_host = true;
  m.multi_gpu = true;
  Plan p;
  p.cases = {h, g, m};
  p.gpus = {0, 1};
  std::vector<Step> s = schedule(p);
  int host_steps = 0;
  for (const Step& st : s)
    if (st.c->name == "h") {
      ++host_steps;
      EXPECT_TRUE(st.gpus.empty());
      EXPECT_EQ(st.mode, RunMode::alone);
    }
  EXPECT_EQ(host_steps, 1);
  EXPECT_EQ(s.size(), 4u);  // g on each GPU, h once, m over both
  p.gpus = {};              // no GPU: only the host-only case
  s = schedule(p);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].c->name, "h");
}

TEST(HostOnly, ContextHasNoGpuOfItsOwn) {
  Nvml nvml("/nonexistent/libnvidia-ml.so");
  Settings settings;
  ResourceStore session;
  AlgoCache cache;
  EXPECT_THROW(CaseContext(nvml, MeasureConfig{}, {}, CaseServices{}), Error);  // no settings: refused
  CaseContext ctx(nvml, MeasureConfig{}, {}, CaseServices{&settings, nullptr, &session, &cache});
  EXPECT_TRUE(ctx.host_only());
  EXPECT_THROW(ctx.gpu_resources(), Error);
  EXPECT_TRUE(ctx.gpus().empty());
  EXPECT_THROW(ctx.gpu(), Error);
  EXPECT_THROW(ctx.measure([](cudaStream_t) {}), Error);
}

TEST(InputSettings, ImageFoldersCheckedAtStart) {
  const fs::path dir = fs::path(NB_TEST_OUTPUT_DIR) / "input_settings";
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto message = [](const std::map<std::string, std::string>& env) {
    try {
      (void)Settings::from_map(env);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message({{"NODEBENCH_INPUT_IMAGES", (dir / "nosuch").string()}}).find("no such folder"), std::string::npos);
  EXPECT_NE(message({{"NODEBENCH_INPUT_IMAGES", dir.string()}}).find("holds no *.jpg or *.jpeg file"), std::string::npos);
  std::ofstream(dir / "x.JPG") << "x";
  const Settings s = Settings::from_map({{"NODEBENCH_INPUT_IMAGES", dir.string()}, {"NODEBENCH_INPUT_KEEP", (dir / "k").string()}});
  EXPECT_EQ(s.text("NODEBENCH_INPUT_IMAGES"), dir.string());
  EXPECT_EQ(s.to_json()["input_keep"], (dir / "k").string());
  EXPECT_FALSE(Settings{}.to_json().contains("input_images"));  // recorded only when set
  EXPECT_NE(message({{"NODEBENCH_INPUT_KEEP", (dir / "x.JPG").string()}}).find("exists and is not a folder"), std::string::npos);
  // run --images: the same check, as a usage error naming the option; it overrides the environment.
  set_current_settings(Settings{});
  const ParseOutcome p = parse_cli({"nodebench", "run", "--images", (dir / "nosuch").string()});
  EXPECT_EQ(p.exit_code, kExitUsage);
  EXPECT_NE(p.err.find("--images: '"), std::string::npos) << p.err;
  EXPECT_NE(p.err.find("no such folder"), std::string::npos) << p.err;
  const ParseOutcome ok = parse_cli({"nodebench", "run", "--family", "input", "--images", dir.string()});
  ASSERT_TRUE(ok.command.has_value()) << ok.err;
  EXPECT_EQ(current_settings().text("NODEBENCH_INPUT_IMAGES"), dir.string());
  EXPECT_NE(parse_cli({"nodebench", "run", "--help"}).out.find("--images DIR"), std::string::npos);
  set_current_settings(Settings{});
}
