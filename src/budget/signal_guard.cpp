#include <signal.h>
#include <unistd.h>

#include <atomic>

#include "frugal/budget/budget.h"

namespace frugal {
namespace {

constexpr int kSignals[] = {SIGTERM, SIGINT, SIGHUP, SIGUSR1};
constexpr int kResumableExit = 75;

std::atomic<int> g_signal{0};
std::atomic<bool> g_installed{false};
std::atomic<bool> g_session_over{false};  // a guard came and went (ignore_after_session)
std::atomic<bool> g_resumable{false};     // a checkpoint exists (set_resumable)
struct sigaction g_previous[std::size(kSignals)];

void after_session(int sig) {
  if (g_session_over.load()) return;
  // Before any session: as without a handler.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
  ::raise(sig);
}

void on_signal(int sig) {
  int expected = 0;
  if (!g_signal.compare_exchange_strong(expected, sig)) {
    // Second signal: the user wants out now. Every published file came from an atomic rename,
    // so stopping mid-write leaves only a temporary that the next start removes.
    if (g_resumable.load()) {
      static const char msg[] = "\nfrugal: second signal, stopping now (resume with the same command)\n";
      [[maybe_unused]] auto r = ::write(STDERR_FILENO, msg, sizeof msg - 1);
      ::_exit(kResumableExit);
    }
    static const char msg[] =
        "\nfrugal: second signal, stopping now; no checkpoint was saved, so nothing of this training is kept\n";
    [[maybe_unused]] auto r = ::write(STDERR_FILENO, msg, sizeof msg - 1);
    ::_exit(1);
  }
  static const char msg[] =
      "\nfrugal: stopping after this step and saving a checkpoint (signal again to stop at once)\n";
  [[maybe_unused]] auto r = ::write(STDERR_FILENO, msg, sizeof msg - 1);
}

}  // namespace

SignalGuard::SignalGuard() {
  if (g_installed.exchange(true)) throw Error(ErrorKind::io, "SignalGuard: only one may be alive at a time");
  g_signal = 0;
  g_session_over = false;
  g_resumable = false;  // until this session's watchdog finds a checkpoint
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (std::size_t i = 0; i < std::size(kSignals); ++i) sigaction(kSignals[i], &sa, &g_previous[i]);
}

SignalGuard::~SignalGuard() {
  g_session_over = true;  // before the handlers go: a signal in between is then ignored, not fatal
  for (std::size_t i = 0; i < std::size(kSignals); ++i) sigaction(kSignals[i], &g_previous[i], nullptr);
  g_installed = false;
}

void SignalGuard::ignore_after_session() {
  struct sigaction sa {};
  sa.sa_handler = after_session;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : kSignals) sigaction(sig, &sa, nullptr);
}

bool SignalGuard::stop_requested() const { return g_signal.load() != 0; }
int SignalGuard::signal_number() const { return g_signal.load(); }

const char* SignalGuard::signal_name(int sig) {
  switch (sig) {
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    case SIGHUP:
      return "SIGHUP";
    case SIGUSR1:
      return "SIGUSR1";
    default:
      return "a signal";
  }
}

void SignalGuard::simulate(int sig) { on_signal(sig); }

void SignalGuard::set_resumable(bool resumable) { g_resumable = resumable; }

}  // namespace frugal
