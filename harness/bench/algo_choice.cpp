#include "bench/algo_choice.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/error.hpp"
#include "base/files.hpp"
#include "base/json_file.hpp"

namespace nb {
using nlohmann::json;

namespace {

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

bool eligible(const CandidateTiming& t) { return !t.dropped && !t.samples_s.empty(); }

// The relative band within which two figures count as equal: the margin plus three standard
// errors of their difference, the widening capped.
double band(double se_a, double se_b, double ref, const ChoiceRules& r) {
  const double widen = ref > 0 ? 3.0 * std::sqrt(se_a * se_a + se_b * se_b) / ref : 0.0;
  return r.tie_margin + std::min(widen, r.max_widening);
}

}  // namespace

void summarise(CandidateTiming& t) {
  if (t.samples_s.empty()) {
    t.median_s = t.mean_s = t.se_s = 0;
    return;
  }
  const size_t n = t.samples_s.size();
  t.median_s = median_of(t.samples_s);
  double sum = 0;
  for (double x : t.samples_s) sum += x;
  t.mean_s = sum / double(n);
  // Median absolute deviation, scaled to a standard deviation for normal noise (1.4826), then
  // to the standard error of a median (1.2533 / sqrt(n)). One outlier barely moves it, where it
  // would inflate a standard deviation and tie a slow candidate with a fast one.
  std::vector<double> dev;
  dev.reserve(n);
  for (double x : t.samples_s) dev.push_back(std::fabs(x - t.median_s));
  t.se_s = 1.2533 * 1.4826 * median_of(dev) / std::sqrt(double(n));
}

size_t decide(std::vector<CandidateTiming>& ts, const ChoiceRules& rules) {
  size_t best = ts.size();
  for (size_t i = 0; i < ts.size(); ++i) {
    ts[i].tied = ts[i].chosen = false;
    if (!eligible(ts[i])) continue;
    if (best == ts.size() || ts[i].median_s < ts[best].median_s) best = i;
  }
  if (best == ts.size()) throw Error("algorithm choice: no candidate was timed");
  const double m0 = ts[best].median_s;
  // Tied by median with the best; among them the lowest mean.
  size_t lowest_mean = best;
  for (size_t i = 0; i < ts.size(); ++i) {
    if (!eligible(ts[i])) continue;
    ts[i].tied = ts[i].median_s - m0 <= band(ts[i].se_s, ts[best].se_s, m0, rules) * m0;
    if (ts[i].tied && ts[i].mean_s < ts[lowest_mean].mean_s) lowest_mean = i;
  }
  // Those whose mean is within the band of the lowest mean: the lowest id.
  const double a0 = ts[lowest_mean].mean_s;
  size_t chosen = lowest_mean;
  for (size_t i = 0; i < ts.size(); ++i) {
    if (!ts[i].tied) continue;
    const bool same_mean = ts[i].mean_s - a0 <= band(ts[i].se_s, ts[lowest_mean].se_s, a0, rules) * a0;
    if (same_mean && ts[i].cand.id < ts[chosen].cand.id) chosen = i;
  }
  ts[chosen].chosen = true;
  return chosen;
}

ChoiceOutcome choose_by_timing(const std::vector<AlgoCandidate>& cands,
                               const std::function<double(const AlgoCandidate&)>& time_one, const ChoiceRules& rules) {
  if (cands.empty()) throw Error("algorithm choice: no candidates");
  if (rules.min_rounds < 1 || rules.max_rounds < rules.min_rounds || !(rules.drop_factor > 1) || !(rules.tie_margin >= 0))
    throw Error("algorithm choice: inconsistent rules");
  ChoiceOutcome out;
  for (const AlgoCandidate& c : cands) out.timings.push_back({c, {}, 0, 0, 0, false, false, false});
  const size_t n = out.timings.size();
  while (out.rounds < rules.max_rounds && (out.rounds < rules.min_rounds || out.timed_s < rules.budget_s)) {
    // Each round starts one candidate later: whatever slows the first timing of a round (clocks
    // rising after host-side gaps) does not always fall on the same candidate.
    for (size_t k = 0; k < n; ++k) {
      CandidateTiming& t = out.timings[(k + size_t(out.rounds)) % n];
      if (t.dropped) continue;
      const double s = time_one(t.cand);
      if (!(s > 0) || !std::isfinite(s))
        throw Error("algorithm choice: the timing of candidate " + std::to_string(t.cand.id) + " returned " +
                    std::to_string(s) + " s");
      t.samples_s.push_back(s);
      out.timed_s += s;
    }
    ++out.rounds;
    double best = 0;
    for (CandidateTiming& t : out.timings) {
      if (t.dropped) continue;
      summarise(t);
      if (best == 0 || t.median_s < best) best = t.median_s;
    }
    // Dropped only from the second round on, and only when even its fastest sample is over
    // drop_factor x the best median, so that one slow first sample cannot drop the best candidate.
    // (On an H200 the ResNet-50 network case chose, in 3 runs of 5, a 160 us forward algorithm
    // for a layer whose 21 us algorithm other runs chose; a one-sample drop is one way that can
    // happen, which the network records' <pass>_choice now show or rule out.)
    if (out.rounds >= 2)
      for (CandidateTiming& t : out.timings)
        if (!t.dropped && *std::min_element(t.samples_s.begin(), t.samples_s.end()) > rules.drop_factor * best)
          t.dropped = true;
  }
  out.chosen = decide(out.timings, rules);
  return out;
}

json timings_to_json(const ChoiceOutcome& o) {
  json a = json::array();
  for (const CandidateTiming& t : o.timings)
    a.push_back({{"id", t.cand.id},
                 {"label", t.cand.label},
                 {kWorkspaceMetric.name(), t.cand.workspace},
                 {"samples", t.samples_s.size()},
                 {"median_us", t.median_s * 1e6},
                 {"mean_us", t.mean_s * 1e6},
                 {"dropped", t.dropped},
                 {"tied", t.tied},
                 {"chosen", t.chosen}});
  return a;
}

// ---------------------------------------------------------------------------------------------

std::string utc_now_iso() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

namespace {

constexpr const char* kCacheFormat = "nodebench-algo-cache";
constexpr int kCacheVersion = 1;

template <typename T>
T field(const json& e, const char* name, size_t index, const std::string& path) {
  auto bad = [&](const std::string& what) {
    return Error("algorithm cache '" + path + "': entry " + std::to_string(index) + ": '" + name + "' " + what);
  };
  if (!e.contains(name)) throw bad("is missing");
  const json& v = e[name];
  if constexpr (std::is_same_v<T, std::string>) {
    if (!v.is_string()) throw bad("must be a string");
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!v.is_number() || v.get<double>() < 0) throw bad("must be a number >= 0");
  } else if constexpr (std::is_unsigned_v<T>) {
    if (!v.is_number_unsigned()) throw bad("must be a whole number >= 0");
  } else {
    if (!v.is_number_integer()) throw bad("must be a whole number");
  }
  return v.get<T>();
}

}  // namespace

