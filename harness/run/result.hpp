// The run's result document (schema nodebench.result, version 1); its records are run/record.hpp's.
#pragma once
#include <chrono>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "base/files.hpp"
#include "bench/benchmark.hpp"
#include "run/record.hpp"

namespace nb {

constexpr int kSchemaVersion = 1;



// The run's document in memory: the header, then the records as they come, the analyses and the
// summary; finish() sets how the run ended. Writing it (atomically, as the run goes) is the JSON
// result file's job (output/json_file.hpp), one Reporter among others.
class RunDocument {
 public:
  explicit RunDocument(nlohmann::json header);
  void add(nlohmann::json record);
  void set_analysis(const std::string& key, nlohmann::json value);
  // A top-level field of the document (e.g. algo_cache, timeline, plan).
  void set_field(const std::string& key, nlohmann::json value) { doc_[key] = std::move(value); }
  void finish(const std::string& run_status, const std::string& error = "");
  // The document with its summary brought up to date.
  const nlohmann::json& doc() const;
  nlohmann::json summary() const;

 private:
  mutable nlohmann::json doc_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace nb
