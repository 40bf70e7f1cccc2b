// The smallest batch that did not fit, per series (GPU, precision, layout): once a batch of a
// sweep runs out of memory, the larger batches of that series are skipped (smaller_oom) instead
// of trying again. GPUs run their cases at once, one thread each, so it is guarded.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "bench/benchmark.hpp"

namespace nb {

class OomSeries {
 public:
  std::optional<int64_t> smallest_failed(const std::string& series) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = smallest_.find(series);
    if (it == smallest_.end()) return std::nullopt;
    return it->second;
  }
  void failed(const std::string& series, int64_t batch) {
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, inserted] = smallest_.emplace(series, batch);
    if (!inserted && batch < it->second) it->second = batch;
  }
  // Whether `batch` is larger than a batch of `series` that did not fit.
  bool larger_than_failed(const std::string& series, int64_t batch) const {
    const std::optional<int64_t> s = smallest_failed(series);
    return s && batch > *s;
  }
  // Skips the case (throws through ctx.skip) when a smaller batch of `series` did not fit.
  void skip_if_larger_than_failed(CaseContext& ctx, const std::string& series, int64_t batch) const {
    if (const std::optional<int64_t> s = smallest_failed(series); s && batch > *s)
      ctx.skip("does not fit: a smaller batch (" + std::to_string(*s) + ") of this series did not fit",
               ReasonKind::smaller_oom);
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, int64_t> smallest_;
};

}  // namespace nb
