// The result file's lock for a run's life (`run --out-file`): a second run given the same file is
// refused instead of both writing it.
#pragma once
#include <string>

namespace nb {

// An exclusive lock on a result file's path for the run's life: the file `.NAME.lock` beside it,
// held with flock and holding the holder's pid, so that a second run given the same --out-file is
// refused (exit 2, naming the pid) instead of both writing it and one result being lost. The lock
// goes with the process (a killed run leaves a lock file that no one holds: the next run takes it).
class OutputLock {
 public:
  OutputLock() = default;
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;
  ~OutputLock();
  // Empty when taken, else why not.
  std::string take(const std::string& path);
  // The lock file while held, else empty.
  std::string held() const { return fd_ >= 0 ? lock_path_ : std::string(); }

 private:
  int fd_ = -1;
  std::string lock_path_;
};

}  // namespace nb
