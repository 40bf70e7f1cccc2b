// The registered metric declarations (bench/metric_registry.hpp) and the edge check of a result
// file read back: what a family registers is what its records carry, a name nobody declares is
// named once per file, a metric that is not a number is refused with the file, record and metric.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "advise/advise_inputs.hpp"
#include "base/error.hpp"
#include "bench/metric_registry.hpp"

using namespace nb;
using nlohmann::json;

namespace {

const DeclaredMetric* find_decl(const std::string& family, const std::string& name) {
  const FamilyMetrics* f = find_family_metrics(family);
  if (!f) return nullptr;
  for (const DeclaredMetric& m : f->metrics)
    if (m.name == name) return &m;
  return nullptr;
}

json doc_of(json records) { return {{"schema", "nodebench.result"}, {"records", std::move(records)}}; }

}  // namespace

TEST(MetricRegistry, EveryFamilyOnceWithTheNamesItsRecordsCarry) {
  // The JSON names as result files carry them (docs/SCHEMA.md, each family's README).
  const std::vector<std::tuple<std::string, std::string, Unit, Better>> expected = {
      {"gemm", "tflops", Unit::tflops, Better::higher},
      {"gemm", "tops", Unit::tops, Better::higher},
      {"memory", "gbps", Unit::gbps, Better::higher},
      {"hostlink", "link_pct", Unit::pct, Better::higher},
      {"hostlink", "link_gbps", Unit::gbps, Better::none},
      {"hostlink", "gpu*_gbps", Unit::gbps, Better::higher},
      {"p2p", "latency_us", Unit::us, Better::lower},
      {"p2p", "wall_gbps", Unit::gbps, Better::higher},
      {"latency", "p90_latency_us", Unit::us, Better::lower},
      {"peak", "theoretical_tops", Unit::tops, Better::none},
      {"input", "per_core_cpu_time_images_per_s", Unit::images_per_s, Better::higher},
      {"input", "worker_cpu_share", Unit::share, Better::none},
      {"burn", "sustained_gemm_tflops", Unit::tflops, Better::higher},
      {"burn", "faulty_elements_count", Unit::count, Better::lower},
      {"conv", "train_images_per_s", Unit::images_per_s, Better::higher},
      {"train", "time_*_ms", Unit::ms, Better::lower},
      {"train_dp", "scaling_efficiency_ratio", Unit::ratio, Better::higher},
      {"nccl", "busbw_gbps", Unit::gbps, Better::higher},
  };
  for (const auto& [family, name, unit, better] : expected) {
    const DeclaredMetric* m = find_decl(family, name);
    ASSERT_NE(m, nullptr) << family << "/" << name;
    EXPECT_EQ(m->unit, unit) << family << "/" << name;
    EXPECT_EQ(m->better, better) << family << "/" << name;
  }
  std::vector<std::string> seen;
  for (const FamilyMetrics& f : metric_registry()) {
    EXPECT_EQ(std::count(seen.begin(), seen.end(), f.family), 0) << f.family << " registered twice";
    seen.push_back(f.family);
  }
  EXPECT_THROW(MetricsRegistrar("gemm", {MetricDecl{"other", Unit::ms}}), Error);
}

TEST(MetricRegistry, KeyedNamesMatchTheirPatternOnly) {
  constexpr KeyedMetricDecl per_gpu{"gpu", Unit::gbps, Better::higher};
  EXPECT_EQ(per_gpu.name(3), "gpu3_gbps");
  EXPECT_EQ(per_gpu.pattern(), "gpu*_gbps");
  EXPECT_EQ(per_gpu.with("12", 5.0).name, "gpu12_gbps");
  const DeclaredMetric d(per_gpu);
  EXPECT_TRUE(d.matches("gpu0_gbps"));
  EXPECT_TRUE(d.matches("gpu15_gbps"));
  EXPECT_FALSE(d.matches("gpu_gbps"));       // no key
  EXPECT_FALSE(d.matches("gpu0_x_gbps"));    // one key, no '_' in it
  EXPECT_FALSE(d.matches("gpu0_gbps_per_ghz"));
  EXPECT_FALSE(d.matches("h2d_gbps"));
  const DeclaredMetric plain(MetricDecl{"h2d", Unit::gbps});
  EXPECT_TRUE(plain.matches("h2d_gbps"));
  EXPECT_FALSE(plain.matches("h2d_gbps2"));
}

