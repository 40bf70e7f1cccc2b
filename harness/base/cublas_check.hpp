// cuBLAS / cuBLASLt status checks that throw nb::LibraryError with expression, file and line.
#pragma once
#include <string>

#include <cublasLt.h>
#include <cublas_v2.h>

#include "base/error.hpp"

namespace nb {

inline void check_cublas(cublasStatus_t s, const char* expr, const char* file, int line) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  throw LibraryError(int(s), std::string(cublasGetStatusName(s)) + " (" + cublasGetStatusString(s) + ") in `" +
                                 expr + "` at " + file + ":" + std::to_string(line));
}

}  // namespace nb

#define NB_CUBLAS(expr) ::nb::check_cublas((expr), #expr, __FILE__, __LINE__)
