// The algorithm choice rule with a fake timer, the algorithm cache file, and the clock-normalised
// metrics. No GPU.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <thread>

#include "bench/algo_choice.hpp"
#include "run/case_records.hpp"
#include "app/cli.hpp"
#include "base/error.hpp"

using namespace nb;
using nlohmann::json;

namespace {

// A fake timer: each candidate's true time, times a uniform factor in [1 - noise, 1 + noise]
// drawn independently per call.
struct FakeTimer {
  std::map<int, double> truth;
  double noise = 0;
  std::mt19937_64 rng;
  std::map<int, int> calls;
  FakeTimer(std::map<int, double> t, double n, uint64_t seed) : truth(std::move(t)), noise(n), rng(seed) {}
  double operator()(const AlgoCandidate& c) {
    ++calls[c.id];
    std::uniform_real_distribution<double> u(1.0 - noise, 1.0 + noise);
    return truth.at(c.id) * u(rng);
  }
};

std::vector<AlgoCandidate> cands_of(const std::map<int, double>& truth) {
  std::vector<AlgoCandidate> v;
  for (const auto& [id, t] : truth) v.push_back({id, 0, "algo " + std::to_string(id)});
  return v;
}

int choose(const std::map<int, double>& truth, double noise, uint64_t seed, const ChoiceRules& rules = {}) {
  FakeTimer timer(truth, noise, seed);
  auto cands = cands_of(truth);
  // Shuffle the order the candidates are given in: the choice must not depend on it.
  std::mt19937_64 g(seed ^ 0x9e3779b97f4a7c15ull);
  std::shuffle(cands.begin(), cands.end(), g);
  const ChoiceOutcome o = choose_by_timing(cands, [&](const AlgoCandidate& c) { return timer(c); }, rules);
  return o.best().cand.id;
}

std::string temp_path(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("nb_algo_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

}  // namespace

TEST(AlgoChoice, ClearlyFasterCandidateWinsUnderNoiseForEverySeed) {
  // The situation of the ResNet-50 1x1 layers on an H200: algorithm 1 at 16.5 us, 0 at 137 us.
  const std::map<int, double> truth = {{0, 137e-6}, {1, 16.5e-6}, {2, 70e-6}, {5, 25e-6}, {7, 160e-6}};
  for (uint64_t seed = 1; seed <= 300; ++seed) ASSERT_EQ(choose(truth, 0.05, seed), 1) << "seed " << seed;
}

TEST(AlgoChoice, SameChoiceUnderFivePercentNoiseWhenCandidatesAreEqual) {
  // Two equally fast candidates (the lower id wins a tie) and one 30% slower: noise of +-5% on
  // every sample must not move the choice to the other equal one nor to the slow one.
  const std::map<int, double> truth = {{3, 20e-6}, {6, 20e-6}, {1, 26e-6}};
  for (uint64_t seed = 1; seed <= 300; ++seed) ASSERT_EQ(choose(truth, 0.05, seed), 3) << "seed " << seed;
  // A candidate 1% faster than a lower id is within the margin: the lower id, every time.
  const std::map<int, double> near = {{2, 20.2e-6}, {4, 20.0e-6}, {9, 40e-6}};
  for (uint64_t seed = 1; seed <= 300; ++seed) ASSERT_EQ(choose(near, 0.05, seed), 2) << "seed " << seed;
}

TEST(AlgoChoice, TheFakeNoiseIsEnoughToFlipANaiveRule) {
  // The stability above is the rule's doing: with no margin and no widening (the fastest median
  // wins), the same equal candidates and noise pick each of them in some seeds.
  ChoiceRules naive;
  naive.tie_margin = 0;
  naive.max_widening = 0;
  const std::map<int, double> truth = {{3, 20e-6}, {6, 20e-6}, {1, 26e-6}};
  std::map<int, int> picked;
  for (uint64_t seed = 1; seed <= 300; ++seed) ++picked[choose(truth, 0.05, seed, naive)];
  EXPECT_GT(picked[3], 0);
  EXPECT_GT(picked[6], 0);
  EXPECT_EQ(picked[1], 0);
}

TEST(AlgoChoice, FasterByMoreThanTheBandWinsOverALowerId) {
  // 30% apart: outside the margin plus any widening (at most 3% + 7%).
  const std::map<int, double> truth = {{0, 13e-6}, {4, 10e-6}};
  for (uint64_t seed = 1; seed <= 300; ++seed) ASSERT_EQ(choose(truth, 0.05, seed), 4) << "seed " << seed;
}

TEST(AlgoChoice, TieBrokenByLowerIdWithoutNoise) {
  // Medians within 3% and equal spreads: the lowest id, whatever the order given.
  const std::map<int, double> truth = {{7, 100e-6}, {3, 101e-6}, {5, 102e-6}, {1, 102.9e-6}, {0, 104e-6}};
  for (uint64_t seed = 1; seed <= 20; ++seed) EXPECT_EQ(choose(truth, 0.0, seed), 1);
}

TEST(AlgoChoice, AmongTiedMediansTheLowerMeanWins) {
  // Same median, but id 0 has a heavy slow tail: id 1 has the lower mean by far and wins.
  std::vector<CandidateTiming> ts(2);
  ts[0].cand = {0, 0, "a"};
  ts[0].samples_s = {10, 10, 10, 10, 10, 20, 20};
  ts[1].cand = {1, 0, "b"};
  ts[1].samples_s = {10.1, 10.1, 10.1, 10.1, 10.1, 10.1, 10.1};
  for (auto& t : ts) summarise(t);
  EXPECT_DOUBLE_EQ(ts[0].median_s, 10);
  EXPECT_NEAR(ts[0].mean_s, 90.0 / 7, 1e-12);
  EXPECT_DOUBLE_EQ(ts[0].se_s, 0);  // MAD of 0: five of seven samples at the median
  const size_t c = decide(ts, ChoiceRules{});
  EXPECT_EQ(c, 1u);
  EXPECT_TRUE(ts[0].tied);
  EXPECT_TRUE(ts[1].tied);
  EXPECT_TRUE(ts[1].chosen);
  EXPECT_FALSE(ts[0].chosen);
}

TEST(AlgoChoice, OneOutlierDoesNotTieASlowCandidateWithAFastOne) {
  // A single 50x sample (the process preempted) must not make the slow candidate look tied.
  std::vector<CandidateTiming> ts(2);
  ts[0].cand = {0, 0, "slow"};
  ts[0].samples_s = {137, 136, 138, 137, 137};
  ts[1].cand = {1, 0, "fast"};
  ts[1].samples_s = {16.5, 16.4, 800, 16.6, 16.5};
  for (auto& t : ts) summarise(t);
  EXPECT_EQ(decide(ts, ChoiceRules{}), 1u);
  EXPECT_FALSE(ts[0].tied);
}

TEST(AlgoChoice, DropRuleStopsTimingHopelessCandidates) {
  // id 1 is 10x the best: dropped after the second round (never after one sample). id 2 at 3.9x
  // stays.
  const std::map<int, double> truth = {{0, 1e-6}, {1, 10e-6}, {2, 3.9e-6}};
  FakeTimer timer(truth, 0.0, 1);
  ChoiceRules rules;
  const ChoiceOutcome o = choose_by_timing(cands_of(truth), [&](const AlgoCandidate& c) { return timer(c); }, rules);
  EXPECT_EQ(timer.calls[1], 2);
  EXPECT_TRUE(o.timings[1].dropped);
  EXPECT_FALSE(o.timings[2].dropped);
  EXPECT_EQ(timer.calls[0], o.rounds);
  EXPECT_EQ(timer.calls[2], o.rounds);
  EXPECT_EQ(o.best().cand.id, 0);
  // The tiny times never reach the budget: the round cap ends it.
  EXPECT_EQ(o.rounds, rules.max_rounds);
  const json j = timings_to_json(o);
  ASSERT_EQ(j.size(), 3u);
  EXPECT_EQ(j[1]["samples"], 2);
  EXPECT_EQ(j[1]["dropped"], true);
  EXPECT_EQ(j[0]["chosen"], true);
  EXPECT_NEAR(j[2]["median_us"].get<double>(), 3.9, 1e-9);
}

TEST(AlgoChoice, ASlowFirstSampleDoesNotDropTheBestCandidate) {
  // The fastest candidate's first timing is 10x its truth (the GPU still clocking up): a rule
  // that dropped after one sample would lose it and choose the 8x slower candidate.
  const std::map<int, double> truth = {{0, 160e-6}, {1, 21e-6}, {2, 90e-6}};
  std::map<int, int> calls;
  auto timer = [&](const AlgoCandidate& c) {
    const int k = calls[c.id]++;
    return truth.at(c.id) * (c.id == 1 && k == 0 ? 10.0 : 1.0);
  };
  const ChoiceOutcome o = choose_by_timing(cands_of(truth), timer, ChoiceRules{});
  EXPECT_EQ(o.best().cand.id, 1);
  EXPECT_FALSE(o.timings[1].dropped);
  EXPECT_NEAR(o.timings[1].median_s, 21e-6, 1e-12);
}

TEST(AlgoChoice, RoundsStartAtADifferentCandidate) {
  const std::map<int, double> truth = {{0, 1e-6}, {1, 1.1e-6}, {2, 1.2e-6}};
  std::vector<int> order;
  auto timer = [&](const AlgoCandidate& c) {
    order.push_back(c.id);
    return truth.at(c.id);
  };
  ChoiceRules rules;
  rules.min_rounds = rules.max_rounds = 3;
  choose_by_timing(cands_of(truth), timer, rules);
  const std::vector<int> expected = {0, 1, 2, 1, 2, 0, 2, 0, 1};
  EXPECT_EQ(order, expected);
}

TEST(AlgoChoice, RoundsFollowTheBudgetAndTheMinimum) {
  ChoiceRules rules;
  rules.budget_s = 0.05;
  // Each round costs 2 x 4 ms = 8 ms: the budget is reached after 7 rounds (56 ms).
  FakeTimer t1({{0, 4e-3}, {1, 4e-3}}, 0.0, 1);
  EXPECT_EQ(choose_by_timing(cands_of(t1.truth), [&](const AlgoCandidate& c) { return t1(c); }, rules).rounds, 7);
  // Rounds of 2 x 100 ms: over the budget at once, yet the minimum number of rounds is taken.
  FakeTimer t2({{0, 0.1}, {1, 0.1}}, 0.0, 1);
  EXPECT_EQ(choose_by_timing(cands_of(t2.truth), [&](const AlgoCandidate& c) { return t2(c); }, rules).rounds,
            rules.min_rounds);
}

TEST(AlgoChoice, BadInputsAreErrors) {
  EXPECT_THROW(choose_by_timing({}, [](const AlgoCandidate&) { return 1.0; }), Error);
  EXPECT_THROW(choose_by_timing({{0, 0, "x"}}, [](const AlgoCandidate&) { return 0.0; }), Error);
  EXPECT_THROW(choose_by_timing({{0, 0, "x"}}, [](const AlgoCandidate&) -> double { throw Error("launch failed"); }),
               Error);
  std::vector<CandidateTiming> none(1);
  EXPECT_THROW(decide(none, ChoiceRules{}), Error);
}

TEST(AlgoCache, SaveAndLoadRoundTrip) {
  const std::string path = temp_path("round_trip.json");
  std::filesystem::remove(path);
  AlgoCache a;
  a.load(path);  // missing: empty
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(a.summary()["file"], path);
  EXPECT_EQ(a.summary()["entries_loaded"], 0);
  const AlgoCacheKey k1{"cudnn-91400", "NVIDIA H200", "n32_c128_28x28_k512_1x1_s1_p0_g1_fp16_nchw", "fwd"};
  const AlgoCacheKey k2{"cublasLt-130100", "NVIDIA H200", "fp16_1024x1024x1024_tn", "ws33554432"};
  EXPECT_FALSE(a.get(k1).has_value());
  a.put(k1, {1, 1, 4096, 16.5e-6, "2026-12-01T08:00:00Z"});
  a.put(k2, {2, 21, 0, 3.25e-6, ""});
  EXPECT_EQ(a.summary()["added"], 2);
  EXPECT_EQ(a.summary()["misses"], 1);
  a.save(path);
  ASSERT_TRUE(std::filesystem::exists(path));

  AlgoCache b;
  b.load(path);
  EXPECT_EQ(b.size(), 2u);
  bool from_file = false;
  const auto e1 = b.get(k1, &from_file);
  ASSERT_TRUE(e1.has_value());
  EXPECT_TRUE(from_file);
  EXPECT_EQ(e1->algo, 1);
  EXPECT_EQ(e1->extra, 1);
  EXPECT_EQ(e1->workspace, 4096u);
  EXPECT_DOUBLE_EQ(e1->median_s, 16.5e-6);
  EXPECT_EQ(e1->chosen_at, "2026-12-01T08:00:00Z");
  const auto e2 = b.get(k2);
  ASSERT_TRUE(e2.has_value());
  EXPECT_EQ(e2->extra, 21);
  EXPECT_EQ(e2->chosen_at.size(), std::string("2026-12-01T08:00:00Z").size());  // set by put
  EXPECT_FALSE(b.get({"cudnn-91400", "NVIDIA H100", k1.op, k1.variant}).has_value());  // another GPU model
  const json s = b.summary();
  EXPECT_EQ(s["entries_loaded"], 2);
  EXPECT_EQ(s["hits"], 2);
  EXPECT_EQ(s["misses"], 1);
  EXPECT_EQ(s["added"], 0);

  // --algo-search: the file's entries are ignored, those chosen in this process are used.
  b.set_search_again(true);
  EXPECT_FALSE(b.get(k1).has_value());
  b.put(k1, {0, 1, 0, 137e-6, ""});
  from_file = true;
  const auto again = b.get(k1, &from_file);
  ASSERT_TRUE(again.has_value());
  EXPECT_FALSE(from_file);
  EXPECT_EQ(again->algo, 0);
  EXPECT_EQ(b.summary()["search_again"], true);
  // Saved over the old file: the new choice replaces the old one, the other entry is kept.
  b.save(path);
  AlgoCache c;
  c.load(path);
  EXPECT_EQ(c.size(), 2u);
  EXPECT_EQ(c.get(k1)->algo, 0);
  // No temporary file is left beside it.
  size_t files = 0;
  for (const auto& f : std::filesystem::directory_iterator(std::filesystem::path(path).parent_path()))
    files += f.path().filename().string().find("round_trip") != std::string::npos;
  EXPECT_EQ(files, 1u);
}

TEST(AlgoCache, MalformedFileIsAnErrorNamingTheFile) {
  const std::vector<std::string> bad = {
      "{ not json",
      "[]",
      R"({"format": "something else", "version": 1, "entries": []})",
      R"({"format": "nodebench-algo-cache", "version": 99, "entries": []})",
      R"({"format": "nodebench-algo-cache", "version": 1, "entries": {}})",
      R"({"format": "nodebench-algo-cache", "version": 1, "entries": [{"library": "cudnn-1"}]})",
      R"({"format": "nodebench-algo-cache", "version": 1, "entries": [{"library": "cudnn-1", "gpu_model": "g",
          "op": "o", "variant": "fwd", "algo": "one", "extra": 0, "workspace_bytes": 0, "median_s": 1e-6,
          "chosen_at": "t"}]})",
      R"({"format": "nodebench-algo-cache", "version": 1, "entries": [{"library": "cudnn-1", "gpu_model": "g",
          "op": "o", "variant": "fwd", "algo": 1, "extra": 0, "workspace_bytes": -5, "median_s": 1e-6,
          "chosen_at": "t"}]})",
  };
  const std::string path = temp_path("malformed.json");
  for (const std::string& text : bad) {
    {
      std::ofstream f(path);
      f << text;
    }
    AlgoCache c;
    c.put({"l", "g", "o", "v"}, {1, 0, 0, 1e-6, ""});
    try {
      c.load(path);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
    EXPECT_EQ(c.size(), 1u);  // a bad file changes nothing
  }
  // A valid empty cache loads.
  {
    std::ofstream f(path);
    f << R"({"format": "nodebench-algo-cache", "version": 1, "entries": []})";
  }
  AlgoCache ok;
  EXPECT_NO_THROW(ok.load(path));
  EXPECT_EQ(ok.size(), 0u);
}

