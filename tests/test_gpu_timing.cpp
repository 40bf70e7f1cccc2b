// GPU tests of the timing harness (label gpu; need a GPU). They check behaviour against known
// quantities: a kernel that waits a known time, host delays that must not leak into timings.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <thread>
#include <vector>

#include "kernels/common/kernels.cuh"
#include "bench/measure.hpp"
#include "base/resources.hpp"
#include "run/plan.hpp"
#include "run/result.hpp"
#include "run/session.hpp"

using namespace nb;

namespace {
struct Gpu : ::testing::Test {
  void SetUp() override {
    int n = 0;
    ASSERT_EQ(cudaGetDeviceCount(&n), cudaSuccess) << "these tests need a GPU";
    ASSERT_GT(n, 0);
    NB_CUDA(cudaSetDevice(0));
    cudaDeviceProp p{};
    NB_CUDA(cudaGetDeviceProperties(&p, 0));
    l2 = size_t(p.l2CacheSize);
  }
  size_t l2 = 0;
};
}  // namespace

TEST_F(Gpu, TimesAKernelOfKnownLength) {
  Measurer m(0, l2, nullptr, std::nullopt);
  Stream s;
  MeasureConfig cfg;
  cfg.min_samples = 20;
  cfg.max_time_s = 0.5;
  const auto r = m.measure(s.get(), [](cudaStream_t st) { kernels::launch_sleep(st, 200'000); }, cfg);
  ASSERT_GE(r.samples_s.size(), 20u);
  std::vector<double> v = r.samples_s;
  std::sort(v.begin(), v.end());
  const double med = v[v.size() / 2];
  EXPECT_NEAR(med, 200e-6, 10e-6);
  EXPECT_EQ(r.batch, 1u);  // 200 us is longer than the 50 us batch threshold
}

TEST_F(Gpu, HostEnqueueDelayDoesNotLeakIntoTheTiming) {
  Measurer m(0, l2, nullptr, std::nullopt);
  Stream s;
  MeasureConfig cfg;
  cfg.fixed_samples = 10;
  cfg.warmup_s = 0;
  // The host sleeps 2 ms before each launch of a 20 us kernel: without the blocking kernel the
  // start event would fire before the sleep and the sample would be >= 2 ms.
  const auto r = m.measure(s.get(), [](cudaStream_t st) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    kernels::launch_sleep(st, 20'000);
  }, cfg);
  ASSERT_EQ(r.samples_s.size(), 10u);
  std::vector<double> v = r.samples_s;
  std::sort(v.begin(), v.end());
  EXPECT_LT(v[5], 500e-6) << "host-side delay leaked into the GPU timing";
  EXPECT_FALSE(r.blocking_timeout);
}

TEST_F(Gpu, ShortKernelsAreBatchedAndColdModeFlushes) {
  Measurer m(0, l2, nullptr, std::nullopt);
  Stream s;
  MeasureConfig cfg;
  cfg.max_time_s = 0.2;
  const auto hot = m.measure(s.get(), [](cudaStream_t st) { kernels::launch_empty(st); }, cfg);
  EXPECT_GT(hot.batch, 1u);
  cfg.l2 = L2Mode::cold;
  const auto cold = m.measure(s.get(), [](cudaStream_t st) { kernels::launch_empty(st); }, cfg);
  EXPECT_EQ(cold.batch, 1u);
  EXPECT_FALSE(cold.samples_s.empty());
}

TEST_F(Gpu, RandomFillIsDeterministicInRangeAndNotZero) {
  const size_t n = 1 << 16;
  DeviceBuffer a(n * 4), b(n * 4);
  Stream s;
  kernels::launch_fill_random(s.get(), a.get(), n, kernels::FillType::f32, 7);
  kernels::launch_fill_random(s.get(), b.get(), n, kernels::FillType::f32, 7);
  NB_CUDA_LAUNCH();
  s.sync();
  std::vector<float> ha(n), hb(n);
  NB_CUDA(cudaMemcpy(ha.data(), a.get(), n * 4, cudaMemcpyDeviceToHost));
  NB_CUDA(cudaMemcpy(hb.data(), b.get(), n * 4, cudaMemcpyDeviceToHost));
  EXPECT_EQ(ha, hb);
  double sum = 0, sumsq = 0;
  for (float x : ha) {
    ASSERT_GE(x, -1.0f);
    ASSERT_LT(x, 1.0f);
    sum += x;
    sumsq += double(x) * x;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.02);          // uniform on [-1, 1): mean 0
  EXPECT_NEAR(sumsq / n, 1.0 / 3.0, 0.02);  // variance 1/3
}

TEST_F(Gpu, WordFillWritesEveryWordOfItsFormulaPastOneGridStride) {
  // More words than one launch's threads (65535 x 8 blocks of 256), so the stride loop is tested.
  const size_t n = size_t(65535) * 8 * 256 + 1003;
  const uint32_t mul = 2654435761u, mask = 0xA5A5A5A5u;
  DeviceBuffer d(n * 4);
  Stream s;
  NB_CUDA(cudaMemset(d.get(), 0, n * 4));
  kernels::launch_fill_words(s.get(), static_cast<uint32_t*>(d.get()), n - 1, mul, mask);  // the last word stays 0
  NB_CUDA_LAUNCH();
  s.sync();
  std::vector<uint32_t> h(n);
  NB_CUDA(cudaMemcpy(h.data(), d.get(), n * 4, cudaMemcpyDeviceToHost));
  size_t bad = 0, first_bad = n;
  for (size_t i = 0; i + 1 < n; ++i) {
    const uint32_t want = uint32_t((uint64_t(i) * mul) % (uint64_t(1) << 32)) ^ mask;  // independent of the kernel's wrap
    if (h[i] != want && bad++ == 0) first_bad = i;
  }
  EXPECT_EQ(bad, 0u) << "first wrong word at " << first_bad;
  EXPECT_EQ(h[n - 1], 0u) << "wrote past n";
  EXPECT_NE(h[1], h[2]);
}

// What a family keeps on a GPU (CaseContext::family_resources) lives while its cases follow one
// another and goes before a case of another family runs there; then it is made anew.
TEST_F(Gpu, FamilyResourcesLastWhileItsCasesRunAndGoBeforeAnotherFamilys) {
  struct Kept {
    int* alive;
    explicit Kept(int* a) : alive(a) { ++*alive; }
    ~Kept() { --*alive; }
  };
  int alive = 0, made = 0;
  std::vector<int> seen;  // `alive` as each case started
  auto keeper = [&](std::string family, std::string name, bool keep) {
    Case c;
    c.family = std::move(family);
    c.name = std::move(name);
    c.run = [&, keep](CaseContext& ctx) {
      seen.push_back(alive);
      if (keep) ctx.family_resources().get<Kept>([&] {
        ++made;
        return std::make_unique<Kept>(&alive);
      });
    };
    return c;
  };
  Session session(ProfileDb::builtin(), Settings::from_map({}));
  Plan plan;
  plan.gpus = {0};
  plan.cases = {keeper("fa", "one", true), keeper("fa", "two", true), keeper("fb", "one", false),
                keeper("fa", "three", true)};
  RunDocument file(nlohmann::json{{"run_id", "family-resources"}});
  run_plan(plan, session, file);
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 0, 0}));  // kept for fa/two, gone before fb/one
  EXPECT_EQ(made, 2);                                // fa/two used fa/one's; fa/three made its own
  EXPECT_EQ(alive, 1);                               // fa/three's, until the session lets go
  session.release_resources();
  EXPECT_EQ(alive, 0);
}

TEST_F(Gpu, OutOfMemoryIsACatchableError) {
  try {
    DeviceBuffer huge(size_t(1) << 50);
    FAIL() << "a 1 PiB allocation succeeded";
  } catch (const CudaError& e) {
    EXPECT_TRUE(e.out_of_memory());
    EXPECT_NE(std::string(e.what()).find("cudaMalloc"), std::string::npos);
  }
  DeviceBuffer small(1024);  // the context still works
  EXPECT_NE(small.get(), nullptr);
}
