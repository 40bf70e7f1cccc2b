#include "output/gbench_out.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "base/error.hpp"
#include "run/result.hpp"

namespace nb {
using nlohmann::json;

namespace {

// At most this many samples of a record become repetitions (the U test gains nothing past it).
constexpr size_t kMaxRepetitions = 1000;

using Run = benchmark::BenchmarkReporter::Run;

Run base_run(const std::string& name, int64_t index, size_t reps) {
  Run r;
  r.run_name.function_name = name;
  r.family_index = index;
  r.per_family_instance_index = 0;
  r.iterations = 1;
  r.threads = 1;
  r.repetitions = int64_t(reps);
  r.time_unit = benchmark::kMicrosecond;
  return r;
}

}  // namespace

void write_gbench_json(const json& doc, const std::string& path) {
  std::ostringstream out, err;
  benchmark::JSONReporter reporter;
  reporter.SetOutputStream(&out);
  reporter.SetErrorStream(&err);
  benchmark::BenchmarkReporter::Context::executable_name = "nodebench";
  benchmark::BenchmarkReporter::Context ctx;
  if (!reporter.ReportContext(ctx)) throw Error("Google Benchmark's reporter refused the context");
  int64_t index = 0;
  for (const json& r : doc.value("records", json::array())) {
    if (!r["samples_s"].is_array() || r["samples_s"].empty() || !r["stats"].is_object()) continue;
    std::string name = r["id"].get<std::string>() + "/gpu";
    for (size_t i = 0; i < r["gpus"].size(); ++i) name += (i ? "," : "") + r["gpus"][i].dump();
    if (r.contains("rank")) name += "/rank" + r["rank"].dump();
    std::vector<double> samples;
    for (const auto& s : r["samples_s"])
      if (s.is_number()) samples.push_back(s.get<double>());
    if (samples.size() > kMaxRepetitions) samples.resize(kMaxRepetitions);
    benchmark::UserCounters counters;
    for (const auto& [k, v] : r["metrics"].items())
      if (v.is_number() && std::isfinite(v.get<double>())) counters[k] = benchmark::Counter(v.get<double>());
    std::vector<Run> runs;
    for (size_t i = 0; i < samples.size(); ++i) {
      Run one = base_run(name, index, samples.size());
      one.run_type = Run::RT_Iteration;
      one.repetition_index = int64_t(i);
      one.real_accumulated_time = samples[i];
      one.cpu_accumulated_time = samples[i];
      one.counters = counters;
      runs.push_back(std::move(one));
    }
    const json& st = r["stats"];
    for (const char* agg : {"mean", "median", "stddev"}) {
      if (!st.contains(agg) || !st[agg].is_number()) continue;
      Run a = base_run(name, index, samples.size());
      a.run_type = Run::RT_Aggregate;
      a.aggregate_name = agg;
      a.repetition_index = Run::no_repetition_index;
      a.real_accumulated_time = st[agg].get<double>();
      a.cpu_accumulated_time = st[agg].get<double>();
      a.counters = counters;
      runs.push_back(std::move(a));
    }
    reporter.ReportRuns(runs);
    ++index;
  }
  reporter.Finalize();
  write_file_atomic(path, out.str());
}

}  // namespace nb

namespace nb {

void GbenchJson::finished(const RunDocument& doc) { write_gbench_json(doc.doc(), path_); }

}  // namespace nb
