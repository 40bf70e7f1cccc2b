#include "burn_rules.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "base/error.hpp"
#include "base/text.hpp"

namespace nb::burn {
using nlohmann::json;

std::string to_string(Precision p) {
  switch (p) {
    case Precision::fp64: return "fp64";
    case Precision::fp32: return "fp32";
    case Precision::tf32: return "tf32";
    case Precision::fp16: return "fp16";
    case Precision::bf16: return "bf16";
  }
  return "?";
}

std::optional<Precision> parse_precision(const std::string& s) {
  if (s.empty() || s == "auto") return std::nullopt;
  for (Precision p : {Precision::fp64, Precision::fp32, Precision::tf32, Precision::fp16, Precision::bf16})
    if (s == to_string(p)) return p;
  throw Error("burn precision '" + s + "' is not one of auto, fp64, fp32, tf32, fp16, bf16");
}

std::optional<Workload> choose_workload(int cc, std::optional<Precision> requested, std::string& why_not) {
  Workload w;
  if (!requested) {
    // Tensor cores (cc 7.0 and up) run FP16 inputs with FP32 accumulation fastest of the dense
    // GEMMs every such GPU has; before them (the P40, cc 6.1, FP16 at 1/64 rate) FP32 SGEMM.
    w.precision = cc >= 70 ? Precision::fp16 : Precision::fp32;
    w.why = cc >= 70 ? "the fastest dense GEMM of a GPU with tensor cores (cc >= 7.0): FP16 inputs, FP32 accumulation"
                     : "the fastest dense GEMM of a GPU without tensor cores (cc < 7.0): FP32 SGEMM";
  } else {
    w.precision = *requested;
    w.why = "asked for (--precision " + to_string(*requested) + ")";
    if ((*requested == Precision::tf32 || *requested == Precision::bf16) && cc < 80) {
      why_not = to_string(*requested) + " GEMMs need compute capability 8.0 or newer (this GPU is " +
                std::to_string(cc / 10) + "." + std::to_string(cc % 10) + ")";
      return std::nullopt;
    }
    if (*requested == Precision::fp16 && cc < 53) {
      why_not = "fp16 GEMMs need compute capability 5.3 or newer";
      return std::nullopt;
    }
  }
  switch (w.precision) {
    case Precision::fp64: w.in_bytes = w.out_bytes = 8; w.accumulate = "fp64"; break;
    case Precision::fp32: w.in_bytes = w.out_bytes = 4; break;
    case Precision::tf32: w.in_bytes = w.out_bytes = 4; w.tensor_cores = true; break;
    case Precision::fp16:
    case Precision::bf16: w.in_bytes = w.out_bytes = 2; w.tensor_cores = cc >= 70; break;
  }
  return w;
}

namespace {
long long to_ll(const std::string& s, const std::string& what, const std::string& whole) {
  try {
    size_t used = 0;
    const long long v = std::stoll(s, &used, 0);
    if (used != s.size() || v < 0) throw std::invalid_argument("x");
    return v;
  } catch (const std::exception&) {
    throw Error("burn test fault '" + whole + "': " + what + " '" + s + "' is not a whole number >= 0");
  }
}
}  // namespace

Fault parse_fault(const std::string& s) {
  Fault f;
  if (s.empty()) return f;
  std::vector<std::string> p;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ':');) p.push_back(item);
  if (p.size() >= 3 && p.size() <= 4 && p[0] == "gemm") {
    f.kind = Fault::Kind::gemm;
    f.gpu = int(to_ll(p[1], "GPU", s));
    f.iteration = to_ll(p[2], "ITERATION", s);
    if (p.size() == 4) f.elements = int(std::clamp<long long>(to_ll(p[3], "ELEMENTS", s), 1, 1 << 20));
    return f;
  }
  if (p.size() == 4 && p[0] == "mem") {
    f.kind = Fault::Kind::mem;
    f.gpu = int(to_ll(p[1], "GPU", s));
    f.word = (unsigned long long)to_ll(p[2], "WORD", s);
    f.bit = int(to_ll(p[3], "BIT", s));
    if (f.bit > 31) throw Error("burn test fault '" + s + "': BIT must be 0 to 31 (32-bit words)");
    return f;
  }
  throw Error("burn test fault '" + s + "': expected gemm:GPU:ITERATION[:ELEMENTS] or mem:GPU:WORD:BIT");
}

namespace {
template <class T>
void put(json& j, const char* k, const std::optional<T>& v) {
  j[k] = v ? json(*v) : json(nullptr);
}
template <class T>
void get(const json& j, const char* k, std::optional<T>& v) {
  if (j.contains(k) && j[k].is_number()) v = j[k].get<T>();
}
}  // namespace