TEST(AlgoCache, CliRejectsAMalformedFileWithExit2AndAcceptsAMissingOne) {
  const std::string path = temp_path("cli_bad.json");
  {
    std::ofstream f(path);
    f << "{\"format\": 3";
  }
  ParseOutcome r = parse_cli({"nodebench", "run", "--algo-cache", path});
  EXPECT_FALSE(r.command.has_value());
  EXPECT_EQ(r.exit_code, kExitUsage);
  EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
  r = parse_cli({"nodebench", "validate", "--algo-cache", path});
  EXPECT_EQ(r.exit_code, kExitUsage);

  const std::string missing = temp_path("cli_missing.json");
  std::filesystem::remove(missing);
  r = parse_cli({"nodebench", "run", "--algo-cache", missing, "--algo-search"});
  ASSERT_TRUE(r.command.has_value()) << r.err;
  EXPECT_EQ(r.command->as<RunCommand>()->options.algo_cache_file, missing);
  EXPECT_TRUE(r.command->as<RunCommand>()->options.algo_search);
  r = parse_cli({"nodebench", "validate", "--algo-cache", missing});
  ASSERT_TRUE(r.command.has_value()) << r.err;
  EXPECT_EQ(r.command->as<ValidateCommand>()->run.algo_cache_file, missing);
  EXPECT_FALSE(r.command->as<ValidateCommand>()->run.algo_search);
}

