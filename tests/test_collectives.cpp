// The multi-GPU families' pure logic: bus-bandwidth factors, buffer counts, the GPU-count
// sweep and its topology-following subsets (made-up topologies), link names, the p2p and nccl
// case expansion (no MPI, no GPU needed; records from parts and the rank merge: test_case_records.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "run/case_records.hpp"
#include "kernels/nccl/collective_kernels.cuh"
#include "cluster/cluster.hpp"
#include "node/topology.hpp"
#include "shared/nccl/collectives.hpp"
#include "bench/benchmark.hpp"
#include "cluster/mpi.hpp"
#include "app/runner.hpp"

using namespace nb;
using namespace nb::coll;
using namespace nb::topo;
using nlohmann::json;

namespace {

// Symmetric matrix from a function of (i, j), 0 on the diagonal.
std::vector<std::vector<int>> sym_matrix(int n, int (*f)(int, int)) {
  std::vector<std::vector<int>> d(size_t(n), std::vector<int>(size_t(n), 0));
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      if (i != j) d[size_t(i)][size_t(j)] = f(std::min(i, j), std::max(i, j));
  return d;
}

// A two-socket PCIe server: pairs (0,1), (2,3), (4,5), (6,7) under one switch each (PIX); two
// switches under one bridge per socket (PXB); sockets apart (SYS).
int two_socket(int a, int b) {
  if (a / 4 != b / 4) return 50;
  if (a / 2 != b / 2) return 20;
  return 10;
}

}  // namespace

TEST(BusFactor, StandardFactors) {
  EXPECT_DOUBLE_EQ(bus_factor(Collective::all_reduce, 1), 0.0);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::all_reduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::all_reduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::reduce_scatter, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::all_gather, 8), 0.875);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::all_gather, 1), 0.0);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::broadcast, 1), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::broadcast, 16), 1.0);
  EXPECT_THROW(bus_factor(Collective::all_reduce, 0), std::invalid_argument);
}

TEST(Counts, FollowTheNcclTestsSizeConvention) {
  const Counts ar = counts(Collective::all_reduce, 1 << 20, 4, 8);
  EXPECT_EQ(ar.send, 262144u);
  EXPECT_EQ(ar.recv, 262144u);
  EXPECT_EQ(ar.bytes, size_t(1) << 20);
  // Reduce-scatter: the input is the nominal size, the output one rank's chunk.
  const Counts rs = counts(Collective::reduce_scatter, 1 << 20, 4, 3);
  EXPECT_EQ(rs.chunk, 262144u / 3);
  EXPECT_EQ(rs.send, rs.chunk * 3);
  EXPECT_EQ(rs.recv, rs.chunk);
  EXPECT_EQ(rs.bytes, rs.send * 4);
  // All-gather: the output is the nominal size.
  const Counts ag = counts(Collective::all_gather, 1 << 20, 2, 8);
  EXPECT_EQ(ag.send, 65536u);
  EXPECT_EQ(ag.recv, 524288u);
  EXPECT_EQ(ag.bytes, size_t(1) << 20);
  // 8 bytes over 8 ranks of floats: at least one element per rank.
  const Counts tiny = counts(Collective::all_gather, 8, 4, 8);
  EXPECT_EQ(tiny.chunk, 1u);
  EXPECT_EQ(tiny.recv, 8u);
  EXPECT_EQ(tiny.bytes, 32u);
  EXPECT_EQ(counts(Collective::broadcast, 8, 2, 4).send, 4u);
  EXPECT_EQ(counts(Collective::all_reduce, 1, 4, 2).send, 1u);
}

TEST(Names, CollectivesDtypesSizes) {
  for (Collective c : all_collectives()) EXPECT_EQ(parse_collective(to_string(c)), c);
  for (DType t : all_dtypes()) EXPECT_EQ(parse_dtype(to_string(t)), t);
  EXPECT_FALSE(parse_collective("alltoall"));
  EXPECT_EQ(all_collectives().front(), Collective::all_reduce);
  EXPECT_EQ(elem_size(DType::bf16), 2u);
  // The size in a case name (bench's bytes_label, which the p2p and nccl names use).
  EXPECT_EQ(bytes_label(8), "8B");
  EXPECT_EQ(bytes_label(65536), "64KiB");
  EXPECT_EQ(bytes_label(int64_t(256) << 20), "256MiB");
  EXPECT_EQ(bytes_label(int64_t(4) << 30), "4GiB");
  EXPECT_EQ(bytes_label(1536), "1536B");
  const auto every = size_ladder(8, size_t(4) << 30, 1);
  EXPECT_EQ(every.size(), 30u);
  EXPECT_EQ(every.front(), 8u);
  EXPECT_EQ(every.back(), size_t(4) << 30);
  const auto sparse = size_ladder(8, size_t(4) << 30, 3);
  EXPECT_EQ(sparse.back(), size_t(4) << 30);
  EXPECT_EQ(sparse[1], 64u);
}

