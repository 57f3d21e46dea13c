// The deadline and the signals held against a session that does not come back to ask: a model's
// forward that never returns (a user's TorchScript module can loop forever) never reaches the
// check before the next step. The watchdog's thread ends the process itself.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "frugal/budget/budget.h"

namespace frugal {

class Watchdog {
 public:
  using Clock = std::chrono::steady_clock;
  // Where a rerun resumes: the step of the last checkpoint saved, or nullopt when none was. Called
  // on the watchdog's thread: it must be thread-safe.
  using ResumableProbe = std::function<std::optional<std::int64_t>()>;

  // Ends the process with _exit when the session is still running `grace` after `deadline_end`
  // (none: no deadline) or `grace` after the first signal `signals` caught (nullptr: none): exit 75
  // when a checkpoint exists (the probe's step), else 1, saying why on stderr. It also keeps
  // SignalGuard::set_resumable() current, which a second signal's exit code is decided from.
  Watchdog(std::optional<Clock::time_point> deadline_end, std::chrono::seconds grace, const SignalGuard* signals);
  ~Watchdog();  // stops the thread; the session is over
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  void set_resumable_probe(ResumableProbe probe);

  // The message and exit code the watchdog ends the process with (tests read them).
  struct Ending {
    std::string message;
    int exit_code;
  };
  static Ending ending(const std::string& why, std::optional<std::int64_t> resumable_step);

 private:
  void run();
  std::optional<std::int64_t> resumable();

  std::optional<Clock::time_point> deadline_end_;
  std::chrono::seconds grace_;
  const SignalGuard* signals_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  ResumableProbe probe_;
  std::thread thread_;  // last: started once the rest is set
};

}  // namespace frugal