TEST(MetricRegistry, DeclaredByTheFamilyTheCoreOrAsACompanion) {
  EXPECT_TRUE(metric_declared("gemm", "tflops"));
  EXPECT_TRUE(metric_declared("gemm", "tflops_per_ghz"));  // the harness's clock-normalised companion
  EXPECT_TRUE(metric_declared("gemm", "time_us"));         // the harness's own
  EXPECT_TRUE(metric_declared("gemm", "of_theoretical_pct"));
  EXPECT_FALSE(metric_declared("gemm", "busbw_gbps"));     // nccl's, not gemm's
  EXPECT_FALSE(metric_declared("gemm", "busbw_gbps_per_ghz"));
  EXPECT_FALSE(metric_declared("memory", "h2d_gbps"));
  EXPECT_TRUE(metric_declared("hostlink", "gpu7_gbps"));
  EXPECT_TRUE(metric_declared("train", "time_conv_ms"));
  EXPECT_TRUE(metric_declared("no_such_family", "anything_x"));  // not judged: a family this build lacks
}

TEST(MetricEdgeCheck, NamesEachUndeclaredMetricOncePerFile) {
  const json doc = doc_of({
      {{"id", "gemm/square/fp32"}, {"status", "ok"}, {"metrics", {{"tflops", 1.0}, {"time_us", 2.0}, {"novel_x", 3.0}}}},
      {{"id", "gemm/square/fp16"}, {"status", "ok"}, {"metrics", {{"tflops", 1.5}, {"novel_x", 4.0}}}},
      {{"id", "memory/copy/1"}, {"status", "failed"}, {"metrics", {{"gbps", nullptr}, {"tflops", 9.0}}}},
      {{"id", "newfamily/a"}, {"status", "ok"}, {"metrics", {{"whatever_ms", 1.0}}}},
      {{"id", "latency/launch"}, {"status", "ok"}},
  });
  const std::vector<std::string> got = undeclared_metrics(doc, "f.json");
  EXPECT_EQ(got, (std::vector<std::string>{"gemm/novel_x", "memory/tflops"}));
  std::ostringstream warn;
  check_record_metrics(doc, "f.json", warn);
  const std::string w = warn.str();
  EXPECT_EQ(std::count(w.begin(), w.end(), '\n'), 1) << w;
  EXPECT_NE(w.find("f.json"), std::string::npos) << w;
  EXPECT_NE(w.find("gemm/novel_x, memory/tflops"), std::string::npos) << w;

  std::ostringstream quiet;
  check_record_metrics(doc_of({{{"id", "p2p/one_way/x"}, {"metrics", {{"gbps", 20.0}, {"gbps_per_ghz", 1.0}}}}}), "g.json", quiet);
  EXPECT_EQ(quiet.str(), "");
}

TEST(MetricEdgeCheck, AMetricThatIsNotANumberIsRefusedByName) {
  const json doc = doc_of({
      {{"id", "gemm/square/fp32"}, {"metrics", {{"tflops", 1.0}}}},
      {{"id", "hostlink/h2d/pinned"}, {"metrics", {{"gbps", "fast"}}}},
  });
  try {
    (void)undeclared_metrics(doc, "run.json");
    FAIL() << "a string metric was accepted";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("run.json"), std::string::npos) << m;
    EXPECT_NE(m.find("records[1]"), std::string::npos) << m;
    EXPECT_NE(m.find("hostlink/h2d/pinned"), std::string::npos) << m;
    EXPECT_NE(m.find("'gbps'"), std::string::npos) << m;
  }
  EXPECT_THROW((void)undeclared_metrics(doc_of({{{"id", "gemm/x"}, {"metrics", {{"tflops", json::array()}}}}}), "a"), Error);
  EXPECT_THROW((void)undeclared_metrics(doc_of({{{"id", "gemm/x"}, {"metrics", {{"tflops", true}}}}}), "a"), Error);
  EXPECT_THROW((void)undeclared_metrics(doc_of({{{"id", "gemm/x"}, {"metrics", "none"}}}), "a"), Error);
  // Where advise reads a file, the same check: refused there too.
  EXPECT_THROW(advise::check_result_document(doc, "run.json"), Error);
}

TEST(MetricEdgeCheck, TheCommittedResultFilesCarryOnlyDeclaredMetrics) {
  for (const char* name : {"p40_result.json"}) {
    const std::string path = std::string(NB_TEST_DATA_DIR) + "/" + name;
    std::ifstream in(path);
    const json doc = json::parse(in);
    EXPECT_EQ(undeclared_metrics(doc, path), std::vector<std::string>{}) << path;
  }
}