void AlgoCache::load(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool exists = fs::exists(path, ec);
  std::map<AlgoCacheKey, Slot> read;
  if (exists) {
    if (fs::is_directory(path, ec)) throw Error("algorithm cache '" + path + "': is a folder, not a file");
    std::string text;
    try {
      text = read_input_file(path);  // a device, FIFO or huge file: refused, never waited on
    } catch (const Error& e) {
      throw Error("algorithm cache '" + path + "': cannot be read: " + e.what());
    }
    json doc;
    try {
      doc = json::parse(text);
    } catch (const json::exception& e) {
      throw Error("algorithm cache '" + path + "': not valid JSON (" + e.what() + ")");
    }
    if (!doc.is_object() || !doc.contains("format") || !doc["format"].is_string() || doc["format"] != kCacheFormat)
      throw Error("algorithm cache '" + path + "': not a nodebench algorithm cache (expected \"format\": \"" +
                  kCacheFormat + "\")");
    if (!doc.contains("version") || !doc["version"].is_number_integer() || doc["version"].get<int>() != kCacheVersion)
      throw Error("algorithm cache '" + path + "': unsupported version (this nodebench reads version " +
                  std::to_string(kCacheVersion) + ")");
    if (!doc.contains("entries") || !doc["entries"].is_array())
      throw Error("algorithm cache '" + path + "': 'entries' must be an array");
    size_t i = 0;
    for (const json& e : doc["entries"]) {
      if (!e.is_object()) throw Error("algorithm cache '" + path + "': entry " + std::to_string(i) + " is not an object");
      AlgoCacheKey k{field<std::string>(e, "library", i, path), field<std::string>(e, "gpu_model", i, path),
                     field<std::string>(e, "op", i, path), field<std::string>(e, "variant", i, path)};
      AlgoCacheEntry v;
      v.algo = field<int>(e, "algo", i, path);
      v.extra = field<int64_t>(e, "extra", i, path);
      v.workspace = field<uint64_t>(e, kWorkspaceMetric.name().c_str(), i, path);
      v.median_s = field<double>(e, "median_s", i, path);
      v.chosen_at = field<std::string>(e, "chosen_at", i, path);
      read[k] = {v, true};
      ++i;
    }
  }
  // Only a file read whole changes the cache.
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [k, s] : read) entries_[k] = s;
  file_ = path;
  loaded_ = read.size();
}