TEST(Topology, LinkTypesAndDistances) {
  EXPECT_EQ(link_type(10, false), "PIX");
  EXPECT_EQ(link_type(20, false), "PXB");
  EXPECT_EQ(link_type(30, false), "PHB");
  EXPECT_EQ(link_type(40, false), "NODE");
  EXPECT_EQ(link_type(50, false), "SYS");
  EXPECT_EQ(link_type(0, false), "internal");
  EXPECT_EQ(link_type(50, true), "NVLink");
  EXPECT_EQ(link_type(std::nullopt, false), "unknown");
  EXPECT_EQ(link_distance(50, true), 0);
  EXPECT_EQ(link_distance(30, false), 30);
  EXPECT_EQ(link_distance(std::nullopt, false), kUnknownDistance);
  EXPECT_LT(link_distance(50, false), kNetworkDistance);
}

TEST(SweepCounts, PowersOfTwoThenN) {
  EXPECT_EQ(sweep_counts(1), (std::vector<int>{1}));
  EXPECT_EQ(sweep_counts(2), (std::vector<int>{1, 2}));
  EXPECT_EQ(sweep_counts(8), (std::vector<int>{1, 2, 4, 8}));
  EXPECT_EQ(sweep_counts(6), (std::vector<int>{1, 2, 4, 6}));
  EXPECT_EQ(sweep_counts(16), (std::vector<int>{1, 2, 4, 8, 16}));
  EXPECT_TRUE(sweep_counts(0).empty());
}

