// The watchdog ends a session whose step does not return: at the deadline plus the grace, or the
// grace after a first signal; exit 75 only when a checkpoint exists.
#include "frugal/budget/watchdog.h"

#include <gtest/gtest.h>

#include <csignal>
#include <thread>

namespace frugal {
namespace {

using namespace std::chrono_literals;

void hang() {
  for (;;) std::this_thread::sleep_for(1s);
}

TEST(WatchdogDeathTest, PastTheDeadlineAndItsGraceWithoutACheckpointExits1) {
  EXPECT_EXIT(
      {
        Watchdog w(Watchdog::Clock::now(), 1s, nullptr);
        hang();
      },
      ::testing::ExitedWithCode(1), "the deadline passed 1s ago.*no checkpoint was saved");
}

TEST(WatchdogDeathTest, PastTheDeadlineWithACheckpointExits75NamingItsStep) {
  EXPECT_EXIT(
      {
        Watchdog w(Watchdog::Clock::now(), 1s, nullptr);
        w.set_resumable_probe([] { return std::optional<std::int64_t>(12); });
        hang();
      },
      ::testing::ExitedWithCode(75), "resumes from step 12");
}

TEST(WatchdogDeathTest, AFirstSignalAndItsGraceEndTheProcess) {
  EXPECT_EXIT(
      {
        SignalGuard guard;
        Watchdog w(std::nullopt, 1s, &guard);
        w.set_resumable_probe([] { return std::optional<std::int64_t>(4); });
        std::raise(SIGTERM);
        hang();
      },
      ::testing::ExitedWithCode(75), "SIGTERM arrived 1s ago.*resumes from step 4");
}

// It keeps SignalGuard's resumability current: a second signal after a save exits 75.
TEST(WatchdogDeathTest, ASecondSignalExits75OnceTheProbeSaysACheckpointExists) {
  EXPECT_EXIT(
      {
        SignalGuard guard;
        SignalGuard::set_resumable(false);
        Watchdog w(std::nullopt, 60s, &guard);
        w.set_resumable_probe([] { return std::optional<std::int64_t>(2); });
        std::this_thread::sleep_for(500ms);  // a few ticks
        std::raise(SIGTERM);
        std::raise(SIGTERM);
        hang();
      },
      ::testing::ExitedWithCode(75), "second signal");
}

TEST(Watchdog, GoesQuietlyWhenTheSessionEndsInTime) {
  { Watchdog w(Watchdog::Clock::now() + 1h, 1s, nullptr); }
  SUCCEED();
}

}  // namespace
}  // namespace frugal
