// A collective over one rank moves nothing between GPUs (issue 25: one H200 reported a 64 MiB
// all-reduce at 0.30 us as 220,254 GB/s): its record has no bandwidth, the flag single_rank and a
// note; the sweep's scaling reference is the smallest count above one.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <optional>

#include "bench/settings.hpp"
#include "nccl/nccl_spec.hpp"
#include "run/case_records.hpp"

using namespace nb;
using namespace nb::nccl;
using nlohmann::json;

TEST(NcclSingleRank, TheNoteSaysWhatTheTimeIs) {
  const std::string in_place = single_rank_note(coll::Collective::all_reduce, true);
  const std::string copy = single_rank_note(coll::Collective::all_reduce, false);
  for (const auto& n : {in_place, copy}) {
    EXPECT_NE(n.find("one rank: nothing crosses a link"), std::string::npos) << n;
    EXPECT_NE(n.find("single_rank"), std::string::npos) << n;
  }
  EXPECT_NE(in_place.find("the call's cost alone"), std::string::npos) << in_place;
  EXPECT_NE(copy.find("a device copy, not a link"), std::string::npos) << copy;
  EXPECT_NE(single_rank_note(coll::Collective::reduce_scatter, true).find("device copy"), std::string::npos);
}

#if NB_HAVE_NCCL

namespace {

// The record's metrics as the record writes them: each typed metric by its name.
json metrics_of(const CaseOutput& out) {
  json m = json::object();
  for (const Metric& x : out.typed_metrics) m[x.name] = x.value;
  return m;
}

TeamResult measured(double bytes, double median_s, double factor) {
  TeamResult r;
  r.k.bytes = size_t(bytes);
  r.median = median_s;
  r.factor = factor;
  r.algbw = bytes / 1e9 / median_s;
  r.busbw = r.algbw * factor;
  r.wrong_per_rank = {0};
  return r;
}

}  // namespace

TEST(NcclSingleRank, OneRankHasNoBandwidthAndTheFlag) {
  Spec spec;
  spec.coll = coll::Collective::all_reduce;
  spec.bytes = 64u << 20;
  spec.in_place = true;
  CaseOutput out;
  // 64 MiB in 0.30 us "is" 223,696 GB/s: a figure of nothing.
  const Teams teams(Settings::from_map({}));
  fill_output(out, measured(67108864.0, 0.30e-6, 0.0), spec, 1, teams);
  const json metrics = metrics_of(out);
  for (const char* k : {"algbw_gbps", "busbw_gbps", "bus_factor_x"}) EXPECT_FALSE(metrics.contains(k)) << k;
  EXPECT_EQ(metrics["gpu_count"], 1);
  EXPECT_DOUBLE_EQ(metrics["data_bytes"].get<double>(), 67108864.0);
  EXPECT_EQ(metrics["wrong_count"], 0);
  EXPECT_EQ(out.flags, std::vector<std::string>{"single_rank"});
  EXPECT_EQ(out.details["note"], single_rank_note(spec.coll, true));
  // Two ranks: the bandwidths, no flag, no note. 64 MiB in 400 us: algbw 167.77 GB/s, busbw x 2(2-1)/2.
  CaseOutput out2;
  fill_output(out2, measured(67108864.0, 400e-6, 1.0), spec, 2, teams);
  const json m2 = metrics_of(out2);
  const json& d2 = out2.details;
  EXPECT_NEAR(m2["algbw_gbps"].get<double>(), 67108864.0 / 400e-6 / 1e9, 1e-9);
  EXPECT_NEAR(m2["busbw_gbps"].get<double>(), 67108864.0 / 400e-6 / 1e9, 1e-9);
  EXPECT_DOUBLE_EQ(m2["bus_factor_x"].get<double>(), 1.0);
  EXPECT_EQ(m2.size(), 6u) << m2.dump();  // the three above, data_bytes, gpu_count, wrong_count
  EXPECT_TRUE(out2.flags.empty());
  EXPECT_TRUE(out2.metrics.empty());  // every metric typed
  EXPECT_FALSE(d2.contains("note"));
}