json to_json(const Sample& s) {
  json j = {{"t_s", s.t_s}, {"gemm_tflops", s.gemm_tflops}, {"mem_gbps", s.mem_gbps}, {"gemm_iterations", s.gemm_iterations}};
  put(j, "sm_clock_mhz", s.sm_mhz);
  put(j, "mem_clock_mhz", s.mem_mhz);
  put(j, "temperature_c", s.temperature_c);
  put(j, "power_w", s.power_w);
  put(j, "power_limit_w", s.power_limit_w);
  put(j, "throttle_mask", s.throttle_mask);
  put(j, "ecc_volatile_corrected", s.ecc_corrected);
  put(j, "ecc_volatile_uncorrected", s.ecc_uncorrected);
  put(j, "pcie_replays", s.pcie_replays);
  put(j, "pcie_link_gen", s.link_gen);
  put(j, "pcie_link_width", s.link_width);
  j["xids"] = s.xids;
  return j;
}

Sample sample_from_json(const json& j) {
  Sample s;
  s.t_s = j.value("t_s", 0.0);
  s.gemm_tflops = j.value("gemm_tflops", 0.0);
  s.mem_gbps = j.value("mem_gbps", 0.0);
  s.gemm_iterations = j.value("gemm_iterations", 0LL);
  get(j, "sm_clock_mhz", s.sm_mhz);
  get(j, "mem_clock_mhz", s.mem_mhz);
  get(j, "temperature_c", s.temperature_c);
  get(j, "power_w", s.power_w);
  get(j, "power_limit_w", s.power_limit_w);
  get(j, "throttle_mask", s.throttle_mask);
  get(j, "ecc_volatile_corrected", s.ecc_corrected);
  get(j, "ecc_volatile_uncorrected", s.ecc_uncorrected);
  get(j, "pcie_replays", s.pcie_replays);
  get(j, "pcie_link_gen", s.link_gen);
  get(j, "pcie_link_width", s.link_width);
  if (j.contains("xids") && j["xids"].is_array())
    for (const auto& x : j["xids"]) s.xids.push_back(x.get<unsigned long long>());
  return s;
}

// NVML clocks-event reasons: 0x8 HW slowdown, 0x20 SW thermal, 0x40 HW thermal, 0x80 HW power brake.
bool is_slowdown(unsigned long long mask) { return (mask & (0x8ull | 0x20ull | 0x40ull | 0x80ull)) != 0; }

double head_window_s(double d) { return std::min(60.0, d / 4); }
double tail_window_s(double d) { return std::min(300.0, d / 2); }

namespace {
std::string slowdown_names(unsigned long long m) {
  std::vector<std::string> n;
  if (m & 0x8ull) n.push_back("hw_slowdown");
  if (m & 0x20ull) n.push_back("sw_thermal_slowdown");
  if (m & 0x40ull) n.push_back("hw_thermal_slowdown");
  if (m & 0x80ull) n.push_back("hw_power_brake_slowdown");
  return join(n, "|");
}
std::string at_t(double t) { return "t=" + fmt(t, 0) + " s"; }
}  // namespace

