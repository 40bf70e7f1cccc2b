// The estimate of time left and --budget (run/estimate.hpp): expectations computed by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "bench/cost.hpp"
#include "run/estimate.hpp"

using namespace nb;

TEST(Estimator, BeforeAnythingRunsItIsTheSumOfThePriors) {
  Estimator e({{"a", 1}, {"a", 2}, {"b", 10}});
  EXPECT_DOUBLE_EQ(e.prior_total_s(), 13);
  EXPECT_DOUBLE_EQ(e.remaining_s(), 13);  // pace 1 with nothing done
}

// A pace is (actual + c) / (prior + c) over the units done, c = 5% of the run's predicted seconds,
// at most 20 s (estimate.cpp): trusted in proportion to the predicted seconds it has seen.
double shrunk(double actual, double prior, double total) {
  const double c = std::min(20.0, 0.05 * total);
  return (actual + c) / (prior + c);
}

TEST(Estimator, EachKindRunsAtItsOwnPace) {
  // Kind a runs twice as slow as its prior, kind b at half its prior; the mean of all cases
  // so far would say 5/3 for both and be wrong for each.
  Estimator e({{"a", 100}, {"b", 200}, {"a", 300}, {"b", 400}});
  e.done(0, 200.0);
  e.done(1, 100.0);
  EXPECT_DOUBLE_EQ(*e.pace("a"), shrunk(200, 100, 1000));  // 220 / 120
  EXPECT_DOUBLE_EQ(*e.pace("b"), shrunk(100, 200, 1000));  // 120 / 220
  EXPECT_DOUBLE_EQ(e.remaining_s(), 300 * shrunk(200, 100, 1000) + 400 * shrunk(100, 200, 1000));
  e.done(2, 600.0);
  EXPECT_DOUBLE_EQ(*e.pace("a"), shrunk(800, 400, 1000));
  EXPECT_DOUBLE_EQ(e.remaining_s(), 400 * shrunk(100, 200, 1000));
  e.done(3, 200.0);
  EXPECT_DOUBLE_EQ(e.remaining_s(), 0.0);
  EXPECT_EQ(e.done_count(), 4u);
}

TEST(Estimator, ASmallCaseHardlyMovesTheEstimateOfLargeOnes) {
  // 1 s predicted, 3 s taken in a run of 1000 s predicted: the pace of a kind whose next case is
  // predicted at 100 s is 23/21, not 3 -- one small case says little of a large one's time.
  Estimator e({{"a", 1}, {"a", 100}, {"b", 899}});
  e.done(0, 3.0);
  EXPECT_NEAR(e.predicted_s(1), 100 * 23.0 / 21.0, 1e-9);
  // In a short run (10 s predicted) the same case moves the estimate further: c is 0.5 s.
  Estimator q({{"a", 1}, {"a", 9}});
  q.done(0, 3.0);
  EXPECT_NEAR(q.predicted_s(1), 9 * 3.5 / 1.5, 1e-9);
}

TEST(Estimator, AKindNotSeenYetTakesItsFamilysPaceElseItsOwnPrior) {
  Estimator e({{"train/fp32", 100}, {"train/fp16", 50}, {"gemm", 10}, {"peak", 10}});
  e.done(0, 300.0);
  // train/fp16 not seen: its family train's pace; peak not seen and in no family: its prior as it
  // is, however slow the training step and the GEMMs ran.
  EXPECT_NEAR(e.predicted_s(1), 50 * shrunk(300, 100, 170), 1e-9);
  EXPECT_DOUBLE_EQ(e.predicted_s(3), 10.0);
  e.done(2, 30.0);
  EXPECT_DOUBLE_EQ(e.predicted_s(3), 10.0);
  EXPECT_FALSE(e.pace("peak").has_value());
  EXPECT_NEAR(e.remaining_s(), 50 * shrunk(300, 100, 170) + 10.0, 1e-9);
}

TEST(Estimator, ASweepIsPacedByItsOwnCasesAndEndsWhereItStops) {
  std::vector<CostUnit> u;
  for (int64_t b : {1, 2, 4, 8}) u.push_back({"train/fp32", 10.0 * double(b), "s", b});
  u.push_back({"train/fp32", 50.0, "t", 1});  // another sweep of the same kind
  Estimator e(u);
  EXPECT_DOUBLE_EQ(e.prior_total_s(), 10 + 20 + 40 + 80 + 50);
  e.done(0, 20.0);
  e.observe(0, 100);
  // Sweep s's pace from its own case; sweep t has none done: the kind's (the same case here).
  EXPECT_NEAR(e.predicted_s(1), 20 * shrunk(20, 10, 200), 1e-9);
  e.done(1, 20.0);
  e.observe(1, 200);
  // Batch 4 skipped for the plateau: the sweep ends there, batch 8 is predicted to cost nothing.
  e.skipped(2);
  e.stop_sweep(2);
  EXPECT_DOUBLE_EQ(e.predicted_s(3), 0.0);
  EXPECT_NEAR(e.remaining_s(), 50 * shrunk(40, 30, 200), 1e-9);
}

