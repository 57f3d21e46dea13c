#include "frugal/budget/watchdog.h"

#include <unistd.h>

#include "frugal/util/units.h"

namespace frugal {
namespace {

constexpr auto kTick = std::chrono::milliseconds(100);
constexpr int kResumableExit = 75;

std::string seconds_text(std::chrono::seconds s) { return format_duration(s); }

}  // namespace

Watchdog::Watchdog(std::optional<Clock::time_point> deadline_end, std::chrono::seconds grace,
                   const SignalGuard* signals)
    : deadline_end_(deadline_end), grace_(grace), signals_(signals), thread_([this] { run(); }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Watchdog::set_resumable_probe(ResumableProbe probe) {
  std::lock_guard lock(mu_);
  probe_ = std::move(probe);
}

std::optional<std::int64_t> Watchdog::resumable() {
  ResumableProbe probe;
  {
    std::lock_guard lock(mu_);
    probe = probe_;
  }
  return probe ? probe() : std::nullopt;
}

Watchdog::Ending Watchdog::ending(const std::string& why, std::optional<std::int64_t> resumable_step) {
  std::string text =
      "\nfrugal: " + why +
      " and the step in progress has not ended (a model's forward that does not return?): stopping now; ";
  if (resumable_step)
    return {text + "a rerun of the same command resumes from step " + std::to_string(*resumable_step) +
                ", the last checkpoint saved\n",
            kResumableExit};
  return {text + "no checkpoint was saved, so nothing of this training is kept (a rerun starts over)\n", 1};
}

void Watchdog::run() {
  std::optional<Clock::time_point> signalled_at;
  std::unique_lock lock(mu_);
  while (!cv_.wait_for(lock, kTick, [this] { return stop_; })) {
    lock.unlock();
    const auto step = resumable();
    SignalGuard::set_resumable(step.has_value());
    const auto now = Clock::now();
    std::string why;
    if (deadline_end_ && now >= *deadline_end_ + grace_)
      why = "the deadline passed " + seconds_text(grace_) + " ago (the stop grace)";
    if (signals_ && signals_->stop_requested()) {
      if (!signalled_at) signalled_at = now;
      if (why.empty() && now >= *signalled_at + grace_)
        why = std::string(SignalGuard::signal_name(signals_->signal_number())) + " arrived " + seconds_text(grace_) +
              " ago (the stop grace)";
    }
    lock.lock();
    if (!why.empty() && !stop_) {
      const Ending e = ending(why, step);
      [[maybe_unused]] auto r = ::write(STDERR_FILENO, e.message.data(), e.message.size());
      ::_exit(e.exit_code);
    }
  }
}

}  // namespace frugal
