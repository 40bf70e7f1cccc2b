#include "app/output_lock.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace nb {
namespace fs = std::filesystem;

OutputLock::~OutputLock() {
  if (fd_ < 0) return;
  ::unlink(lock_path_.c_str());
  ::close(fd_);
}

std::string OutputLock::take(const std::string& path) {
  const fs::path p(path);
  lock_path_ = (p.parent_path() / ("." + p.filename().string() + ".lock")).string();
  std::error_code ec;
  if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
  for (int attempt = 0; attempt < 3; ++attempt) {
    const int fd = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return "cannot create the lock file '" + lock_path_ + "' (" + std::strerror(errno) + ")";
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      char buf[32] = {};
      const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
      ::close(fd);
      if (err != EWOULDBLOCK) return "cannot lock '" + lock_path_ + "' (" + std::strerror(err) + ")";
      std::string pid = n > 0 ? std::string(buf, size_t(n)) : "unknown";
      while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
      return "'" + path + "' is the result file of another run under way (pid " + pid + ", lock file " + lock_path_ +
             "): give another --out-file, or wait for that run to end";
    }
    // The previous holder may have removed the lock file between our open and our flock.
    struct stat held {}, now {};
    if (::fstat(fd, &held) == 0 && ::stat(lock_path_.c_str(), &now) == 0 && held.st_ino == now.st_ino &&
        held.st_dev == now.st_dev) {
      const std::string pid = std::to_string(::getpid()) + "\n";
      if (::ftruncate(fd, 0) == 0) (void)!::pwrite(fd, pid.data(), pid.size(), 0);
      fd_ = fd;
      return "";  // held
    }
    ::close(fd);
  }
  return "cannot lock '" + lock_path_ + "' (it keeps being replaced)";
}

}  // namespace nb
