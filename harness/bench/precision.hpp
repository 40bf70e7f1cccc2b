// The FP16-versus-FP32 verdict (analysis `fp16_vs_fp32`), naming no family: each family that
// measures a precision against FP32 declares its evidence in its own folder
// (PrecisionEvidenceRegistrar): for one GPU, rows of the FP32 rate and the other precision's
// rate. The verdict combines the rows of every family in the run with one rule.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/analysis.hpp"

namespace nb {

// One comparison on one GPU: `other` is "fp16" (the mixed-precision evidence) or "int8" (the
// inference recommendation), `kind` what kind of evidence it is (written into the row).
struct PrecisionRow {
  std::string source;  // what was compared, e.g. "gemm 8192^3: fp16 / fp32"
  std::string kind;
  std::string other = "fp16";
  double fp32 = 0, value = 0;
};

// What a family knows of the comparison.
struct PrecisionEvidence {
  std::string family;  // whose records it reads
  // Its rows come in this order in the table (lower first); a family may declare several
  // evidences to place its rows apart.
  int order = 0;
  // The verdict takes the best FP16 speedup of the most practical evidence there is: lower
  // first (a GEMM before a training step before the synthetic peak kernels).
  int preference = 0;
  // Named in the verdict's "run the ... family" when nothing was measured.
  bool suggested = false;
  // Whether its family's records make the analysis run.
  bool triggers = true;
  // The rows for GPU `g`; `notes` get sentences added to a "does not pay" reason.
  std::function<std::vector<PrecisionRow>(const nlohmann::json& records, const GpuBrief& g,
                                          std::vector<std::string>& notes)>
      rows;
};
std::vector<PrecisionEvidence>& precision_evidence_registry();
// Registers the evidence, and the analysis with the first evidence (so that the analysis takes
// the place of the first family that declares evidence among the analyses).
struct PrecisionEvidenceRegistrar {
  explicit PrecisionEvidenceRegistrar(PrecisionEvidence e);
};

// For each GPU: the table of speedups over FP32 from every registered evidence, and a verdict:
// mixed precision "pays" when the best FP16 speedup of the most preferred evidence present is at
// least 1.5x; otherwise "does_not_pay" (on compute capability 6.1/6.2 saying why), and when INT8
// runs at least 2x FP32 the recommendation names INT8 for inference; "not_measured" without any
// FP16 row. `gpus`: as gpu_briefs gives them.
nlohmann::json fp16_vs_fp32(const nlohmann::json& records, const std::vector<GpuBrief>& gpus);

// One line per GPU for the console.
std::vector<std::string> fp16_verdict_lines(const nlohmann::json& analysis);

}  // namespace nb
