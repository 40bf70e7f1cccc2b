// The forecast of a run before it starts (run/plan.hpp predicted_duration): the schedule's waves
// each cost their slowest step, cases that share the host run once per GPU, multi-GPU cases are
// costed over every GPU; and the full suite on N GPUs of one node, predicted from the families'
// cost models and the committed fit (harness/profiles/costs.json), stays within 1.2x of the 15
// minutes the suite must fit on one GPU (issue 24), without a multi-GPU machine.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>

#include "bench/cost.hpp"
#include "node/profiles.hpp"
#include "run/estimate.hpp"
#include "run/plan.hpp"

using namespace nb;

namespace {

GpuInfo h200(int index) {
  GpuInfo g;
  g.index = index;
  g.name = "NVIDIA H200";
  g.cc_major = 9;
  g.sm_count = 132;
  g.memory_bytes = size_t(143771) << 20;
  g.l2_bytes = size_t(60) << 20;
  g.pcie.gen_max = 5;
  g.pcie.width_max = 16;
  PeakInputs in;
  in.name = g.name;
  in.cc_major = 9;
  in.sm_count = 132;
  in.max_sm_clock_mhz = 1980;
  g.peaks = expected_peaks(ProfileDb::builtin(), in);
  return g;
}

Case fixed(const std::string& family, const std::string& name, double setup, double sample, bool shares_host = false,
           bool multi = false) {
  Case c;
  c.family = family;
  c.name = name;
  c.shares_host = shares_host;
  c.multi_gpu = multi;
  c.run = [](CaseContext&) {};
  c.cost = [family, setup, sample, multi](const CostInput& in) {
    CaseCost k;
    k.kind = "test_" + family;  // no fit in costs.json: model seconds as they are
    k.setup_s = setup * (multi ? in.gpus : 1);
    k.sample_s = sample;
    return k;
  };
  return c;
}

Plan plan_on(std::vector<Case> cases, int gpus) {
  Plan p;
  p.cases = std::move(cases);
  for (int i = 0; i < gpus; ++i) p.gpus.push_back(i);
  p.base.max_time_s = default_max_time(Suite::full);
  return p;
}

double forecast(const Plan& p) {
  std::map<int, GpuInfo> gpus;
  for (int g : p.gpus) gpus.emplace(g, h200(g));
  return predicted_duration(p, [&](int i) -> const GpuInfo& { return gpus.at(i); });
}

}  // namespace

TEST(Forecast, WavesCostTheirSlowestStepAndHostCasesRunOncePerGpu) {
  const std::vector<Case> cases = {fixed("a", "x", 1, 2), fixed("b", "y", 0.5, 0.5, true), fixed("c", "z", 1, 1, false, true)};
  // One GPU: 3 + 1 + (1 + 1).
  EXPECT_DOUBLE_EQ(forecast(plan_on(cases, 1)), 6.0);
  // Four GPUs at once: the per-GPU case is one wave (3); the host case runs on each GPU (4 x 1);
  // the multi-GPU case is costed over the four (4 + 1).
  EXPECT_DOUBLE_EQ(forecast(plan_on(cases, 4)), 3.0 + 4.0 + 5.0);
  // GPU after GPU (--one-gpu-at-a-time): the per-GPU case four times too.
  Plan one = plan_on(cases, 4);
  one.concurrent = false;
  EXPECT_DOUBLE_EQ(forecast(one), 12.0 + 4.0 + 5.0);
}

TEST(Forecast, ACaseItsGpuCannotRunCostsNothing) {
  Case runs = fixed("train", "a", 1, 2), cannot = fixed("train", "b", 1, 2);
  cannot.available = [](const GpuInfo& g) {
    return g.cc() >= 70 ? Availability::no("needs a GPU below 7.0") : Availability::yes();
  };
  const GpuInfo g = h200(0);
  double model = -1;
  EXPECT_DOUBLE_EQ(case_cost(cannot, &g, MeasureConfig{}, 1, &model).total(), 0.0);
  EXPECT_DOUBLE_EQ(model, 0.0);
  EXPECT_DOUBLE_EQ(case_cost(runs, &g, MeasureConfig{}, 1, &model).total(), 3.0);
  EXPECT_DOUBLE_EQ(model, 3.0);
  // The forecast of both: only the one that runs.
  EXPECT_DOUBLE_EQ(forecast(plan_on({runs, cannot}, 1)), 3.0);
  // A multi-GPU case that needs two GPUs: nothing on one, its cost on two.
  Case pair = fixed("nccl", "p", 1, 1, false, true);
  pair.min_gpus = 2;
  EXPECT_DOUBLE_EQ(case_cost(pair, &g, MeasureConfig{}, 1).total(), 0.0);
  EXPECT_DOUBLE_EQ(case_cost(pair, &g, MeasureConfig{}, 2).total(), 3.0);
}

