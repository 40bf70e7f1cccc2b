// The burn family's pure parts, tested without a GPU: the workload chosen per compute capability
// and precision, the planted-fault setting's parse, the per-second timeline sample and its JSON,
// and the verdicts' evidence computed from a timeline (burn_summary).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace nb::burn {

enum class Precision { fp64, fp32, tf32, fp16, bf16 };
std::string to_string(Precision p);
// "auto" gives nullopt (the GPU's fastest); an unknown name throws nb::Error naming it.
std::optional<Precision> parse_precision(const std::string& s);

// The GEMM a burn runs: square n x n x n, C = A B, inputs of `in_bytes` per element, output of
// `out_bytes`, accumulating in `accumulate` ("fp32" or "fp64"); `tensor_cores` when the
// precision runs on them on that compute capability.
struct Workload {
  Precision precision = Precision::fp32;
  int n = 8192;
  int in_bytes = 4, out_bytes = 4;
  std::string accumulate = "fp32";
  bool tensor_cores = false;
  std::string why;  // why this precision (the fastest dense GEMM of the GPU, or the one asked for)
};
// The GPU's fastest dense GEMM, or `requested`; nullopt with `why_not` set where the GPU cannot
// run the requested precision (TF32 and BF16 need compute capability 8.0).
std::optional<Workload> choose_workload(int cc, std::optional<Precision> requested, std::string& why_not);

// NODEBENCH_BURN_TEST_FAULT (test only): "gemm:GPU:ITERATION[:ELEMENTS]" corrupts ELEMENTS
// (default 3) elements of GEMM result ITERATION (0 = the first checked) on CUDA GPU GPU;
// "mem:GPU:WORD:BIT" flips BIT of word WORD of the memory test's buffer after the first pattern
// is written. Throws nb::Error on a malformed value.
struct Fault {
  enum class Kind { none, gemm, mem } kind = Kind::none;
  int gpu = -1;
  long long iteration = 0;
  int elements = 3;
  unsigned long long word = 0;
  int bit = 0;
};
Fault parse_fault(const std::string& s);

// One second of one GPU under the burn: the work done in it and NVML's readings at its end.
struct Sample {
  double t_s = 0;                 // seconds since the burn began (end of the interval)
  double gemm_tflops = 0;         // GEMM work done in the interval / its length
  double mem_gbps = 0;            // memory-test bytes read and written / its length
  long long gemm_iterations = 0;  // GEMMs checked in the interval
  std::optional<double> sm_mhz, mem_mhz, temperature_c, power_w, power_limit_w;
  std::optional<unsigned long long> throttle_mask;
  std::optional<unsigned long long> ecc_corrected, ecc_uncorrected;  // volatile counters
  std::optional<unsigned long long> pcie_replays;
  std::optional<unsigned> link_gen, link_width;
  std::vector<unsigned long long> xids;  // Xid events seen in the interval
};
nlohmann::json to_json(const Sample& s);
Sample sample_from_json(const nlohmann::json& j);

// What the GPU is, for judging its timeline.
struct GpuFacts {
  std::optional<double> slowdown_c;            // NVML's slowdown temperature
  std::optional<unsigned> link_gen_max, link_width_max;
};

// The throttle bits that are slowdowns (thermal, HW slowdown, power brake; not the power cap).
bool is_slowdown(unsigned long long mask);

// The windows the sustained rule compares: the first min(60 s, D/4) and the last min(300 s, D/2)
// of a burn of D seconds.
double head_window_s(double duration_s);
double tail_window_s(double duration_s);

// The verdicts' values and their evidence, from a timeline.
struct Summary {
  double duration_s = 0;
  double first_minute_tflops = 0, sustained_tflops = 0;  // means over the head and tail windows
  std::optional<double> sustained_pct;                    // sustained / first minute x 100
  double mean_power_w = 0;                                // over the samples with a reading
  std::optional<double> max_power_limit_w;
  double mean_mem_gbps = 0;
  double slowdown_pct = 0;  // share of samples with a slowdown bit
  std::string slowdown_evidence;
  std::optional<double> max_temperature_c, temperature_margin_c;  // slowdown threshold - max
  std::string temperature_evidence;
  std::optional<double> new_ecc_errors;  // corrected + uncorrected, last - first
  std::string ecc_evidence;
  std::optional<double> new_pcie_replays;
  std::string replay_evidence;
  double xid_events = 0;
  std::string xid_evidence;
  std::optional<double> link_downtrained_s;  // seconds with the link below its maximum gen or width
  std::string link_evidence;
};
Summary summarize(const std::vector<Sample>& timeline, const GpuFacts& facts);
nlohmann::json to_json(const Summary& s);

}  // namespace nb::burn