void AlgoCache::save(const std::string& path) const {
  json entries = json::array();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [k, s] : entries_)
      entries.push_back({{"library", k.library},
                         {"gpu_model", k.gpu_model},
                         {"op", k.op},
                         {"variant", k.variant},
                         {"algo", s.entry.algo},
                         {"extra", s.entry.extra},
                         {kWorkspaceMetric.name(), s.entry.workspace},
                         {"median_s", s.entry.median_s},
                         {"chosen_at", s.entry.chosen_at}});
  }
  const json doc = {{"format", kCacheFormat}, {"version", kCacheVersion}, {"entries", entries}};
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  // The temporary file's name is per process: saves of one process take turns.
  static std::mutex save_mu;
  std::lock_guard<std::mutex> save_lock(save_mu);
  try {
    write_file_atomic(path, doc.dump(1) + "\n");
  } catch (const Error& e) {
    throw Error("algorithm cache '" + path + "': cannot be written: " + e.what());
  }
}

std::optional<AlgoCacheEntry> AlgoCache::get(const AlgoCacheKey& key, bool* from_file) {
  std::lock_guard<std::mutex> lock(mu_);
  if (from_file) *from_file = false;
  auto it = entries_.find(key);
  if (it == entries_.end() || (search_again_ && it->second.from_file)) {
    ++misses_;
    return std::nullopt;
  }
  if (it->second.from_file) ++hits_;
  if (from_file) *from_file = it->second.from_file;
  return it->second.entry;
}

void AlgoCache::put(const AlgoCacheKey& key, AlgoCacheEntry entry) {
  if (entry.chosen_at.empty()) entry.chosen_at = utc_now_iso();
  std::lock_guard<std::mutex> lock(mu_);
  entries_[key] = {std::move(entry), false};
  ++added_;
}

void AlgoCache::set_search_again(bool on) {
  std::lock_guard<std::mutex> lock(mu_);
  search_again_ = on;
}

bool AlgoCache::search_again() const {
  std::lock_guard<std::mutex> lock(mu_);
  return search_again_;
}

size_t AlgoCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

void AlgoCache::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.clear();
  file_.clear();
  loaded_ = hits_ = misses_ = added_ = 0;
  search_again_ = false;
}

json AlgoCache::summary() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {{"file", file_.empty() ? json(nullptr) : json(file_)},
          {"entries_loaded", loaded_},
          {"hits", hits_},
          {"misses", misses_},
          {"added", added_},
          {"entries", entries_.size()},
          {"search_again", search_again_}};
}

}  // namespace nb