// A host-only case has no GPU of its own: whether it can run is judged on the run's first GPU (the
// input family's NUMA placements need that GPU's node), and one that cannot costs nothing.
TEST(Forecast, AHostOnlyCaseIsJudgedOnTheRunsFirstGpu) {
  Case host = fixed("input", "h", 1, 2), numa = fixed("input", "n", 1, 2);
  host.host_only = numa.host_only = true;
  numa.available = [](const GpuInfo& g) { return g.index == 0 ? Availability::no("not on GPU 0") : Availability::yes(); };
  // Two GPUs: each host-only case once (3 s), the one GPU 0 cannot run nothing.
  EXPECT_DOUBLE_EQ(forecast(plan_on({host, numa}, 2)), 3.0);
  Plan from_1 = plan_on({host, numa}, 3);
  from_1.gpus = {1, 2};  // the run's first GPU is GPU 1: both run
  EXPECT_DOUBLE_EQ(forecast(from_1), 6.0);
}

TEST(Forecast, TheFullSuiteOnOneNodeStaysWithinOnePointTwoTimesFifteenMinutes) {
  const std::vector<Case> full = select_cases(Suite::full, {}, "");
  const double one = forecast(plan_on(full, 1));
  std::printf("full suite, 1 H200: %.0f s predicted\n", one);
  EXPECT_GT(one, 60.0);  // a forecast of nothing would pass the bound below
  for (int n : {2, 4, 8}) {
    const double t = forecast(plan_on(full, n));
    std::printf("full suite, %d H200s: %.0f s predicted (%.2fx one GPU)\n", n, t, t / one);
    EXPECT_LE(t, 1.2 * 15 * 60) << n << " GPUs";
    EXPECT_GE(t, one) << "more GPUs cannot make the node's suite shorter";
  }
}

// The forecast is the committed fit's figure (harness/profiles/costs.json): recomputed here from
// that file's numbers, case by case -- fixed_s + scale x the model's setup seconds + sample_scale
// x its sampling seconds, the kind's fit else its family's, nothing for a case its GPU cannot run
// -- each case counted by the chance it runs (a sweep's later batches by where earlier runs of it
// stopped). Without the fit the forecast is the model's seconds alone, less than half of it.
TEST(Forecast, TheFullSuitesForecastIsTheCommittedFitsFigure) {
  std::ifstream f(NB_COSTS_FILE);
  ASSERT_TRUE(f) << NB_COSTS_FILE;
  const nlohmann::json kinds = nlohmann::json::parse(f).at("kinds");
  const auto fit_of = [&](const std::string& kind) -> nlohmann::json {
    if (kinds.contains(kind)) return kinds[kind];
    const std::string family = kind.substr(0, kind.find('/'));
    return kinds.contains(family) ? kinds[family] : nlohmann::json();
  };
  const Plan plan = plan_on(select_cases(Suite::full, {}, ""), 1);
  const GpuInfo g = h200(0);
  const std::vector<Step> steps = schedule(plan);
  const std::vector<CostUnit> units = wave_costs(plan, [&](int) -> const GpuInfo& { return g; }, steps);
  ASSERT_EQ(units.size(), steps.size());  // one GPU: a wave is one case
  const Estimator est(units);
  double expected = 0, model_only = 0;
  size_t fitted = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    const Case& c = *steps[i].c;
    if (c.available && !c.available(g).ok) continue;  // skipped before any work: nothing
    double model = 0, model_sample = 0;
    const std::string kind = case_cost(c, &g, plan.base, 1, &model, &model_sample).kind;
    const nlohmann::json fit = fit_of(kind);
    double seconds = model;
    if (!fit.is_null()) {
      const double scale = fit.value("scale", 1.0);
      seconds = fit.value("fixed_s", 0.0) + scale * (model - model_sample) + fit.value("sample_scale", scale) * model_sample;
      ++fitted;
    }
    expected += est.run_weight(i) * seconds;
    model_only += est.run_weight(i) * model;
  }
  const double forecast_s = forecast(plan);
  std::printf("full suite, 1 H200: %.1f s predicted, %.1f s from costs.json recomputed, %.1f s by the model alone\n",
              forecast_s, expected, model_only);
  EXPECT_GT(fitted, steps.size() / 2);  // the fit covers most of the suite's cases
  EXPECT_NEAR(forecast_s, expected, 1e-6 * expected);
  EXPECT_GT(std::abs(expected - model_only), 0.2 * expected);  // the fit matters: this test sees its removal
}