TEST(Estimator, ASweepIsCountedOnlyToWhereAnEarlierRunStopped) {
  std::vector<CostUnit> u;
  for (int64_t b : {1, 2, 4, 8, 16}) {
    CostUnit c{"k", 1.0, "s", b};
    c.sweep_last = 4;
    u.push_back(c);
  }
  Estimator e(u);
  EXPECT_DOUBLE_EQ(e.prior_total_s(), 3.0);  // batches 1, 2, 4
  // It goes past the earlier run's end still gaining 10%: the next batch is counted too.
  for (size_t i = 0; i < 3; ++i) {
    e.done(i, 1.0);
    e.observe(i, 100.0 * std::pow(1.1, double(i)));
  }
  EXPECT_DOUBLE_EQ(e.predicted_s(3), 1.0);
  EXPECT_DOUBLE_EQ(e.predicted_s(4), 0.0);
}

// Earlier runs of a sweep stopped at 4 in one and 8 in three: before anything ran, batch 8 counts
// three quarters of its prior, 16 nothing; once the points measured say the sweep goes on (or
// stops), the weight follows them.
TEST(Estimator, ABatchSomeEarlierRunsReachedCountsTheirShare) {
  std::vector<CostUnit> u;
  for (int64_t b : {1, 2, 4, 8, 16}) {
    CostUnit c{"k", 10.0, "s", b};
    c.sweep_last = 8;
    c.sweep_lasts = {4, 8, 8, 8};
    u.push_back(c);
  }
  Estimator e(u);
  EXPECT_DOUBLE_EQ(e.run_weight(2), 1.0);
  EXPECT_DOUBLE_EQ(e.run_weight(3), 0.75);
  EXPECT_DOUBLE_EQ(e.run_weight(4), 0.0);
  EXPECT_DOUBLE_EQ(e.prior_total_s(), 10 + 10 + 10 + 7.5);
  EXPECT_DOUBLE_EQ(e.predicted_s(3), 7.5);
  for (size_t i = 0; i < 3; ++i) e.done(i, 10.0);  // at the prior's pace
  // Still gaining 10% a doubling at batch 4: the next batch runs in every case.
  for (size_t i = 0; i < 3; ++i) e.observe(i, 100.0 * std::pow(1.1, double(i)));
  EXPECT_DOUBLE_EQ(e.run_weight(3), 1.0);
  EXPECT_DOUBLE_EQ(e.run_weight(4), 0.0);
  EXPECT_DOUBLE_EQ(e.predicted_s(3), 10.0);
  // A sweep that has reached its plateau at batch 4 (under 3% over batch 2): nothing after it.
  Estimator f(u);
  f.observe(0, 100.0);
  f.observe(1, 150.0);
  f.observe(2, 151.0);
  EXPECT_DOUBLE_EQ(f.run_weight(3), 0.0);
  EXPECT_DOUBLE_EQ(f.predicted_s(3), 0.0);
  // Without the runs' stops, where one stopped decides: all or nothing.
  for (CostUnit& c : u) c.sweep_lasts.clear();
  Estimator g(u);
  EXPECT_DOUBLE_EQ(g.run_weight(3), 1.0);
  EXPECT_DOUBLE_EQ(g.run_weight(4), 0.0);
}

TEST(Estimator, LearnReadsTheRecords) {
  Estimator e({{"k", 10, "s", 1}, {"k", 10, "s", 2}, {"k", 10, "s", 4}, {"k", 10, "s", 8}});
  using nlohmann::json;
  const json ok = {{"status", "ok"}, {"primary_metric", "images_per_s"}, {"metrics", {{"images_per_s", 100.0}}}};
  e.learn(0, {ok}, 10.0);
  EXPECT_DOUBLE_EQ(*e.pace("k"), 1.0);
  // All skipped: no pace; skipped for memory: the sweep ends.
  e.learn(1, {json{{"status", "skipped"}, {"reason_kind", "oom"}}}, 0.5);
  EXPECT_DOUBLE_EQ(*e.pace("k"), 1.0);
  EXPECT_DOUBLE_EQ(e.remaining_s(), 0.0);
  EXPECT_EQ(e.done_count(), 2u);
}

TEST(Estimator, AUnitIsCountedOnceAndAnUnknownOneIsAnError) {
  Estimator e({{"a", 100}, {"a", 100}});
  e.done(0, 200.0);
  e.done(0, 50.0);  // twice: ignored
  EXPECT_DOUBLE_EQ(*e.pace("a"), shrunk(200, 100, 200));
  EXPECT_THROW(e.done(5, 1.0), Error);
}

TEST(Budget, AFittingPlanIsLeftAlone) {
  const BudgetPlan b = fit_budget({{"a", 1, 2}, {"b", 1, 2}}, {"x", "y"}, 10);
  EXPECT_DOUBLE_EQ(b.sample_scale, 1);
  EXPECT_TRUE(b.left_out.empty());
  EXPECT_DOUBLE_EQ(b.predicted_s, 6);
  EXPECT_TRUE(b.fits);
}

