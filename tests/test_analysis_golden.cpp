// The analyses after they moved into the families (the FP16-versus-FP32 verdict from the
// evidence each family declares, conv's batch recommendation, train's recommendation) against
// what the code before the move wrote for the same records: tests/data/analysis_inputs.json and
// tests/data/analysis_golden_before_issue22.json (made by that code: the same rule, the same JSON,
// the same lines). Needs the gemm, peak, conv and train families (a cuDNN build).
#include <gtest/gtest.h>

#include <algorithm>

#include "bench/benchmark.hpp"
#include "bench/precision.hpp"
#include "conv/conv_analysis.hpp"
#include "fixture_util.hpp"
#include "train/train_analysis.hpp"

namespace nb {
namespace {

using nlohmann::json;

const json& inputs() {
  static const json j = test::read_json("analysis_inputs.json");
  return j;
}
const json& golden() {
  static const json j = test::read_json("analysis_golden_before_issue22.json");
  return j;
}

TEST(AnalysisGolden, Fp16VerdictAsBefore) {
  const json& cases = inputs()["fp16"];
  ASSERT_EQ(cases.size(), golden()["fp16"].size());
  for (size_t i = 0; i < cases.size(); ++i) {
    std::vector<GpuBrief> briefs;
    for (const auto& b : cases[i]["briefs"])
      briefs.push_back({b["index"], b["name"], b["cc_major"], b["cc_minor"], b.value("host", ""), b.value("rank", -1)});
    const json r = fp16_vs_fp32(cases[i]["records"], briefs);
    EXPECT_EQ(r, golden()["fp16"][i]["result"]) << "case " << i << ":\n" << r.dump(1);
    EXPECT_EQ(json(fp16_verdict_lines(r)), golden()["fp16"][i]["lines"]) << "case " << i;
  }
}

TEST(AnalysisGolden, BatchRecommendationAsBefore) {
  const json& cases = inputs()["batch"];
  ASSERT_EQ(cases.size(), golden()["batch"].size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const json r = conv::batch_recommendation(cases[i]["records"], cases[i]["memory_fraction"].get<double>());
    EXPECT_EQ(r, golden()["batch"][i]["result"]) << "case " << i << ":\n" << r.dump(1);
    EXPECT_EQ(json(conv::batch_recommendation_lines(r)), golden()["batch"][i]["lines"]) << "case " << i;
  }
}

TEST(AnalysisGolden, TrainRecommendationAsBefore) {
  const json& cases = inputs()["train"];
  ASSERT_EQ(cases.size(), golden()["train"].size());
  for (size_t i = 0; i < cases.size(); ++i) {
    std::vector<train::GpuCc> gpus;
    for (const auto& g : cases[i]["gpus"]) gpus.push_back({g[0], g[1]});
    const json r = train::train_recommendation(cases[i]["records"], cases[i]["memory_fraction"].get<double>(),
                                               cases[i]["global_batch"].get<int>(), gpus);
    EXPECT_EQ(r, golden()["train"][i]["result"]) << "case " << i << ":\n" << r.dump(1);
    EXPECT_EQ(json(train::train_recommendation_lines(r)), golden()["train"][i]["lines"]) << "case " << i;
  }
}

// The evidence is declared by the families, in table order, and the verdict names no family: the
// suggestion comes from the evidences marked so, the analysis from the first registration.
TEST(PrecisionEvidence, DeclaredByTheFamilies) {
  std::vector<std::string> fams;
  for (const auto& e : precision_evidence_registry()) fams.push_back(e.family + ":" + std::to_string(e.order));
  std::sort(fams.begin(), fams.end());  // registration order follows the link order
  EXPECT_EQ(fams, (std::vector<std::string>{"conv:40", "gemm:20", "peak:10", "peak:30", "train:50"}));
  int registered = 0;
  for (const auto& a : analysis_registry()) registered += a.key == "fp16_vs_fp32";
  EXPECT_EQ(registered, 1);
  // Train records alone do not make it run; a peak record does.
  const Analysis* fp16 = nullptr;
  for (const auto& a : analysis_registry())
    if (a.key == "fp16_vs_fp32") fp16 = &a;
  ASSERT_NE(fp16, nullptr);
  EXPECT_FALSE(fp16->applies(json::array({{{"family", "train"}}})));
  EXPECT_TRUE(fp16->applies(json::array({{{"family", "train"}}, {{"family", "peak"}}})));
  EXPECT_FALSE(fp16->applies(json::array({{{"family", "memory"}}})));
}

}  // namespace
}  // namespace nb
