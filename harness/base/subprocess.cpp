#include "base/subprocess.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace nb {

std::string SubprocessResult::describe() const {
  if (!started) return "not started: " + error;
  if (timed_out) return "ended after " + std::to_string(static_cast<int>(seconds + 0.5)) + " s (time limit)";
  if (signal) return std::string("ended by signal ") + std::to_string(signal) + " (" + strsignal(signal) + ")";
  return "exit " + std::to_string(exit_code);
}

SubprocessResult run_subprocess(const std::vector<std::string>& argv, double timeout_s,
                                const std::vector<std::string>& extra_env, size_t max_output) {
  SubprocessResult r;
  if (argv.empty()) {
    r.error = "no command";
    return r;
  }
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    r.error = std::string("pipe: ") + std::strerror(errno);
    return r;
  }
  std::vector<std::string> env_store;
  for (char** e = environ; *e; ++e) env_store.emplace_back(*e);
  for (const auto& kv : extra_env) {
    const std::string name = kv.substr(0, kv.find('=') + 1);
    std::erase_if(env_store, [&](const std::string& s) { return s.rfind(name, 0) == 0; });
    env_store.push_back(kv);
  }
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : env_store) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0) {
    r.error = std::string("fork: ") + std::strerror(errno);
    close(fds[0]);
    close(fds[1]);
    return r;
  }
  if (pid == 0) {
    setpgid(0, 0);  // its own process group: ended as a whole
    const int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    execvpe(cargv[0], cargv.data(), cenv.data());
    const std::string msg = std::string("cannot run ") + argv[0] + ": " + std::strerror(errno) + "\n";
    (void)!write(2, msg.data(), msg.size());
    _exit(127);
  }
  setpgid(pid, pid);  // also here, against the race with the child's own call
  close(fds[1]);
  r.started = true;
  const auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  bool open_pipe = true;
  int status = 0;
  bool reaped = false;
  char buf[65536];
  while (!reaped) {
    if (open_pipe) {
      const double left = timeout_s - elapsed();
      pollfd p{fds[0], POLLIN, 0};
      const int rc = poll(&p, 1, left <= 0 ? 0 : static_cast<int>(std::min(left, 0.2) * 1000) + 1);
      if (rc > 0) {
        const ssize_t n = read(fds[0], buf, sizeof buf);
        if (n > 0) {
          r.output.append(buf, static_cast<size_t>(n));
          if (r.output.size() > 2 * max_output) r.output.erase(0, r.output.size() - max_output);
        } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
          open_pipe = false;
        }
      }
    } else {
      usleep(20000);
    }
    const pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) reaped = true;
    if (!reaped && elapsed() > timeout_s) {
      r.timed_out = true;
      kill(-pid, SIGTERM);
      for (int i = 0; i < 100 && waitpid(pid, &status, WNOHANG) == 0; ++i) usleep(20000);  // 2 s to end
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      reaped = true;
    }
  }
  // Children it left behind (worker processes) go with it; then the rest of the output.
  kill(-pid, SIGKILL);
  if (open_pipe) {
    const int fl = fcntl(fds[0], F_GETFL);
    fcntl(fds[0], F_SETFL, fl | O_NONBLOCK);
    for (int i = 0; i < 64; ++i) {
      const ssize_t n = read(fds[0], buf, sizeof buf);
      if (n <= 0) break;
      r.output.append(buf, static_cast<size_t>(n));
    }
  }
  close(fds[0]);
  if (r.output.size() > max_output) r.output.erase(0, r.output.size() - max_output);
  r.seconds = elapsed();
  if (WIFEXITED(status) && !r.timed_out) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  return r;
}

}  // namespace nb
