// The batch sweep's plateau rule (bench/sweep.hpp): when a sweep stops, and where the estimate of
// time left predicts it will. Expectations worked out by hand from the rule's definition.
#include <gtest/gtest.h>

#include <cmath>

#include "bench/sweep.hpp"

using namespace nb;

namespace {
const std::vector<int64_t> kBatches = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
}

TEST(SweepPlateau, StopsOnceADoublingGainsUnderThreePercent) {
  // 100 -> 150 (+50%) -> 153 (+2%): batch 8 is past the plateau, whatever was measured below.
  std::vector<SweepPoint> pts = {{1, 100}, {2, 150}, {4, 153}};
  EXPECT_FALSE(plateau_stop(pts, 4).has_value());  // only batches below 4 count: +50%
  const auto why = plateau_stop(pts, 8);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("batch 4 gained 2.0% over batch 2"), std::string::npos) << *why;
  // Order does not matter.
  EXPECT_TRUE(plateau_stop({{4, 153}, {1, 100}, {2, 150}}, 16).has_value());
}

TEST(SweepPlateau, AGainOfThreePercentOrMoreGoesOn) {
  // Exactly +3%, in throughputs exact in binary (100 x 1030 = 103 x 1000 = 103000, and 100 x
  // 2060 = 103 x 2000): goes on. A rule that went on only above 3% would stop here.
  EXPECT_FALSE(plateau_stop({{64, 1000}, {128, 1030}}, 256).has_value());
  EXPECT_FALSE(plateau_stop({{64, 2000}, {128, 2060}}, 256).has_value());
  EXPECT_FALSE(plateau_stop({{64, 100}, {128, 103}}, 256).has_value());
  // Just under 3% (the next double below 1030): stops; just over: goes on.
  EXPECT_TRUE(plateau_stop({{64, 1000}, {128, std::nextafter(1030.0, 0.0)}}, 256).has_value());
  EXPECT_FALSE(plateau_stop({{64, 1000}, {128, std::nextafter(1030.0, 2000.0)}}, 256).has_value());
  EXPECT_TRUE(plateau_stop({{64, 1000}, {128, 1029}}, 256).has_value());
  EXPECT_TRUE(plateau_stop({{64, 1000}, {128, 900}}, 256).has_value());  // a loss stops it too
}

TEST(SweepPlateau, NeedsTwoPointsADoublingApart) {
  EXPECT_FALSE(plateau_stop({}, 8).has_value());
  EXPECT_FALSE(plateau_stop({{4, 100}}, 8).has_value());
  // A gap (batch 8 did not run, e.g. it failed): 4 -> 16 is no doubling, so no verdict.
  EXPECT_FALSE(plateau_stop({{4, 100}, {16, 101}}, 32).has_value());
  // A zero throughput (nothing measured) is no evidence either.
  EXPECT_FALSE(plateau_stop({{4, 0}, {8, 101}}, 16).has_value());
}

TEST(SweepForecast, WithoutShrinkingGainsEveryBatchIsPredicted) {
  EXPECT_EQ(predicted_last_batch({}, kBatches), 1024);
  EXPECT_EQ(predicted_last_batch({{1, 100}, {2, 200}}, kBatches), 1024);  // two points: one gain
  // Gains that grow (+10%, +20%) say nothing about a plateau.
  EXPECT_EQ(predicted_last_batch({{1, 100}, {2, 110}, {4, 132}}, kBatches), 1024);
  EXPECT_FALSE(predicted_last_batch({}, {}).has_value());
}

TEST(SweepForecast, ShrinkingGainsAreExtrapolated) {
  // Gains +40% (2 over 1) then +20% (4 over 2): ratio 0.5, so 8 gains 10%, 16 gains 5%, 32 gains
  // 2.5% (under 3%): 32 runs, 64 does not.
  EXPECT_EQ(predicted_last_batch({{1, 100}, {2, 140}, {4, 168}}, kBatches), 32);
  // The same with the last planned batch below the extrapolated stop: the last planned one.
  EXPECT_EQ(predicted_last_batch({{1, 100}, {2, 140}, {4, 168}}, {1, 2, 4, 8, 16}), 16);
}

TEST(SweepForecast, AStoppedSweepEndsAtItsLastMeasuredBatch) {
  // 4 -> 8 gained 1%: stopped; the last batch that ran is 8.
  EXPECT_EQ(predicted_last_batch({{2, 50}, {4, 100}, {8, 101}}, kBatches), 8);
}

TEST(SweepForecast, AnEarlierRunsStopStandsInUntilTheGainsSaySomething) {
  EXPECT_EQ(predicted_last_batch({}, kBatches, 256), 256);
  EXPECT_EQ(predicted_last_batch({{1, 100}, {2, 190}}, kBatches, 256), 256);  // one gain: no extrapolation
  // Past the earlier run's stop and still gaining 10%: the next batch runs at least.
  EXPECT_EQ(predicted_last_batch({{256, 1000}, {512, 1100}}, kBatches, 256), 1024);
  // The earlier run wins over an extrapolation: +40%, +20% would extrapolate to 32.
  EXPECT_EQ(predicted_last_batch({{1, 100}, {2, 140}, {4, 168}}, kBatches, 1024), 1024);
  EXPECT_EQ(predicted_last_batch({{1, 100}, {2, 140}, {4, 168}}, kBatches, 16), 16);
}
