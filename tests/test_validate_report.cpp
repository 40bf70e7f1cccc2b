// `nodebench validate`'s output (the verdict, the validation JSON, JUnit XML, the Prometheus
// textfile) and the command line of `doctor` and `validate` (the thresholds, the plan and the
// judging: test_validate.cpp).
#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "app/cli.hpp"
#include "base/error.hpp"
#include "check/validate.hpp"

using namespace nb;
using nlohmann::json;

namespace {

ParseOutcome parse(std::vector<std::string> a) {
  a.insert(a.begin(), "nodebench");
  return parse_cli(a);
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

namespace {

ValidationReport sample_report() {
  ValidationReport r;
  r.level = 2;
  Check a;
  a.id = "driver.cuda_runtime";
  a.severity = Severity::ok;
  a.summary = "driver 580 supports CUDA 13.0";
  Check b;
  b.id = "pcie.link";
  b.gpu = 0;
  b.severity = Severity::fail;
  b.summary = "PCIe link trained at x8 of x16 <under load> & \"busy\"";
  b.evidence = "Gen5 x8";
  b.fix = "Reseat the GPU";
  Check w;
  w.id = "gpu.persistence";
  w.gpu = 0;
  w.severity = Severity::warn;
  w.summary = "persistence mode is off";
  w.fix = "nvidia-smi -pm 1";
  r.doctor = {a, b, w};
  Threshold t;
  t.min = 70;
  t.unit = "percent_of_peak";
  t.source = "model:H200 SXM";
  r.benchmarks = {judge_value("gemm.fp32", 0, 76.7, t, "record", "fix"),
                  []() {
                    Check s;
                    s.id = "memory.copy";
                    s.gpu = 0;
                    s.skipped = true;
                    s.severity = Severity::info;
                    s.summary = "skipped: family not built";
                    return s;
                  }()};
  return r;
}

}  // namespace

TEST(Report, VerdictAndValidationJson) {
  ValidationReport r = sample_report();
  EXPECT_FALSE(r.pass());
  const json j = r.to_json();
  EXPECT_EQ(j["verdict"], "fail");
  EXPECT_EQ(j["level"], 2);
  EXPECT_EQ(j["counts"]["fail"], 1);
  EXPECT_EQ(j["counts"]["skipped"], 1);
  EXPECT_EQ(j["doctor"].size(), 3u);
  EXPECT_EQ(j["benchmarks"][0]["value"], 76.7);
  r.doctor[1].severity = Severity::info;
  EXPECT_TRUE(r.pass());  // warnings do not fail the node
}

TEST(Report, JunitXml) {
  const std::string x = junit_xml(sample_report(), "node<1>", "2026-11-29T12:00:00Z", 12.5);
  EXPECT_EQ(x.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites ", 0), 0u) << x;
  EXPECT_TRUE(has(x, "<testsuites name=\"nodebench validate (level 2)\" tests=\"5\" failures=\"1\" errors=\"0\" skipped=\"1\" time=\"12.500\">"))
      << x;
  EXPECT_TRUE(has(x, "<testsuite name=\"nodebench.doctor\" tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"0\" hostname=\"node&lt;1&gt;\""))
      << x;
  EXPECT_TRUE(has(x, "<testsuite name=\"nodebench.benchmarks\" tests=\"2\" failures=\"0\" errors=\"0\" skipped=\"1\"")) << x;
  EXPECT_TRUE(has(x, "<testcase classname=\"nodebench.doctor\" name=\"pcie.link gpu0\" time=\"0\">")) << x;
  EXPECT_TRUE(has(x, "<failure message=\"PCIe link trained at x8 of x16 &lt;under load&gt; &amp; &quot;busy&quot;\" type=\"fail\">"))
      << x;
  EXPECT_TRUE(has(x, "fix: Reseat the GPU</failure>")) << x;
  EXPECT_TRUE(has(x, "<skipped message=\"skipped: family not built\"/>")) << x;
  // Every element that opens closes.
  auto count = [&](const std::string& s) {
    size_t n = 0;
    for (size_t p = x.find(s); p != std::string::npos; p = x.find(s, p + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("<testcase "), count("</testcase>"));
  EXPECT_EQ(count("<testsuite "), count("</testsuite>"));
  EXPECT_EQ(count("<testcase "), 5u);
  EXPECT_EQ(xml_escape(std::string("a\x01z")), "a z");
}

TEST(Report, PrometheusTextfile) {
  PromContext ctx;
  ctx.unix_time = 1795000000.7;
  ctx.cuda_gpus = 1;
  ctx.nvml_gpus = 4;
  ValidationReport r = sample_report();
  r.doctor.push_back(r.doctor[1]);  // a repeated (check, gpu) must not give a duplicate series
  r.doctor.back().severity = Severity::warn;
  const std::string t = prometheus_text(r, ctx);
  EXPECT_TRUE(has(t, "\nnodebench_validate_pass 0\n")) << t;
  EXPECT_TRUE(has(t, "\nnodebench_validate_level 2\n"));
  EXPECT_TRUE(has(t, "\nnodebench_validate_timestamp_seconds 1795000000\n")) << t;
  EXPECT_TRUE(has(t, "\nnodebench_check_status{check=\"pcie.link\",gpu=\"0\"} 0\n")) << t;
  EXPECT_TRUE(has(t, "\nnodebench_check_status{check=\"driver.cuda_runtime\",gpu=\"all\"} 1\n")) << t;
  EXPECT_TRUE(has(t, "\nnodebench_check_status{check=\"gemm.fp32\",gpu=\"0\"} 1\n")) << t;
  EXPECT_TRUE(has(t, "\nnodebench_check_severity{check=\"pcie.link\",gpu=\"0\"} 3\n")) << t;
  EXPECT_TRUE(has(t, "\nnodebench_check_value{check=\"gemm.fp32\",gpu=\"0\",unit=\"percent_of_peak\"} 76.7\n")) << t;
  EXPECT_TRUE(has(t, "\nnodebench_check_threshold{check=\"gemm.fp32\",gpu=\"0\",unit=\"percent_of_peak\"} 70\n")) << t;
  EXPECT_TRUE(has(t, "\nnodebench_check_skipped{check=\"memory.copy\",gpu=\"0\"} 1\n")) << t;
  EXPECT_TRUE(has(t, "\nnodebench_gpus{source=\"nvml\"} 4\n")) << t;
  // The exposition format: HELP and TYPE before a metric's samples; each sample line well formed;
  // no series twice.
  const std::regex sample(R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*"(?:,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*")*\})? (-?[0-9.]+(?:e[+-]?[0-9]+)?|NaN)$)");
  std::istringstream in(t);
  std::string line;
  std::set<std::string> typed, series;
  std::string last_help;
  while (std::getline(in, line)) {
    if (line.rfind("# HELP ", 0) == 0) {
      last_help = line.substr(7, line.find(' ', 7) - 7);
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      const std::string name = line.substr(7, line.find(' ', 7) - 7);
      EXPECT_EQ(name, last_help);
      EXPECT_TRUE(typed.insert(name).second) << "TYPE twice: " << name;
      EXPECT_TRUE(has(line, " gauge"));
      continue;
    }
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, sample)) << "bad line: " << line;
    EXPECT_TRUE(typed.count(m[1])) << "sample before its TYPE: " << line;
    EXPECT_TRUE(series.insert(line.substr(0, line.rfind(' '))).second) << "duplicate series: " << line;
  }
  EXPECT_EQ(prometheus_label_escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
}

TEST(CliValidate, DoctorAndValidateOptions) {
  auto d = parse({"doctor", "--json", "--no-load"});
  ASSERT_TRUE(d.command) << d.err;
  EXPECT_EQ(std::string(d.command->name()), "doctor");
  EXPECT_TRUE(d.command->as<DoctorCommand>()->options.json);
  EXPECT_TRUE(d.command->as<DoctorCommand>()->options.no_load);
  auto v = parse({"validate"});
  ASSERT_TRUE(v.command) << v.err;
  EXPECT_EQ(std::string(v.command->name()), "validate");
  EXPECT_EQ(v.command->as<ValidateCommand>()->options.level, 2);
  EXPECT_EQ(v.command->as<ValidateCommand>()->options.profile, "auto");
  auto all = parse({"validate", "--profile", "Tesla P40", "--level", "3", "--out", "/tmp/v", "--junit", "/tmp/v/j.xml",
                    "--prometheus", "/tmp/v/n.prom", "--gpus", "0,1", "--quiet"});
  ASSERT_TRUE(all.command) << all.err;
  const Command& c = *all.command;
  EXPECT_EQ(c.as<ValidateCommand>()->options.profile, "Tesla P40");
  EXPECT_EQ(c.as<ValidateCommand>()->options.level, 3);
  EXPECT_EQ(c.as<ValidateCommand>()->run.out_dir, "/tmp/v");
  EXPECT_EQ(c.as<ValidateCommand>()->run.format_files.at("junit"), "/tmp/v/j.xml");
  EXPECT_EQ(c.as<ValidateCommand>()->run.format_files.at("prometheus"), "/tmp/v/n.prom");
  EXPECT_EQ(c.as<ValidateCommand>()->run.gpus, "0,1");
  EXPECT_TRUE(c.as<ValidateCommand>()->run.quiet);
  EXPECT_EQ(parse({"validate", "--level", "1"}).command->as<ValidateCommand>()->options.level, 1);
  EXPECT_EQ(parse({"validate", "--level", "4"}).command->as<ValidateCommand>()->options.level, 4);  // with the burn
}

TEST(CliValidate, BadOptionsExitTwo) {
  for (auto args : std::vector<std::vector<std::string>>{
           {"validate", "--level", "5"},
           {"validate", "--level", "0"},
           {"validate", "--level", "two"},
           {"validate", "--level"},
           {"validate", "--no-such-flag"},
           {"doctor", "--level", "2"},
       }) {
    auto p = parse(args);
    EXPECT_FALSE(p.command) << args.back();
    EXPECT_EQ(p.exit_code, 2) << args.back();
    EXPECT_TRUE(has(p.err, "Usage")) << p.err;
  }
  auto g = parse({"validate", "--gpus", "0,x"});
  EXPECT_FALSE(g.command);
  EXPECT_EQ(g.exit_code, 2);
  EXPECT_TRUE(has(parse({"validate", "--help"}).out, "--prometheus"));
  EXPECT_TRUE(has(parse({"--help"}).out, "doctor"));
}
