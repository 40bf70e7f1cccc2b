// Internal to the gemm family: its precisions and shapes, and one case's run (gemm_run.cpp):
// the operands, the cuBLAS or cuBLASLt call (cuBLASLt's algorithm autotuned and kept in the
// session's algorithm cache), the timing and the check against float64.
#pragma once
#include <string>
#include <vector>

#include <cublasLt.h>
#include <cublas_v2.h>

#include "bench/benchmark.hpp"
#include "kernels/common/kernels.cuh"

namespace nb::gemm {

struct Precision {
  const char* name;
  cudaDataType_t ab, c;
  cublasComputeType_t compute;
  cudaDataType_t scale;
  size_t ab_size, c_size;
  kernels::FillType fill;
  int min_cc;            // major*10+minor
  const char* needs;     // what the GPU lacks when cc < min_cc
  bool lt_only;
  bool integer;
};

// Every precision, in the order of the cases; by name (throws nb::Error for another).
const std::vector<Precision>& precisions();
const Precision& precision(const std::string& name);

// The peak a precision's percent of peak is taken against on GPU `g`.
std::string peak_key(const Precision& p, const GpuInfo& g);

struct Shape {
  std::string kind;  // square, mlp, classifier
  int64_t m, n, k;
  int64_t batch;     // 0 for square
};

// One case: C[m,n] = A^T B through `api` (cublas or cublaslt), timed, then `verify_samples`
// sampled entries checked against float64.
void run_gemm(CaseContext& ctx, const Precision& p, const std::string& api, const Shape& s, size_t verify_samples);

}  // namespace nb::gemm
