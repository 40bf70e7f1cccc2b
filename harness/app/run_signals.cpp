#include "app/run_signals.hpp"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iostream>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include "base/exit_codes.hpp"

namespace nb {

InterruptAction interrupt_action(int64_t now_ns, int64_t& first_ns) {
  if (first_ns == 0) {
    first_ns = now_ns;
    return InterruptAction::stop_after_case;
  }
  return now_ns - first_ns < kInterruptRepeatNs ? InterruptAction::ignore : InterruptAction::terminate;
}

namespace {

std::atomic<bool> g_interrupted{false};

std::atomic<int64_t> g_first_signal_ns{0};
std::atomic<int> g_signal{0};
// The self-pipe through which the handler wakes the run's signal watcher (SignalWatcher).
int g_signal_pipe[2] = {-1, -1};

extern "C" void on_signal(int sig) {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);  // async-signal-safe
  int64_t first = g_first_signal_ns.load();
  switch (interrupt_action(int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec, first)) {
    case InterruptAction::stop_after_case:
      g_first_signal_ns.store(first);
      g_signal.store(sig);
      g_interrupted.store(true);
      if (g_signal_pipe[1] >= 0) {
        const char wake = 1;
        const int saved = errno;
        (void)!write(g_signal_pipe[1], &wake, 1);  // async-signal-safe
        errno = saved;
      }
      break;
    case InterruptAction::ignore: break;
    case InterruptAction::terminate:
      signal(sig, SIG_DFL);
      raise(sig);
      break;
  }
}

// A byte from the pipe: 1 a signal, 0 quit; none within timeout_ms: -1.
int next_byte(int timeout_ms) {
  pollfd p{g_signal_pipe[0], POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) <= 0) return -1;
  char c = 0;
  return ::read(g_signal_pipe[0], &c, 1) == 1 ? c : -1;
}

}  // namespace

void install_signal_handlers() {
  if (g_signal_pipe[0] < 0 && pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) g_signal_pipe[0] = g_signal_pipe[1] = -1;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // not SA_RESETHAND: see interrupt_action
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool interrupt_requested() { return g_interrupted.load(); }

SignalWatcher::SignalWatcher(std::string path, std::string lock_path)
    : path_(std::move(path)), lock_path_(std::move(lock_path)) {
  if (g_signal_pipe[0] >= 0) thread_ = std::thread([this] { loop(); });
}

SignalWatcher::~SignalWatcher() {
  over();
  if (thread_.joinable()) {
    const char quit = 0;
    (void)!write(g_signal_pipe[1], &quit, 1);
    thread_.join();
  }
}

void SignalWatcher::add_to(RunHooks& hooks) {
  hooks.on_start = [this](std::function<bool(const std::string&)> end_now) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!over_) end_now_ = std::move(end_now);
  };
  hooks.on_end = [this] { over(); };
}

void SignalWatcher::over() {
  std::lock_guard<std::mutex> lock(mu_);  // waits for an end_now under way (which ends the process)
  over_ = true;
  end_now_ = nullptr;
}

void SignalWatcher::loop() {
  for (;;) {
    const int b = next_byte(-1);
    if (b == 0) return;
    if (b == 1) break;
  }
  const int sig = g_signal.load();
  const std::string name = sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "signal " + std::to_string(sig);
  std::cerr << "nodebench: " << name << ": stopping the run\n";
  const auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (over_) return;  // the run reached the end of its case and finishes by itself
      if (end_now_ && std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(kInterruptGraceMs)) {
        if (!end_now_("interrupted by " + name)) return;
        std::cout.flush();
        std::cerr << "nodebench: interrupted by " << name << " during a case, which is not recorded; the cases "
                  << "measured so far are in " << path_ << "\n";
        std::cerr.flush();
        std::fflush(nullptr);
        if (!lock_path_.empty()) ::unlink(lock_path_.c_str());
        std::_Exit(kExitCaseFailed);
      }
    }
    if (next_byte(20) == 0) return;
  }
}

}  // namespace nb