TEST(PickClosest, TwoSocketPcieServer) {
  const auto d = sym_matrix(8, two_socket);
  EXPECT_EQ(pick_closest(d, 1), (std::vector<int>{0}));
  EXPECT_EQ(pick_closest(d, 2), (std::vector<int>{0, 1}));      // one switch
  EXPECT_EQ(pick_closest(d, 3), (std::vector<int>{0, 1, 2}));   // one socket
  EXPECT_EQ(pick_closest(d, 4), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(pick_closest(d, 8).size(), 8u);
  const auto steps = sweep_subsets(d);
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_EQ(steps[2].count, 4);
  EXPECT_EQ(steps[2].members, (std::vector<int>{0, 1, 2, 3}));
}

TEST(PickClosest, PrefersTheClosePairOverLowIndices) {
  // GPU 0 sits alone across the system; 2 and 3 share a switch; the rest meet at a host bridge.
  const auto d = sym_matrix(4, [](int a, int b) {
    if (a == 0) return 50;
    if (a == 2 && b == 3) return 10;
    return 30;
  });
  EXPECT_EQ(pick_closest(d, 2), (std::vector<int>{2, 3}));
  EXPECT_EQ(pick_closest(d, 3), (std::vector<int>{1, 2, 3}));
}

TEST(PickClosest, NvlinkPairsAndNvswitch) {
  // 0 and 5 are NVLinked (distance 0), everything else crosses the system.
  const auto pair = sym_matrix(8, [](int a, int b) { return a == 0 && b == 5 ? 0 : 50; });
  EXPECT_EQ(pick_closest(pair, 2), (std::vector<int>{0, 5}));
  // NVSwitch: every pair NVLink: the lowest indices.
  const auto all = sym_matrix(8, [](int, int) { return 0; });
  EXPECT_EQ(pick_closest(all, 4), (std::vector<int>{0, 1, 2, 3}));
}

TEST(PickClosest, HostsBeforeTheNetwork) {
  // Two hosts of four ranks each (MPI mode): a count that fits in a host stays in one host.
  const auto d = sym_matrix(8, [](int a, int b) { return a / 4 != b / 4 ? kNetworkDistance : 0; });
  EXPECT_EQ(pick_closest(d, 4), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(pick_closest(d, 2), (std::vector<int>{0, 1}));
  // Ranks interleaved over the hosts (round-robin placement): still one host first.
  const auto rr = sym_matrix(8, [](int a, int b) { return a % 2 != b % 2 ? kNetworkDistance : 0; });
  EXPECT_EQ(pick_closest(rr, 4), (std::vector<int>{0, 2, 4, 6}));
}

TEST(PickClosest, RejectsBadInput) {
  const auto d = sym_matrix(4, two_socket);
  EXPECT_THROW(pick_closest(d, 0), std::invalid_argument);
  EXPECT_THROW(pick_closest(d, 5), std::invalid_argument);
  EXPECT_THROW(pick_closest({{0, 1}, {1}}, 1), std::invalid_argument);
}

TEST(P2pCases, QuickSuiteNeedsTwoGpus) {
  const auto cases = select_cases(Suite::quick, {"p2p"}, "");
  std::set<std::string> ids;
  for (const auto& c : cases) {
    EXPECT_TRUE(ids.insert(c.id()).second) << c.id();
    EXPECT_TRUE(c.multi_gpu) << c.id();
    EXPECT_EQ(c.min_gpus, 2) << c.id();
    for (const char* k : {"test", "mode", "peer", "engine", "bytes"}) EXPECT_TRUE(c.params.contains(k)) << c.id() << k;
  }
  for (const char* id : {"p2p/one_way/enabled/ce/256MiB", "p2p/one_way/disabled/ce/256MiB", "p2p/one_way/enabled/sm/256MiB",
                         "p2p/bidir/enabled/ce/256MiB", "p2p/bidir/disabled/ce/256MiB", "p2p/latency/enabled/ce",
                         "p2p/latency/disabled/ce"})
    EXPECT_TRUE(ids.count(id)) << id;
  EXPECT_LT(cases.size(), 12u);
  EXPECT_GT(select_cases(Suite::full, {"p2p"}, "").size(), cases.size());
}

TEST(NcclCases, QuickSuite) {
  const auto cases = select_cases(Suite::quick, {"nccl"}, "");
  std::set<std::string> ids, collectives, dtypes;
  std::set<size_t> ar_sizes;
  bool in_place = false, graph = false, sweep = false;
  for (const auto& c : cases) {
    EXPECT_TRUE(ids.insert(c.id()).second) << c.id();
    EXPECT_TRUE(c.multi_gpu);
    EXPECT_EQ(c.min_gpus, 1);  // NCCL runs on one GPU too (a one-rank communicator)
    collectives.insert(c.params["collective"].get<std::string>());
    dtypes.insert(c.params["dtype"].get<std::string>());
    in_place = in_place || c.params["in_place"].get<bool>();
    graph = graph || c.params["graph"].get<bool>();
    sweep = sweep || c.params.contains("sweep");
    if (c.params["collective"] == "all_reduce" && c.params["dtype"] == "float" && !c.params["in_place"].get<bool>() &&
        !c.params["graph"].get<bool>() && !c.params.contains("sweep"))
      ar_sizes.insert(c.params["bytes"].get<size_t>());
  }
  EXPECT_EQ(collectives, (std::set<std::string>{"all_reduce", "reduce_scatter", "all_gather", "broadcast"}));
  EXPECT_EQ(dtypes, (std::set<std::string>{"float", "half", "bfloat16"}));
  EXPECT_EQ(ar_sizes, (std::set<size_t>{8, 64 << 10, 1 << 20, 64 << 20, 256 << 20}));
  EXPECT_TRUE(in_place && graph && sweep);
  EXPECT_TRUE(ids.count("nccl/all_reduce/float/out_of_place/eager/8B"));
  EXPECT_TRUE(ids.count("nccl/sweep/all_reduce/float/256MiB"));
  EXPECT_LT(cases.size(), 25u);
}

TEST(NcclCases, FullSuiteSweepsEightBytesToFourGiB) {
  const auto cases = select_cases(Suite::full, {"nccl"}, "");
  std::set<std::string> ids;
  std::set<size_t> main;
  for (const auto& c : cases) {
    EXPECT_TRUE(ids.insert(c.id()).second) << c.id();
    if (c.params["collective"] == "all_gather" || c.params["collective"] == "broadcast")
      EXPECT_EQ(c.params["dtype"], "float") << c.id();
    if (c.id().rfind("nccl/all_reduce/float/out_of_place/eager/", 0) == 0) main.insert(c.params["bytes"].get<size_t>());
  }
  EXPECT_EQ(main.size(), 30u);
  EXPECT_EQ(*main.begin(), 8u);
  EXPECT_EQ(*main.rbegin(), size_t(4) << 30);
  EXPECT_TRUE(ids.count("nccl/reduce_scatter/bfloat16/in_place/graph/4GiB"));
}

// ---- Check data of the reductions (kernels/collective_kernels.cu), through its host mirror ----
namespace {

using nb::kernels::CollKind;

// x rounded to a binary type with `sig` significant bits (float 24, half 11, bfloat16 8); the
// sums here stay far from overflow and subnormals.
double round_sig(double x, int sig) {
  if (x == 0) return 0;
  int e = 0;
  const double m = std::frexp(x, &e);
  return std::ldexp(std::nearbyint(std::ldexp(m, sig)), e - sig);
}

// The sum over ranks as a collective in that type computes it: each partial sum rounded, in
// the given rank order.
double sum_in_type(const std::vector<int>& order, size_t i, uint64_t seed, int sig) {
  double s = 0;
  for (int r : order) s = round_sig(s + nb::kernels::coll_input(CollKind::all_reduce, r, i, seed), sig);
  return s;
}

// A host reduce-scatter over `nranks` simulated ranks: rank q's output chunk is the sum over
// ranks of positions [q*chunk, (q+1)*chunk) of the inputs, accumulated in the type.
std::vector<std::vector<double>> reduce_scatter(int nranks, size_t chunk, uint64_t seed, int sig) {
  std::vector<int> order;
  for (int r = nranks - 1; r >= 0; --r) order.push_back(r);  // a ring's order, not 0..n-1
  std::vector<std::vector<double>> out(static_cast<size_t>(nranks), std::vector<double>(chunk, 0.0));
  for (int q = 0; q < nranks; ++q)
    for (size_t i = 0; i < chunk; ++i) out[size_t(q)][i] = sum_in_type(order, size_t(q) * chunk + i, seed, sig);
  return out;
}

size_t mismatches(const std::vector<std::vector<double>>& out, CollKind k, int nranks, size_t chunk, uint64_t seed) {
  size_t bad = 0;
  for (int q = 0; q < nranks; ++q)
    for (size_t i = 0; i < chunk; ++i)
      bad += out[size_t(q)][i] != nb::kernels::coll_expected(k, q, nranks, chunk, chunk, i, seed);
  return bad;
}

}  // namespace

TEST(CollectiveData, ReductionInputsAreExactAndNonTrivialForAnyRankCount) {
  const uint64_t seed = 0x1234;
  for (int n = 1; n <= 256; ++n) {
    std::set<double> distinct;
    std::vector<int> order;
    for (int r = 0; r < n; ++r) order.push_back(r);
    bool nonzero = false;
    for (size_t i = 0; i < 200; ++i) {
      double brute = 0;
      for (int r = 0; r < n; ++r) {
        const double v = nb::kernels::coll_input(CollKind::all_reduce, r, i, seed);
        ASSERT_TRUE(v == 0 || v == 1) << v;
        brute += v;
      }
      const double want = nb::kernels::coll_expected(CollKind::all_reduce, 0, n, 200, 200, i, seed);
      ASSERT_EQ(brute, want) << n << " ranks, index " << i;
      // Exact in bfloat16 and half whatever the order of summation.
      ASSERT_EQ(sum_in_type(order, i, seed, 8), want) << n;
      std::vector<int> rev(order.rbegin(), order.rend());
      ASSERT_EQ(sum_in_type(rev, i, seed, 8), want) << n;
      ASSERT_EQ(sum_in_type(rev, i, seed, 11), want) << n;
      distinct.insert(want);
      nonzero = nonzero || want != 0;
    }
    // Not all zero (the old inputs summed to zero at every multiple of 3), and varying with the
    // position, so that a misplaced chunk shows.
    EXPECT_TRUE(nonzero) << n << " ranks";
    EXPECT_GE(distinct.size(), 2u) << n << " ranks";
  }
  // Ranks differ: two ranks' inputs are not the same vector (ranks 0 and 64 neither).
  for (const auto& [a, b] : std::vector<std::pair<int, int>>{{0, 1}, {0, 64}, {3, 6}, {5, 255}}) {
    int differ = 0;
    for (size_t i = 0; i < 64; ++i)
      differ += nb::kernels::coll_input(CollKind::all_reduce, a, i, seed) != nb::kernels::coll_input(CollKind::all_reduce, b, i, seed);
    EXPECT_GT(differ, 0) << a << " vs " << b;
  }
}

TEST(CollectiveData, SwappedChunkIsCaughtAtThreeAndSixRanks) {
  const uint64_t seed = 77;
  const size_t chunk = 32;
  for (int nranks : {3, 6}) {
    for (int sig : {24, 11, 8}) {
      auto out = reduce_scatter(nranks, chunk, seed, sig);
      EXPECT_EQ(mismatches(out, CollKind::reduce_scatter, nranks, chunk, seed), 0u) << nranks << " ranks";
      // Two ranks' chunks exchanged: caught.
      auto swapped = out;
      std::swap(swapped[0], swapped[1]);
      EXPECT_GT(mismatches(swapped, CollKind::reduce_scatter, nranks, chunk, seed), 0u) << nranks << " ranks";
      // A rotation of every rank's chunk: caught.
      auto rotated = out;
      std::rotate(rotated.begin(), rotated.begin() + 1, rotated.end());
      EXPECT_GT(mismatches(rotated, CollKind::reduce_scatter, nranks, chunk, seed), 0u) << nranks << " ranks";
    }
    // All-reduce: every rank holds the full sum; a chunk of it moved to another place is caught.
    const size_t n = chunk * size_t(nranks);
    std::vector<double> all(n);
    std::vector<int> order;
    for (int r = 0; r < nranks; ++r) order.push_back(r);
    for (size_t i = 0; i < n; ++i) all[i] = sum_in_type(order, i, seed, 8);
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) bad += all[i] != nb::kernels::coll_expected(CollKind::all_reduce, 1, nranks, n, n, i, seed);
    EXPECT_EQ(bad, 0u);
    std::swap_ranges(all.begin(), all.begin() + long(chunk), all.begin() + long(chunk));
    bad = 0;
    for (size_t i = 0; i < n; ++i) bad += all[i] != nb::kernels::coll_expected(CollKind::all_reduce, 1, nranks, n, n, i, seed);
    EXPECT_GT(bad, 0u) << nranks << " ranks";
  }
}

#if NB_HAVE_NCCL
#include "shared/nccl/nccl_team.hpp"

// The Session's NCCL teams take their watchdog, blocking mode and trace from the settings in force
// (no GPU needed: no team is made).
TEST(NcclTeams, SettingsOfTheSession) {
  const nccl::Teams defaults(Settings::from_map({}));
  EXPECT_DOUBLE_EQ(defaults.watchdog().seconds, 120.0);
  EXPECT_FALSE(defaults.nonblocking(false));
  EXPECT_TRUE(defaults.nonblocking(true));
  EXPECT_EQ(defaults.absent_rank(), -1);
  nccl::Teams set(Settings::from_map({{"NODEBENCH_NCCL_TIMEOUT_S", "7.5"}, {"NODEBENCH_NCCL_NONBLOCKING", "1"}}));
  EXPECT_DOUBLE_EQ(set.watchdog().seconds, 7.5);
  EXPECT_TRUE(set.nonblocking(false));
  EXPECT_DOUBLE_EQ(set.take_stall_s(), 0.0);  // no hook set (and none in a build without the hooks)
  const auto d0 = set.watchdog().deadline();
  EXPECT_GT(d0, nccl::Clock::now() + std::chrono::seconds(7));
  EXPECT_LT(d0, nccl::Clock::now() + std::chrono::seconds(8));
}
#endif

// One description of each collective: its shape decides its buffers.
TEST(Collectives, ShapesFromTheOneTable) {
  EXPECT_EQ(shape(Collective::all_reduce), Shape::same);
  EXPECT_EQ(shape(Collective::broadcast), Shape::same);
  EXPECT_EQ(shape(Collective::reduce_scatter), Shape::scatter);
  EXPECT_EQ(shape(Collective::all_gather), Shape::gather);
  EXPECT_TRUE(reduces(Collective::reduce_scatter));
  EXPECT_FALSE(reduces(Collective::all_gather));
  EXPECT_EQ(elem_size(DType::bf16), 2u);
  EXPECT_EQ(all_collectives().size(), 4u);
  EXPECT_EQ(all_collectives().front(), Collective::all_reduce);
}
