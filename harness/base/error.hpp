// Errors are exceptions that carry the failing expression, file and line.
#pragma once
#include <stdexcept>
#include <string>

#include <cuda_runtime_api.h>

namespace nb {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A CUDA runtime error; `code` keeps the cudaError_t so callers can tell out-of-memory apart.
class CudaError : public Error {
 public:
  CudaError(cudaError_t code, const std::string& what) : Error(what), code_(code) {}
  cudaError_t code() const { return code_; }
  bool out_of_memory() const { return code_ == cudaErrorMemoryAllocation; }

 private:
  cudaError_t code_;
};

// A library (cuBLAS, cuDNN, NCCL) error with its numeric status.
class LibraryError : public Error {
 public:
  LibraryError(int status, const std::string& what) : Error(what), status_(status) {}
  int status() const { return status_; }

 private:
  int status_;
};

[[noreturn]] void throw_cuda(cudaError_t e, const char* expr, const char* file, int line);

inline void check_cuda(cudaError_t e, const char* expr, const char* file, int line) {
  if (e != cudaSuccess) throw_cuda(e, expr, file, line);
}

}  // namespace nb

#define NB_CUDA(expr) ::nb::check_cuda((expr), #expr, __FILE__, __LINE__)
// After a kernel launch: launch-configuration errors surface here.
#define NB_CUDA_LAUNCH() ::nb::check_cuda(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
