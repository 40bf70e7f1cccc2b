// Internal to the p2p family: what a case measures (its spec, from its params), and the runs
// (p2p_copy.cpp) and the validate check (p2p_checks.cpp) the family (p2p.cpp) declares.
#pragma once
#include <string>
#include <vector>

#include "bench/benchmark.hpp"
#include "p2p_metrics.hpp"

namespace nb::p2p {

// What a case measures: a rate (bandwidth) or a 4-byte copy's time (latency), one direction at
// a time or both at once, pushed by the copy engines (ce) or pulled by an SM kernel (sm).
enum class Test { bandwidth, latency };
enum class Mode { one_way, bidir };
enum class Engine { ce, sm };
inline const char* to_string(Mode m) { return m == Mode::one_way ? "one_way" : "bidir"; }
inline const char* to_string(Engine e) { return e == Engine::ce ? "ce" : "sm"; }

struct Spec {
  Test test = Test::bandwidth;
  Mode mode = Mode::one_way;
  bool peer = true;  // peer access enabled
  Engine engine = Engine::ce;
  size_t bytes = 0;
  // From a case's params (test, mode, peer "enabled"/"disabled", engine, bytes).
  static Spec of(const AxisPoint& p) {
    Spec s;
    s.test = p.str("test") == "latency" ? Test::latency : Test::bandwidth;
    s.mode = p.str("mode") == "bidir" ? Mode::bidir : Mode::one_way;
    s.peer = p.str("peer") == "enabled";
    s.engine = p.str("engine") == "sm" ? Engine::sm : Engine::ce;
    s.bytes = size_t(p.int64("bytes"));
    return s;
  }
};

inline std::string case_name(const Spec& s) {
  const std::string peer = s.peer ? "enabled" : "disabled";
  if (s.test == Test::latency) return std::string("latency/") + peer + "/" + to_string(s.engine);
  return std::string(to_string(s.mode)) + "/" + peer + "/" + to_string(s.engine) + "/" + bytes_label(int64_t(s.bytes));
}

// NODEBENCH_P2P_LOOPBACK (a test hook): one GPU copies to itself, so the path runs on one GPU.
bool loopback_hook(const Settings& s);

// Every ordered pair one way (or, for latency, a 4-byte copy), and every pair both ways at once.
void run_one_way(CaseContext& ctx, const Spec& spec);
void run_bidir(CaseContext& ctx, const Spec& spec);

// What `nodebench validate` judges of this family.
std::vector<ValidationCheck> p2p_checks();

}  // namespace nb::p2p
