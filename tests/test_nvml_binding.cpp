// node/nvml: the entry points bound at run time from a library (tests/fake_nvml.cpp, two made-up
// GPUs defined against nvml.h) and read through the harness's types; the figures are the fake's.
#include <gtest/gtest.h>

#include "node/nvml.hpp"

using namespace nb;

TEST(NvmlBinding, ReadsTheLibrarysFiguresThroughNvmlH) {
  Nvml n(NB_FAKE_NVML);
  ASSERT_TRUE(n.available()) << n.error();
  EXPECT_EQ(n.device_count(), 2u);
  EXPECT_EQ(n.pci_bus_id(1), "00000000:AF:00.0");
  EXPECT_EQ(n.find_by_pci("0000:af:00.0"), 1);
  EXPECT_EQ(n.find_by_pci("0000:3B:00.0"), 0);
  const auto m = n.memory_info(1);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->total, 80000000001ull);
  EXPECT_EQ(m->free, 70000000000ull);
  EXPECT_EQ(m->used, 10000000000ull);
  const auto u = n.utilization(1);
  ASSERT_TRUE(u);
  EXPECT_EQ(u->gpu, 96u);
  EXPECT_EQ(u->memory, 45u);
  const ClockSnapshot s = n.snapshot(0);
  EXPECT_EQ(s.sm_mhz, 1980.0);
  EXPECT_EQ(s.mem_mhz, 2619.0);
  ASSERT_TRUE(s.throttle_mask);
  EXPECT_TRUE(is_power_capped(*s.throttle_mask));
  EXPECT_TRUE(is_throttling(*s.throttle_mask));
  EXPECT_EQ(throttle_reason_names(*s.throttle_mask), (std::vector<std::string>{"sw_power_cap", "hw_thermal_slowdown"}));
  EXPECT_FALSE(s.temperature_c);  // the fake has no nvmlDeviceGetTemperature: as an old driver without an entry point
  EXPECT_EQ(n.slowdown_temperature_c(0), 87.0);
  EXPECT_EQ(n.shutdown_temperature_c(0), 92.0);
  const auto link = n.nvlink_counters(0);
  ASSERT_TRUE(link);
  EXPECT_EQ(link->tx_bytes, 100u * 1024u);
  EXPECT_EQ(link->rx_bytes, 200u * 1024u);
  const auto procs = n.compute_processes(0);
  ASSERT_TRUE(procs);
  ASSERT_EQ(procs->size(), 2u);
  EXPECT_EQ((*procs)[0].pid, 4242u);
  EXPECT_EQ((*procs)[0].used_bytes, 1ull << 30);
  EXPECT_EQ((*procs)[1].pid, 4343u);
  EXPECT_FALSE((*procs)[1].used_bytes);
  EXPECT_EQ(n.ecc_enabled(0), true);
  EXPECT_EQ(n.ecc_enabled(1), false);
  EXPECT_FALSE(n.utilization(2));  // no such device
}