// The family's rule (fill_output) flags a one-rank collective, and the record carries the flag;
// over two ranks the same measurement is not flagged.
TEST(NcclSingleRank, TheFamilysFlagIsWrittenIntoTheRecord) {
  Case c;
  c.family = "nccl";
  c.name = "all_reduce/float/in_place/eager/64MiB";
  Spec spec;
  spec.coll = coll::Collective::all_reduce;
  spec.bytes = 64u << 20;
  spec.in_place = true;
  const Teams teams(Settings::from_map({}));
  std::vector<GpuInfo> gpus(2);
  const auto record_of = [&](int nranks, double median_s) {
    CaseOutput out;
    out.measurement.emplace();
    out.measurement->samples_s = {median_s, median_s, median_s};
    out.measurement->stop = StopReason::fixed;
    fill_output(out, measured(67108864.0, median_s, nranks > 1 ? 2.0 * (nranks - 1) / nranks : 0.0), spec, nranks, teams);
    RecordInput in;
    in.c = &c;
    in.gpus = nranks > 1 ? std::vector<int>{0, 1} : std::vector<int>{0};
    in.gpu = &gpus[0];
    in.status = Status::ok;
    in.out = &out;
    in.started_at = "2026-12-01T00:00:00.000Z";
    return make_case_records(in, gpus).records.at(0);
  };
  const auto flagged = [](const json& r) {
    return std::find(r["flags"].begin(), r["flags"].end(), json("single_rank")) != r["flags"].end();
  };
  const json one = record_of(1, 3e-7);
  EXPECT_EQ(one["status"], "ok");
  EXPECT_TRUE(flagged(one)) << one["flags"];
  EXPECT_FALSE(one["metrics"].contains("busbw_gbps"));
  EXPECT_EQ(one["primary_metric"], "time_us");  // with no bandwidth, the time is its figure
  const json two = record_of(2, 400e-6);
  EXPECT_FALSE(flagged(two)) << two["flags"];
  EXPECT_TRUE(two["metrics"].contains("busbw_gbps"));
}

TEST(NcclSingleRank, TheSweepsReferenceIsTheSmallestCountAboveOne) {
  // Broadcast's bus factor is 1 at every count, so one rank has a non-zero "bus bandwidth" (a
  // device copy): it must be neither a point's bandwidth nor the reference of the others.
  std::optional<double> ref;
  int ref_count = 0;
  const json p1 = scaling_point(measured(1e9, 1e-4, 1.0), 1, ref, ref_count);      // 10,000 GB/s "copy"
  const json p2 = scaling_point(measured(1e9, 1e9 / 300e9, 1.0), 2, ref, ref_count);  // 300 GB/s
  const json p4 = scaling_point(measured(1e9, 1e9 / 270e9, 1.0), 4, ref, ref_count);  // 270 GB/s
  EXPECT_EQ(p1["single_rank"], true);
  EXPECT_TRUE(p1["busbw_gbps"].is_null() && p1["algbw_gbps"].is_null() && p1["efficiency_pct"].is_null());
  EXPECT_NEAR(p1["time_us"].get<double>(), 100.0, 1e-9);
  ASSERT_TRUE(ref.has_value());
  EXPECT_EQ(ref_count, 2);
  EXPECT_NEAR(p2["efficiency_pct"].get<double>(), 100.0, 1e-9);
  EXPECT_NEAR(p4["efficiency_pct"].get<double>(), 100.0 * 270 / 300, 1e-9);
  EXPECT_FALSE(p4.contains("single_rank"));
}

// What a failed step of a collective says: each failure's own kind, gathered (one process here).
TEST(NcclLockstep, TheRecordsKindIsTheFailuresOwn) {
  auto reason_of = [](const std::function<void()>& f) {
    Lockstep ls;
    EXPECT_FALSE(ls.step(f));
    EXPECT_TRUE(ls.failed());
    return ls.collect();
  };
  Lockstep::Reason r = reason_of([] { throw SkipCase("no bfloat16 here", ReasonKind::unsupported); });
  EXPECT_TRUE(r.skip);
  EXPECT_FALSE(r.timeout);
  EXPECT_EQ(r.kind, ReasonKind::unsupported);
  EXPECT_EQ(r.text, "no bfloat16 here");
  r = reason_of([] { throw CudaError(cudaErrorMemoryAllocation, "cudaMalloc failed"); });
  EXPECT_TRUE(r.skip);
  EXPECT_EQ(r.kind, ReasonKind::oom);
  EXPECT_EQ(r.text, "out of memory: cudaMalloc failed");
  r = reason_of([] { throw Hang("all_reduce did not finish"); });
  EXPECT_FALSE(r.skip);
  EXPECT_TRUE(r.timeout);
  EXPECT_EQ(r.kind, ReasonKind::timeout);
  r = reason_of([] { throw Error("ncclInternalError"); });
  EXPECT_FALSE(r.skip);
  EXPECT_EQ(r.kind, ReasonKind::error);
  // raise() hands a skip's kind to the record (SkipCase), a failure as an error.
  Lockstep ls;
  ls.step([] { throw SkipCase("ranks share a GPU", ReasonKind::shared_gpu); });
  try {
    ls.raise();
  } catch (const SkipCase& s) {
    EXPECT_EQ(s.kind, ReasonKind::shared_gpu);
    EXPECT_EQ(s.reason, "ranks share a GPU");
  }
}

#endif  // NB_HAVE_NCCL
