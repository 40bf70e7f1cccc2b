// The estimate of time left and --budget (run/estimate.hpp): expectations computed by hand.
#include <gtest/gtest.h>

#include "run/estimate.hpp"

using namespace nb;

TEST(Estimator, BeforeAnythingRunsItIsTheSumOfThePriors) {
  Estimator e({{"a", 1}, {"a", 2}, {"b", 10}});
  EXPECT_DOUBLE_EQ(e.prior_total_s(), 13);
  EXPECT_DOUBLE_EQ(e.remaining_s(), 13);  // pace 1 with nothing done
}

TEST(Estimator, EachKindRunsAtItsOwnPace) {
  // Kind a runs twice as slow as its prior, kind b at half its prior; the mean of all cases
  // so far would say 5/3 for both and be wrong for each.
  Estimator e({{"a", 1}, {"b", 2}, {"a", 3}, {"b", 4}});
  e.done(0, 2.0);  // a: pace 2
  e.done(1, 1.0);  // b: pace 0.5
  EXPECT_DOUBLE_EQ(*e.pace("a"), 2.0);
  EXPECT_DOUBLE_EQ(*e.pace("b"), 0.5);
  EXPECT_DOUBLE_EQ(e.remaining_s(), 3 * 2.0 + 4 * 0.5);
  EXPECT_DOUBLE_EQ(e.predicted_s(2), 6.0);
  e.done(2, 6.0);
  EXPECT_DOUBLE_EQ(e.remaining_s(), 2.0);
  e.done(3, 2.0);
  EXPECT_DOUBLE_EQ(e.remaining_s(), 0.0);
  EXPECT_EQ(e.done_count(), 4u);
}

TEST(Estimator, AKindNotSeenYetTakesThePaceOfAllShrunkWhileFewAreDone) {
  Estimator e({{"a", 1}, {"a", 1}, {"a", 1}, {"c", 10}});
  e.done(0, 3.0);  // pace of all: 3 from one unit, weight 1/3 -> 1/3*3 + 2/3*1 = 5/3
  EXPECT_NEAR(e.predicted_s(3), 10.0 * 5.0 / 3.0, 1e-9);
  e.done(1, 3.0);
  e.done(2, 3.0);  // three units: full weight, pace 3
  EXPECT_NEAR(e.predicted_s(3), 30.0, 1e-9);
  EXPECT_FALSE(e.pace("c").has_value());
}

TEST(Estimator, AUnitIsCountedOnceAndAnUnknownOneIsAnError) {
  Estimator e({{"a", 1}, {"a", 1}});
  e.done(0, 2.0);
  e.done(0, 50.0);  // twice: ignored
  EXPECT_DOUBLE_EQ(*e.pace("a"), 2.0);
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