Summary summarize(const std::vector<Sample>& tl, const GpuFacts& facts) {
  Summary s;
  if (tl.empty()) return s;
  s.duration_s = tl.back().t_s;
  const double head = head_window_s(s.duration_s), tail = tail_window_s(s.duration_s);
  double hsum = 0, tsum = 0, psum = 0, msum = 0;
  int hn = 0, tn = 0, pn = 0, slow = 0;
  std::optional<size_t> first_slow;
  double tmax = -1e9;
  size_t tmax_at = 0;
  double down_s = 0;
  std::optional<size_t> first_down;
  std::vector<std::string> xid_list;
  double prev_t = 0;
  for (size_t i = 0; i < tl.size(); ++i) {
    const Sample& x = tl[i];
    const double dt = std::max(0.0, x.t_s - prev_t);
    prev_t = x.t_s;
    if (x.t_s <= head + 1e-9) hsum += x.gemm_tflops, ++hn;
    if (x.t_s > s.duration_s - tail + 1e-9) tsum += x.gemm_tflops, ++tn;  // a sample covers the second before its t_s
    msum += x.mem_gbps;
    if (x.power_w) psum += *x.power_w, ++pn;
    if (x.power_limit_w) s.max_power_limit_w = std::max(s.max_power_limit_w.value_or(0), *x.power_limit_w);
    if (x.throttle_mask && is_slowdown(*x.throttle_mask)) {
      ++slow;
      if (!first_slow) first_slow = i;
    }
    if (x.temperature_c && *x.temperature_c > tmax) tmax = *x.temperature_c, tmax_at = i;
    const bool gen_down = x.link_gen && facts.link_gen_max && *x.link_gen < *facts.link_gen_max;
    const bool width_down = x.link_width && facts.link_width_max && *x.link_width < *facts.link_width_max;
    if (gen_down || width_down) {
      down_s += dt;
      if (!first_down) first_down = i;
    }
    for (auto code : x.xids) xid_list.push_back("Xid " + std::to_string(code) + " at " + at_t(x.t_s));
  }
  s.first_minute_tflops = hn ? hsum / hn : 0;
  s.sustained_tflops = tn ? tsum / tn : 0;
  if (s.first_minute_tflops > 0) s.sustained_pct = 100.0 * s.sustained_tflops / s.first_minute_tflops;
  s.mean_power_w = pn ? psum / pn : 0;
  s.mean_mem_gbps = msum / double(tl.size());
  s.slowdown_pct = 100.0 * slow / double(tl.size());
  s.slowdown_evidence = slow ? std::to_string(slow) + " of " + std::to_string(tl.size()) + " one-second samples slowed down; first at " +
                                   at_t(tl[*first_slow].t_s) + " (" + slowdown_names(*tl[*first_slow].throttle_mask) + ")"
                             : "no thermal or hardware slowdown in " + std::to_string(tl.size()) + " samples";
  if (tmax > -1e9) {
    s.max_temperature_c = tmax;
    if (facts.slowdown_c) {
      s.temperature_margin_c = *facts.slowdown_c - tmax;
      s.temperature_evidence = "hottest " + fmt(tmax, 0) + " C at " + at_t(tl[tmax_at].t_s) + "; the GPU slows down at " +
                               fmt(*facts.slowdown_c, 0) + " C (NVML)";
    } else {
      s.temperature_evidence = "hottest " + fmt(tmax, 0) + " C; NVML gives no slowdown temperature";
    }
  }
  // Counters: the first and the last reading.
  auto first_last = [&](auto member) -> std::optional<std::pair<unsigned long long, unsigned long long>> {
    std::optional<unsigned long long> a, b;
    for (const Sample& x : tl)
      if (const auto& v = x.*member) {
        if (!a) a = *v;
        b = *v;
      }
    if (!a) return std::nullopt;
    return std::make_pair(*a, *b);
  };
  const auto c = first_last(&Sample::ecc_corrected), u = first_last(&Sample::ecc_uncorrected);
  if (c || u) {
    const double dc = c ? double(c->second) - double(c->first) : 0, du = u ? double(u->second) - double(u->first) : 0;
    s.new_ecc_errors = std::max(0.0, dc) + std::max(0.0, du);
    s.ecc_evidence = "volatile ECC corrected " + (c ? std::to_string(c->first) + " -> " + std::to_string(c->second) : "n/a") +
                     ", uncorrected " + (u ? std::to_string(u->first) + " -> " + std::to_string(u->second) : "n/a");
  } else {
    s.ecc_evidence = "NVML reports no ECC counters (ECC off or unsupported)";
  }
  if (const auto r = first_last(&Sample::pcie_replays)) {
    s.new_pcie_replays = std::max(0.0, double(r->second) - double(r->first));
    s.replay_evidence = "PCIe replay counter " + std::to_string(r->first) + " -> " + std::to_string(r->second);
  } else {
    s.replay_evidence = "NVML reports no PCIe replay counter";
  }
  s.xid_events = double(xid_list.size());
  s.xid_evidence = xid_list.empty() ? "no Xid event" : join(xid_list, "; ");
  if (facts.link_gen_max || facts.link_width_max) {
    s.link_downtrained_s = down_s;
    const auto lt = [](const std::optional<unsigned>& g, const std::optional<unsigned>& w) {
      return "gen" + (g ? std::to_string(*g) : std::string("?")) + " x" + (w ? std::to_string(*w) : std::string("?"));
    };
    s.link_evidence = first_down ? "link at " + lt(tl[*first_down].link_gen, tl[*first_down].link_width) + " from " +
                                       at_t(tl[*first_down].t_s) + " (" + fmt(down_s, 0) + " s in all), below its " +
                                       lt(facts.link_gen_max, facts.link_width_max)
                                 : "link at its " + lt(facts.link_gen_max, facts.link_width_max) + " throughout";
  } else {
    s.link_evidence = "NVML reports no PCIe link";
  }
  return s;
}

json to_json(const Summary& s) {
  json j = {{"duration_s", s.duration_s},
            {"first_minute_tflops", s.first_minute_tflops},
            {"sustained_tflops", s.sustained_tflops},
            {"mean_power_w", s.mean_power_w},
            {"mean_mem_gbps", s.mean_mem_gbps},
            {"slowdown_pct", s.slowdown_pct},
            {"slowdown_evidence", s.slowdown_evidence},
            {"temperature_evidence", s.temperature_evidence},
            {"ecc_evidence", s.ecc_evidence},
            {"replay_evidence", s.replay_evidence},
            {"xid_events", s.xid_events},
            {"xid_evidence", s.xid_evidence},
            {"link_evidence", s.link_evidence}};
  put(j, "sustained_pct", s.sustained_pct);
  put(j, "max_power_limit_w", s.max_power_limit_w);
  put(j, "max_temperature_c", s.max_temperature_c);
  put(j, "temperature_margin_c", s.temperature_margin_c);
  put(j, "new_ecc_errors", s.new_ecc_errors);
  put(j, "new_pcie_replays", s.new_pcie_replays);
  put(j, "link_downtrained_s", s.link_downtrained_s);
  return j;
}

}  // namespace nb::burn