TEST(AlgoCache, ConcurrentPutsAndGetsLoseNothing) {
  AlgoCache cache;
  constexpr int kThreads = 8, kPerThread = 500;
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const AlgoCacheKey k{"lib", "gpu", "op" + std::to_string(t), std::to_string(i)};
        cache.put(k, {i, t, uint64_t(i), 1e-6 * (i + 1), ""});
        const auto e = cache.get(k);
        if (!e || e->algo != i || e->extra != t) ++wrong;
        (void)cache.get({"lib", "gpu", "op" + std::to_string((t + 1) % kThreads), std::to_string(i)});
        if (i % 100 == 0) (void)cache.summary();
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(cache.size(), size_t(kThreads * kPerThread));
  EXPECT_EQ(cache.summary()["added"], kThreads * kPerThread);
  // Entries put in this process are reused uncounted; only lookups that found nothing are misses.
  const json s = cache.summary();
  EXPECT_EQ(s["hits"], 0);
  EXPECT_LE(s["misses"].get<int>(), kThreads * kPerThread);
  // A save from several threads at once leaves one valid file.
  const std::string path = temp_path("concurrent.json");
  std::vector<std::thread> savers;
  for (int t = 0; t < 4; ++t) savers.emplace_back([&] { cache.save(path); });
  for (auto& th : savers) th.join();
  AlgoCache back;
  back.load(path);
  EXPECT_EQ(back.size(), size_t(kThreads * kPerThread));
  EXPECT_EQ(back.get({"lib", "gpu", "op3", "42"})->workspace, 42u);
}

