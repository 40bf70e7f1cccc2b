// How `run` treats SIGINT and SIGTERM: the handlers, and the watcher that ends a run at once
// when it does not reach the end of its case within kInterruptGraceMs (runner.hpp says why).
#pragma once
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "run/plan.hpp"

namespace nb {

// SIGINT/SIGTERM during `run`: the first stops the run after the current case and writes the
// file with run_status "interrupted"; a second one within kInterruptRepeatNs is the same
// interruption delivered twice and is ignored (GNU timeout signals the child and then its whole
// process group, so a run under `timeout` gets SIGTERM twice at once, which used to kill it and
// leave the file at run_status "running"); a later one ends the process the default way.
// The first also wakes the run's signal watcher, which ends the run at once (the result file
// written "interrupted" with the cases measured so far, the case under way not recorded) when it
// has not reached the end of its case within kInterruptGraceMs: a signal stops a run within a
// second, not after a case of minutes.
enum class InterruptAction { stop_after_case, ignore, terminate };
constexpr int kInterruptGraceMs = 500;
constexpr int64_t kInterruptRepeatNs = 2'000'000'000;
InterruptAction interrupt_action(int64_t now_ns, int64_t& first_ns);

// Installs the handlers (and the self-pipe through which they wake the watcher).
void install_signal_handlers();
// Whether a first SIGINT/SIGTERM came (RunHooks::stop_requested).
bool interrupt_requested();

// Watches a run's signals on its own thread: on the first SIGINT/SIGTERM it gives the run
// kInterruptGraceMs to reach the end of its case by itself (then the run's analyses are made as
// usual), and past that ends the run at once through RunHooks' end_now (the result file written
// "interrupted" with every case measured so far) and the process, so that a signal stops a run
// within a second even during a case that lasts minutes.
class SignalWatcher {
 public:
  // `lock_path`: the result file's lock (OutputLock), removed when the run ends at once.
  SignalWatcher(std::string path, std::string lock_path);
  ~SignalWatcher();
  void add_to(RunHooks& hooks);

 private:
  void over();
  void loop();
  std::string path_, lock_path_;
  std::mutex mu_;
  bool over_ = false;
  std::function<bool(const std::string&)> end_now_;
  std::thread thread_;
};

}  // namespace nb
