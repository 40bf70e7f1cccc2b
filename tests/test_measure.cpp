#include <gtest/gtest.h>

#include "bench/measure.hpp"
#include "node/host_memory.hpp"
#include "node/nvml.hpp"

using namespace nb;

TEST(StopRule, ConvergesOnlyAfterMinimumSamples) {
  MeasureConfig c;
  c.min_samples = 10;
  c.target_cv = 0.01;
  c.max_time_s = 1.0;
  EXPECT_EQ(should_stop(c, 5, 0.001, 0.1), StopReason::none);
  EXPECT_EQ(should_stop(c, 10, 0.001, 0.1), StopReason::converged);
  EXPECT_EQ(should_stop(c, 10, 0.02, 0.1), StopReason::none);
  EXPECT_EQ(should_stop(c, 10, 0.02, 1.0), StopReason::time_cap);
  EXPECT_EQ(should_stop(c, 3, 0.5, 2.0), StopReason::time_cap);  // cap wins over the minimum
  c.max_samples = 50;
  EXPECT_EQ(should_stop(c, 50, 0.5, 0.1), StopReason::max_samples);
}

TEST(StopRule, FixedRepetitionsIgnoreNoiseAndTime) {
  MeasureConfig c;
  c.fixed_samples = 7;
  EXPECT_EQ(should_stop(c, 6, 0.0, 100.0), StopReason::none);
  EXPECT_EQ(should_stop(c, 7, 0.9, 0.0), StopReason::fixed);
}

TEST(StopRule, ToCapNeverStopsOnTheCvOnlyAtASampleOrTimeCap) {
  MeasureConfig c;
  c.min_samples = 10;
  c.target_cv = 0.01;
  c.max_samples = 2000;
  c.max_time_s = 1.0;
  c.to_cap = true;
  EXPECT_EQ(should_stop(c, 10, 0.0001, 0.1), StopReason::none);  // would have converged
  EXPECT_EQ(should_stop(c, 1999, 0.0, 0.9), StopReason::none);
  EXPECT_EQ(should_stop(c, 2000, 0.0001, 0.1), StopReason::max_samples);
  EXPECT_EQ(should_stop(c, 12, 0.0001, 1.0), StopReason::time_cap);
  c.to_cap = false;
  EXPECT_EQ(should_stop(c, 10, 0.0001, 0.1), StopReason::converged);
}

// The pool hands out the buffer a (kind, slot, node) holds when it is large enough, makes a larger
// one in its place otherwise, and keeps slots and nodes apart (pageable buffers: no GPU needed).
TEST(HostBufferPool, ReusesALargeEnoughBufferAndReplacesASmallerOne) {
  HostBufferPool pool;
  HostBuffer& a = pool.get(HostMemKind::pageable, 0, 4096);
  EXPECT_EQ(a.bytes(), 4096u);
  EXPECT_EQ(pool.allocations(), 1);
  static_cast<char*>(a.get())[4095] = 7;
  HostBuffer& again = pool.get(HostMemKind::pageable, 0, 1024);  // smaller: the same buffer
  EXPECT_EQ(&again, &a);
  EXPECT_EQ(static_cast<char*>(again.get())[4095], 7);
  EXPECT_EQ(pool.allocations(), 1);
  HostBuffer& big = pool.get(HostMemKind::pageable, 0, 3 * 4096);  // larger: replaced, not added
  EXPECT_EQ(big.bytes(), 3u * 4096u);
  EXPECT_EQ(pool.allocations(), 2);
  EXPECT_EQ(pool.held_bytes(), 3u * 4096u);
  HostBuffer& other = pool.get(HostMemKind::pageable, 1, 1024);  // another slot: its own buffer
  EXPECT_NE(other.get(), big.get());
  EXPECT_EQ(pool.allocations(), 3);
  EXPECT_EQ(pool.held_bytes(), 3u * 4096u + 1024u);
  EXPECT_EQ(&pool.get(HostMemKind::pageable, 0, 3 * 4096), &big);  // slot 0 kept its largest
  EXPECT_EQ(&pool.get(HostMemKind::pageable, 1, 512), &other);
  EXPECT_EQ(pool.allocations(), 3);
  HostBuffer& on_node = pool.get(HostMemKind::pageable, 0, 1024, 0);  // another node: its own buffer
  EXPECT_NE(&on_node, &big);
  EXPECT_EQ(pool.allocations(), 4);
  EXPECT_EQ(pool.held_bytes(), 3u * 4096u + 1024u + 1024u);
}

