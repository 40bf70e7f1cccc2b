// The process exit codes of every command, documented in README.md and `nodebench --help`.
#pragma once

namespace nb {

constexpr int kExitOk = 0;
constexpr int kExitCaseFailed = 1;  // a case failed or was wrong, or the run was interrupted
constexpr int kExitUsage = 2;
constexpr int kExitNoGpu = 3;

}  // namespace nb