TEST(Budget, SamplingIsShortenedFirst) {
  // setup 2, sampling 8: a budget of 6 needs sampling at (6 - 2) / 8 = 0.5.
  const BudgetPlan b = fit_budget({{"a", 1, 4}, {"b", 1, 4}}, {"x", "y"}, 6);
  EXPECT_DOUBLE_EQ(b.sample_scale, 0.5);
  EXPECT_TRUE(b.left_out.empty());
  EXPECT_DOUBLE_EQ(b.predicted_s, 6);
}

TEST(Budget, ThenTheCostliestCasesGoButNeverAFamilysLast) {
  // setup 1 + sampling 4 each, sampling floor 0.25: each case costs at least 2 s. A budget of 5
  // with four cases (8 s at the floor) leaves out the costliest first: all cost the same, so the
  // first of family x (index 0) and then the first of y (index 2), keeping one of each family.
  const BudgetPlan b = fit_budget({{"x", 1, 4}, {"x", 1, 4}, {"y", 1, 4}, {"y", 1, 4}}, {"x", "x", "y", "y"}, 5, 0.25);
  EXPECT_DOUBLE_EQ(b.sample_scale, 0.25);
  EXPECT_EQ(b.left_out, (std::vector<size_t>{0, 2}));
  EXPECT_DOUBLE_EQ(b.predicted_s, 4);
  EXPECT_DOUBLE_EQ(b.left_out_s, 4);
  EXPECT_TRUE(b.fits);
  // One case per family and still too long: nothing can go, and the plan says it does not fit.
  const BudgetPlan tight = fit_budget({{"x", 10, 0}, {"y", 10, 0}}, {"x", "y"}, 5);
  EXPECT_TRUE(tight.left_out.empty());
  EXPECT_FALSE(tight.fits);
}

TEST(Budget, TheCostliestGoesBeforeTheCheap) {
  const BudgetPlan b = fit_budget({{"t", 1, 0}, {"t", 50, 0}, {"t", 2, 0}}, {"t", "t", "t"}, 10);
  EXPECT_EQ(b.left_out, (std::vector<size_t>{1}));
  EXPECT_DOUBLE_EQ(b.predicted_s, 3);
}

// The one skip rule (bench/cost.hpp, case_runs): what run_plan records for a step skipped before
// any work, and what the cost model costs nothing.
TEST(SkipRule, TooFewGpusOrAGpuTheCaseCannotUse) {
  GpuInfo old_gpu, new_gpu;
  old_gpu.cc_major = 6, old_gpu.cc_minor = 1;
  new_gpu.cc_major = 9, new_gpu.cc_minor = 0;
  Case pair;
  pair.family = "p2p";
  pair.multi_gpu = true;
  pair.min_gpus = 2;
  const Availability one = case_runs(pair, {&new_gpu}, 1);
  EXPECT_FALSE(one.ok);
  EXPECT_EQ(one.kind, ReasonKind::needs_gpus);
  EXPECT_EQ(one.reason, "needs 2 GPUs; 1 is selected");
  EXPECT_TRUE(case_runs(pair, {}, 3).ok);
  EXPECT_TRUE(case_runs(pair, {&new_gpu, &new_gpu}, 2).ok);

  Case tensor;
  tensor.family = "gemm";
  tensor.available = [](const GpuInfo& g) {
    return g.cc() >= 70 ? Availability::yes() : Availability::no("needs tensor cores (cc 7.0)", ReasonKind::none);
  };
  // Judged on every GPU of the step: the old one says no, with its reason; a kind left none is
  // recorded as unsupported.
  const Availability mixed = case_runs(tensor, {&new_gpu, &old_gpu}, 2);
  EXPECT_FALSE(mixed.ok);
  EXPECT_EQ(mixed.reason, "needs tensor cores (cc 7.0)");
  EXPECT_EQ(mixed.kind, ReasonKind::unsupported);
  EXPECT_TRUE(case_runs(tensor, {&new_gpu}, 1).ok);
  EXPECT_TRUE(case_runs(tensor, {nullptr}, 0).ok);  // no GPU known: only the count is judged

  // The cost model skips by the same rule: nothing for what is skipped, the case's cost otherwise.
  tensor.cost = [](const CostInput&) {
    CaseCost k;
    k.setup_s = 2;
    return k;
  };
  EXPECT_EQ(case_cost(tensor, &old_gpu, MeasureConfig{}, 1).total(), 0.0);
  EXPECT_GT(case_cost(tensor, &new_gpu, MeasureConfig{}, 1).total(), 0.0);
  pair.cost = tensor.cost;
  EXPECT_EQ(case_cost(pair, &new_gpu, MeasureConfig{}, 1).total(), 0.0);
  EXPECT_GT(case_cost(pair, &new_gpu, MeasureConfig{}, 2).total(), 0.0);
}
