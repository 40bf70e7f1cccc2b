// Choosing among a library's algorithms (cuDNN convolution, cuBLASLt matmul) by timing them, in a
// way that repeats from run to run, and a cache of the choices that outlives the process.
//
// No CUDA here: a candidate is an id, a workspace and a label, and timing is a callback, so that
// the rule is unit-tested with a fake timer.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/metric.hpp"

namespace nb {

// The workspace an algorithm needs, as the choice's timings and the cache file name it and as a
// case that runs the chosen algorithm reports it (a metric, in bytes).
inline constexpr MetricDecl kWorkspaceMetric{"workspace", Unit::bytes, Better::lower};

struct AlgoCandidate {
  int id = 0;            // the library's algorithm id (or a rank); the lower id wins a full tie
  size_t workspace = 0;  // bytes it needs
  std::string label;     // for the record
};

// The rule (docs/SCHEMA.md, "Algorithm choice"):
// - every candidate is timed in rounds, round-robin, so slow drift (clock, temperature) hits all
//   alike; at least `min_rounds` rounds, then more until the timed seconds reach `budget_s` or
//   `max_rounds` rounds are done (the budget counts the seconds the callback returns);
// - after each round, a candidate whose median so far is over `drop_factor` times the best median
//   so far is dropped (timed no more): it cannot win, and slow ones would dominate the time;
// - the choice is by median: candidates within the tie band of the best median are tied; among
//   them the lowest mean is preferred, and those whose mean is within the band of that lowest mean
//   are tied again and the lowest id wins. The band is `tie_margin` (relative) widened by three
//   standard errors of the difference (a robust one, from the median absolute deviation), at most
//   by `max_widening`, so that noise alone does not break a tie nor make one.
struct ChoiceRules {
  int min_rounds = 5;
  int max_rounds = 15;
  double budget_s = 0.05;
  double tie_margin = 0.03;
  double drop_factor = 4.0;
  double max_widening = 0.07;
};

struct CandidateTiming {
  AlgoCandidate cand;
  std::vector<double> samples_s;
  double median_s = 0, mean_s = 0;
  double se_s = 0;        // robust standard error of the median
  bool dropped = false;   // timed no more after some round (over drop_factor x the best)
  bool tied = false;      // in the median tie band of the best
  bool chosen = false;
};

struct ChoiceOutcome {
  std::vector<CandidateTiming> timings;  // in the order of the candidates given
  size_t chosen = 0;                     // index into timings
  int rounds = 0;
  double timed_s = 0;                    // sum of the timed seconds
  const CandidateTiming& best() const { return timings.at(chosen); }
};

// Median, mean and robust standard error of t.samples_s.
void summarise(CandidateTiming& t);

// The pure decision over candidates already timed (dropped ones and those without samples never
// win); sets `tied` and `chosen` and returns the index of the chosen one. Throws nb::Error when no
// candidate has samples.
size_t decide(std::vector<CandidateTiming>& timings, const ChoiceRules& rules);

// Times every candidate with `time_one` (runs a candidate once, or a short burst, warm, and
// returns seconds per run; it may throw, which ends the choice) under `rules`, then decides.
// Throws nb::Error on an empty candidate list.
ChoiceOutcome choose_by_timing(const std::vector<AlgoCandidate>& cands,
                               const std::function<double(const AlgoCandidate&)>& time_one,
                               const ChoiceRules& rules = {});

// Each candidate: id, label, workspace_bytes, samples, median_us, mean_us, dropped, tied, chosen.
nlohmann::json timings_to_json(const ChoiceOutcome& o);

// ---------------------------------------------------------------------------------------------
// The algorithm cache (`--algo-cache FILE`).

struct AlgoCacheKey {
  std::string library;    // library and version, e.g. "cudnn-91400", "cublasLt-130100"
  std::string gpu_model;  // e.g. "NVIDIA H200"
  std::string op;         // the operation: shape, precision, layout
  std::string variant;    // pass (fwd, bwd_data, bwd_filter) or another qualifier
  auto tie() const { return std::tie(library, gpu_model, op, variant); }
  bool operator<(const AlgoCacheKey& o) const { return tie() < o.tie(); }
  bool operator==(const AlgoCacheKey& o) const { return tie() == o.tie(); }
};

struct AlgoCacheEntry {
  int algo = -1;
  int64_t extra = 0;       // cuDNN: the math type; cuBLASLt: the algorithm's config id
  uint64_t workspace = 0;  // bytes
  double median_s = 0;     // the chosen one's median when it was chosen
  std::string chosen_at;   // UTC, ISO 8601
};

// Thread-safe. A file holds {"format": "nodebench-algo-cache", "version": 1, "entries": [...]}.
class AlgoCache {
 public:
  // Reads `path` into the cache (entries of the file replace those of the same key). A missing
  // file is an empty cache; an unreadable or malformed one throws nb::Error naming the file.
  // Remembers `path` for summary().
  void load(const std::string& path);
  // Writes every entry atomically (temporary file, then rename); throws nb::Error on failure.
  void save(const std::string& path) const;

  // The entry for `key`. With search_again set, entries read from a file are not returned, while
  // those put in this process are. Counted: a hit when the entry came from the file, a miss when
  // nothing is returned (the caller searches); an entry put in this process is reused uncounted.
  // `from_file`, when given, says where a returned entry came from.
  std::optional<AlgoCacheEntry> get(const AlgoCacheKey& key, bool* from_file = nullptr);
  // Adds or replaces an entry (counted as added); `chosen_at` is set to now when empty.
  void put(const AlgoCacheKey& key, AlgoCacheEntry entry);

  void set_search_again(bool on);
  bool search_again() const;
  size_t size() const;
  void clear();  // entries, counters and file

  // {"file": path or null, "entries_loaded", "hits", "misses", "added", "entries", "search_again"}.
  nlohmann::json summary() const;

 private:
  struct Slot {
    AlgoCacheEntry entry;
    bool from_file = false;
  };
  mutable std::mutex mu_;
  std::map<AlgoCacheKey, Slot> entries_;
  std::string file_;
  size_t loaded_ = 0, hits_ = 0, misses_ = 0, added_ = 0;
  bool search_again_ = false;
};

// UTC now as ISO 8601 ("2026-12-01T08:00:00Z").
std::string utc_now_iso();

}  // namespace nb
