// Running another program under a time limit (the framework probes of `nodebench frameworks`):
// its output kept (the last part, bounded), its whole process group ended when it overruns or
// when it exits and leaves children behind, so that nothing it started outlives the call.
#pragma once
#include <string>
#include <vector>

namespace nb {

struct SubprocessResult {
  int exit_code = -1;        // when it exited; -1 otherwise
  int signal = 0;            // the signal that ended it, when one did
  bool timed_out = false;    // ended by nodebench after `timeout_s`
  bool started = false;      // false: it could not be started (error says why)
  double seconds = 0;
  std::string output;        // stdout and stderr together, the last `max_output` bytes
  std::string error;
  std::string describe() const;  // "exit 0", "killed after 60 s (timeout)", "signal 11"...
};

// Runs argv[0] (a path, or a name searched on PATH) with argv, the caller's environment and
// `extra_env` ("NAME=value") added, stdin from /dev/null. Never throws.
SubprocessResult run_subprocess(const std::vector<std::string>& argv, double timeout_s,
                                const std::vector<std::string>& extra_env = {}, size_t max_output = 1 << 20);

}  // namespace nb