TEST(PerGhzMetrics, RatesAreDividedByTheClockDuringTheCase) {
  EXPECT_TRUE(is_rate_metric("tflops"));
  EXPECT_TRUE(is_rate_metric("busbw_gbps"));
  EXPECT_TRUE(is_rate_metric("train_images_per_s"));
  EXPECT_TRUE(is_rate_metric("tops"));
  EXPECT_FALSE(is_rate_metric("time_us"));
  EXPECT_FALSE(is_rate_metric("theoretical_tflops"));
  EXPECT_FALSE(is_rate_metric("link_gbps"));
  EXPECT_FALSE(is_rate_metric("workspace_bytes"));
  EXPECT_FALSE(is_rate_metric("stops"));

  // Through make_case_records: 1e12 FLOP per launch in 2 ms is 500 TFLOPS; at 1650 MHz that is
  // 500 / 1.65 per GHz.
  Case c;
  c.family = "gemm";
  c.name = "fp16/cublaslt/square_8192";
  GpuInfo g;
  CaseOutput out;
  Measurement m;
  m.samples_s = std::vector<double>(12, 2e-3);
  m.sm_mhz_during = 1650.0;
  out.measurement = m;
  out.throughput_metric = "tflops";
  out.work_per_launch = 1.0;
  out.metrics = {{"images_per_s", 3300.0}, {"theoretical_tflops", 900.0}};
  RecordInput in;
  in.c = &c;
  in.gpus = {0};
  in.gpu = &g;
  in.status = Status::ok;
  in.out = &out;
  in.started_at = "2026-12-01T00:00:00.000Z";
  const CaseRecords r = make_case_records(in, {g});
  ASSERT_EQ(r.records.size(), 1u);
  const json& met = r.records[0]["metrics"];
  EXPECT_NEAR(met["tflops"].get<double>(), 500.0, 1e-9);
  EXPECT_NEAR(met["tflops_per_ghz"].get<double>(), 500.0 / 1.65, 1e-9);
  EXPECT_NEAR(met["images_per_s_per_ghz"].get<double>(), 2000.0, 1e-9);
  EXPECT_FALSE(met.contains("theoretical_tflops_per_ghz"));
  EXPECT_FALSE(met.contains("time_us_per_ghz"));

  // Without a clock reading there is nothing to normalise by.
  out.measurement->sm_mhz_during.reset();
  const CaseRecords u = make_case_records(in, {g});
  EXPECT_FALSE(u.records[0]["metrics"].contains("tflops_per_ghz"));
  json rec = {{"metrics", {{"gbps", 100.0}}}, {"clocks", {{"sm_mhz_during", 0}}}};
  add_per_ghz_metrics(rec);
  EXPECT_FALSE(rec["metrics"].contains("gbps_per_ghz"));
  rec["clocks"]["sm_mhz_during"] = 2000;
  add_per_ghz_metrics(rec);
  EXPECT_NEAR(rec["metrics"]["gbps_per_ghz"].get<double>(), 50.0, 1e-12);
}
