#include "base/error.hpp"

#include <sstream>

namespace nb {

void throw_cuda(cudaError_t e, const char* expr, const char* file, int line) {
  std::ostringstream os;
  os << cudaGetErrorName(e) << " (" << cudaGetErrorString(e) << ") in `" << expr << "` at "
     << file << ":" << line;
  // Clear a sticky-free error so the next call does not report it again.
  (void)cudaGetLastError();
  throw CudaError(e, os.str());
}

}  // namespace nb
