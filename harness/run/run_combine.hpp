// `run --runs N`: N result files of the same run, made in separate processes, combined into one
// whose records carry each case's run-to-run spread. Pure, so it is unit-tested without a GPU.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace nb {

// The last document's records, each with `run_to_run` = {runs, medians_s (one per run where the
// case was timed, in run order), cv (the sample standard deviation of their logs), max_over_min} when at least
// two runs timed it; records are matched by id, GPUs, host and rank. The document gets `runs` =
// {count, files}, its summary's wall time is the sum of the runs'.
nlohmann::json combine_runs(const std::vector<nlohmann::json>& docs, const std::vector<std::string>& files);

}  // namespace nb
