// `nodebench validate`: doctor, then benchmarks chosen by level, each judged against the
// thresholds of the GPU's model (harness/profiles/thresholds.json with every family's
// benchmarks/<family>/thresholds.json merged over it, overridable), with a verdict per
// check and for the node; output as a table, the run's result file with `analysis.validation`,
// JUnit XML and a Prometheus textfile. See docs/VALIDATE.md.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/benchmark.hpp"
#include "check/options.hpp"
#include "check/doctor.hpp"
#include "base/prometheus.hpp"

namespace nb {

struct Threshold {
  double min = 0;
  // A threshold with `max` passes values up to it (a count of errors, a share of time slowed
  // down); `min` is then unused.
  std::optional<double> max;
  std::string unit;    // percent_of_peak, percent_of_link or gbps
  std::string source;  // "defaults" or "model:NAME", with the file it came from
  std::string why;
};

// Thresholds by check id: defaults, and overrides per model (a devices.json profile name).
class ThresholdDb {
 public:
  static ThresholdDb builtin();
  // Throws nb::Error when the document is malformed (every entry needs a numeric 'min').
  static ThresholdDb from_json(const nlohmann::json& j, const std::string& origin);
  // Merges a document of the same format over this one, entry by entry.
  void merge(const nlohmann::json& j, const std::string& origin);
  bool has_model(const std::string& model) const;
  std::vector<std::string> models() const;
  // The model's own entry where it has one (fields it omits come from the default), else the default.
  std::optional<Threshold> get(const std::string& check, const std::string& model) const;
  const std::string& origin() const { return origin_; }

 private:
  void merge_entries(const nlohmann::json& j, const std::string& origin);
  nlohmann::json doc_;
  std::string origin_;
  std::map<std::string, std::string> entry_origin_;  // the file each entry was last merged from
};

// What --profile resolves to: the thresholds and, per GPU, the model whose overrides apply
// ("" where only the defaults do).
struct ProfileChoice {
  ThresholdDb db = ThresholdDb::builtin();
  std::string requested = "auto";
  std::map<int, std::string> model;
  nlohmann::json to_json() const;
};
// auto, a model name, or a file path. Throws nb::Error (a usage error) otherwise.
ProfileChoice resolve_profile(const std::string& arg, const nlohmann::json& environment);

// ---- Which benchmarks a level runs ---------------------------------------------------------

struct BenchPlan {
  Suite suite = Suite::quick;
  bool run_all = false;                // level 3: every case of every family (full suite)
  std::vector<std::string> case_ids;   // level 2: exactly these
  std::vector<std::string> families;   // families that run
  std::vector<std::string> missing;    // families a level-2/3 check needs that are not built
  bool empty() const { return !run_all && case_ids.empty(); }
};
// Level 1: nothing. Level 2: from the quick suite, for each check the built families declare
// (Family::validation_checks, in registry order) the largest case (params.bytes) its `runs_case`
// accepts, where the level and GPU count reach the check's (docs/VALIDATE.md lists them).
// Level 3: every family, full suite.
// `missing`: registered families not in `built` whose checks the level requires. `built` and
// `quick_cases` are parameters, so that the choice is tested without the registry's cases.
BenchPlan plan_benchmarks(int level, const std::vector<std::string>& built, const std::vector<Case>& quick_cases,
                          int gpu_count = 1);
// Whether a check declared from `min_level` is judged at `level`: levels 1-3 include the lower
// ones; level 4 is level 2 and the burn (checks declared at level 4), not level 3's full sweeps.
bool level_includes(int level, int min_level);
// "^(id1|id2)$" with the ids' regular-expression characters escaped.
std::string exact_id_filter(const std::vector<std::string>& ids);

// ---- Judging -------------------------------------------------------------------------------

// A measured value against a threshold: ok when value >= min (the boundary passes), else fail.
Check judge_value(const std::string& id, std::optional<int> gpu, double value, const Threshold& t,
                  const std::string& evidence, const std::string& fix);

// The benchmark checks of a result document (records and environment) for the GPUs in `gpus`.
std::vector<Check> judge_results(const nlohmann::json& result_doc, const ProfileChoice& profile, int level,
                                 const std::vector<std::string>& built_families, const std::vector<int>& gpus);

// ---- Reports -------------------------------------------------------------------------------

struct ValidationReport {
  int level = 2;
  std::vector<Check> doctor;
  std::vector<Check> benchmarks;
  std::vector<std::string> missing_families;
  nlohmann::json profile = nullptr;
  bool pass() const;
  nlohmann::json to_json() const;  // the result file's analysis.validation
};

std::string xml_escape(const std::string& s);
std::string junit_xml(const ValidationReport& r, const std::string& hostname, const std::string& timestamp,
                      double duration_s);

struct PromContext {
  double unix_time = 0;
  int cuda_gpus = 0;
  std::optional<int> nvml_gpus;
};
std::string prometheus_text(const ValidationReport& r, const PromContext& ctx);

void print_validation(const ValidationReport& r, std::ostream& os);


}  // namespace nb