TEST(Batch, ShortLaunchesAreBatchedColdNeverIs) {
  MeasureConfig c;
  c.min_sample_s = 50e-6;
  c.max_batch = 256;
  EXPECT_EQ(choose_batch(c, 1e-3), 1u);
  EXPECT_EQ(choose_batch(c, 10e-6), 5u);
  EXPECT_EQ(choose_batch(c, 1e-9), 256u);
  c.l2 = L2Mode::cold;
  EXPECT_EQ(choose_batch(c, 10e-6), 1u);
}

TEST(Throttle, ReasonNamesAndWhatCountsAsThrottling) {
  EXPECT_EQ(throttle_reason_names(0x1), std::vector<std::string>{"gpu_idle"});
  EXPECT_EQ(throttle_reason_names(0x4 | 0x40), (std::vector<std::string>{"sw_power_cap", "hw_thermal_slowdown"}));
  EXPECT_EQ(throttle_reason_names(1ull << 40), std::vector<std::string>{"other"});
  EXPECT_FALSE(is_throttling(0x1));   // idle
  EXPECT_FALSE(is_throttling(0x2));   // application clocks
  EXPECT_FALSE(is_throttling(0x4));   // the software power cap is reported apart
  EXPECT_TRUE(is_power_capped(0x4));
  EXPECT_FALSE(is_power_capped(0x40));
  EXPECT_TRUE(is_throttling(0x40));   // hardware thermal slowdown
  EXPECT_TRUE(is_throttling(0x8));    // hardware slowdown
}

TEST(Nvml, AbsentLibraryIsReportedNotFatal) {
  // On a machine without the driver (CI) NVML is unavailable and says why; with it, it works.
  Nvml n;
  if (!n.available()) {
    EXPECT_FALSE(n.error().empty());
    EXPECT_FALSE(n.driver_version().has_value());
    EXPECT_FALSE(n.pcie(0).gen_current.has_value());
  } else {
    EXPECT_TRUE(n.driver_version().has_value());
  }
}

TEST(SampleLoop, StopsWhenConvergedOrFixed) {
  MeasureConfig c;
  c.min_samples = 5;
  c.target_cv = 0.01;
  int calls = 0;
  // Identical samples: CV 0, so the loop stops at the minimum.
  Measurement m = sample_until_stop(c, [&] { ++calls; return 1e-3; });
  EXPECT_EQ(m.samples_s.size(), 5u);
  EXPECT_EQ(calls, 5);
  EXPECT_EQ(m.stop, StopReason::converged);
  c.fixed_samples = 9;
  m = sample_until_stop(c, [&] { return (calls++ % 2) ? 1e-3 : 3e-3; });  // noisy, but fixed
  EXPECT_EQ(m.samples_s.size(), 9u);
  EXPECT_EQ(m.stop, StopReason::fixed);
}

TEST(SampleLoop, WarmsUpUntimedThenSamples) {
  MeasureConfig c;
  c.fixed_samples = 4;
  std::vector<bool> calls;
  const Measurement m = warm_then_sample(c, 3, [&](bool keep) {
    calls.push_back(keep);
    return 1e-3 * double(calls.size());  // each call its own time: the warm-ups' must not be samples
  });
  EXPECT_EQ(calls, (std::vector<bool>{false, false, false, true, true, true, true}));
  EXPECT_EQ(m.samples_s, (std::vector<double>{1e-3 * 4, 1e-3 * 5, 1e-3 * 6, 1e-3 * 7}));
  EXPECT_EQ(m.warmup_runs, 3u);
  EXPECT_EQ(m.stop, StopReason::fixed);
}

TEST(Measure, LatencyConfigTimesOneOperationPerSample) {
  MeasureConfig base;  // hot, batches short operations to 50 us per sample
  EXPECT_GT(choose_batch(base, 4.5e-6), 1u);  // a 4.5 us peer copy would be batched ~11x
  const MeasureConfig lat = one_op_per_sample(base);
  EXPECT_EQ(choose_batch(lat, 4.5e-6), 1u);
  EXPECT_EQ(choose_batch(lat, 1e-9), 1u);
  EXPECT_EQ(choose_batch(lat, 0), 1u);  // even with no estimate
  EXPECT_GE(lat.min_samples, 50u);
  EXPECT_GE(lat.max_samples, lat.min_samples);
  EXPECT_DOUBLE_EQ(lat.target_cv, base.target_cv);
}

TEST(Measure, BothWaysSampleIsTheSumOfTheDirectionsRates) {
  // 1 GB each way: 20 ms forward (50 GB/s) and 25 ms back (40 GB/s): 90 GB/s together.
  const double s = both_ways_sample_s(0.020, 0.025);
  EXPECT_NEAR(2.0 / s, 1 / 0.020 + 1 / 0.025, 1e-9);
  EXPECT_NEAR(both_ways_sample_s(0.01, 0.01), 0.01, 1e-15);
  EXPECT_EQ(both_ways_sample_s(0, 0.01), 0);
}