// costs.json: a kind's sampling scale, where given, applies to the model's sampling seconds and its
// scale to the setup; where not given, the scale applies to both (the fits written before it).
TEST(CostFit, SampleScaleAppliesToSamplingAndDefaultsToTheScale) {
  const auto fits = parse_cost_fits(nlohmann::json::parse(
      R"({"kinds": {"split": {"fixed_s": 1, "scale": 2, "sample_scale": 0.5}, "one": {"fixed_s": 0.25, "scale": 4}}})"));
  ASSERT_EQ(fits.size(), 2u);
  EXPECT_DOUBLE_EQ(fits.at("split").sample_scale, 0.5);
  EXPECT_DOUBLE_EQ(fits.at("one").sample_scale, 4.0);
  CaseCost k;
  k.kind = "split";
  k.setup_s = 3;
  k.sample_s = 4;
  const CaseCost a = apply_fit(k, fits.at("split"));
  EXPECT_DOUBLE_EQ(a.setup_s, 1 + 2 * 3);
  EXPECT_DOUBLE_EQ(a.sample_s, 0.5 * 4);
  const CaseCost b = apply_fit(k, fits.at("one"));
  EXPECT_DOUBLE_EQ(b.total(), 0.25 + 4 * (3 + 4));
  EXPECT_THROW(parse_cost_fits(nlohmann::json::parse(R"({"kinds": {"x": {"scale": 1, "sample_scale": 0}}})")), Error);
  EXPECT_THROW(parse_cost_fits(nlohmann::json::parse(R"({"kinds": {"x": {"scale": 1, "sample_scale": -2}}})")), Error);
}

// The sweeps' stops: where the run that ran most of it stopped, and where each run did.
TEST(CostFit, SweepStopsAndEachRunsStopAreParsedAndBadOnesRefused) {
  const auto doc = nlohmann::json::parse(
      R"({"sweeps": {"train/fp16/nhwc": {"last_batch": 2048, "last_batches": [1024, 1024, 2048]},
                     "train": {"last_batch": 512}}})");
  EXPECT_EQ(parse_sweep_stops(doc).at("train/fp16/nhwc"), 2048);
  const auto h = parse_sweep_histories(doc);
  EXPECT_EQ(h.at("train/fp16/nhwc"), (std::vector<int64_t>{1024, 1024, 2048}));
  EXPECT_EQ(h.count("train"), 0u);
  EXPECT_THROW(parse_sweep_histories(nlohmann::json::parse(R"({"sweeps": {"s": {"last_batch": 4, "last_batches": 4}}})")),
               Error);
  EXPECT_THROW(
      parse_sweep_histories(nlohmann::json::parse(R"({"sweeps": {"s": {"last_batch": 4, "last_batches": [4, 0]}}})")),
      Error);
}

// A measurement expected to stop at the time cap costs the cap, whatever the suite's cap; one that
// converges costs its minimum samples; a short one runs to the sample cap.
TEST(CostFit, SamplingToTheCapCostsTheCapOrTheSampleCap) {
  MeasureConfig quick, full;
  quick.max_time_s = 0.4;
  full.max_time_s = 1.0;
  const double op = 17e-3;  // one 1 GiB copy on PCIe 5 x16: one launch a sample
  EXPECT_NEAR(sampling_to_cap_s(full, op) - sampling_to_cap_s(quick, op), 0.6, 1e-12);
  EXPECT_NEAR(sampling_s(full, op), sampling_s(quick, op), 1e-12);  // 10 samples of 17 ms: under both caps
  const double warm = std::max(quick.warmup_s, 2 * op);  // the warm-up: at least two launches
  EXPECT_NEAR(sampling_to_cap_s(quick, op) - warm, 0.4, 1e-12);
  // A short operation under a cap it never reaches: max_samples samples against min_samples.
  MeasureConfig longcap;
  longcap.max_time_s = 1e6;
  const double tiny = 1e-6;
  const double ratio = (sampling_to_cap_s(longcap, tiny) - longcap.warmup_s) / (sampling_s(longcap, tiny) - longcap.warmup_s);
  EXPECT_NEAR(ratio, double(longcap.max_samples) / double(longcap.min_samples), 1e-9);
}
