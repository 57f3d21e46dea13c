// StopPolicy on a fake clock: a loop whose loader is the bottleneck stops saved before its
// deadline whatever the phase of its steps, and the deadline and the time budget read the same
// step, evaluation and save costs.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>

#include "../budget/fault_env.h"
#include "frugal/training/stop_policy.h"

namespace frugal {
namespace {

using testing::FaultEnv;

double since(Env::SteadyTime a, Env::SteadyTime b) { return std::chrono::duration<double>(b - a).count(); }

// What one step of the simulated loop spends: waiting for its batches, computing, and a save.
struct Costs {
  double wait = 0, compute = 0, save = 0;
};

struct Stopped {
  double saved_at = 0;  // when the save made on stopping ended, from the policy's start
  int steps = 0;
};

// The session's loop in miniature: the batches first, then the decision, then the step; the first
// save of the session (after the first step, as a save cadence would) is waited for whole, as is
// the save made on stopping.
Stopped run_until_stopped(FaultEnv& env, const Costs& c, double setup_seconds) {
  const auto start = env.now;
  StopPolicy policy(env, DeadlineSpec::parse("40s"));
  env.advance(setup_seconds);  // data and model, before the loop
  policy.restart_step_clock();
  Stopped out;
  for (;;) {
    env.advance(c.wait);
    if (policy.before_step(/*eval_due=*/false)) {
      env.advance(c.save);
      policy.save_took(c.save, /*waited=*/true);
      out.saved_at = since(start, env.now);
      return out;
    }
    env.advance(c.compute);
    policy.step_ended(env.now);
    if (++out.steps == 1) {
      policy.check_fits_first_step();
      EXPECT_TRUE(policy.wants_whole_save());
      env.advance(c.save);
      policy.save_took(c.save, /*waited=*/true);
    }
  }
}

TEST(StopPolicy, ALoaderBoundLoopStopsSavedBeforeItsDeadlineAtEveryPhase) {
  // 6 s waiting for each batch (one worker decoding photos), 0.5 s computing: a step's computation
  // alone would let the last step allowed end up to ~5 s after the deadline.
  const Costs c{6.0, 0.5, 1.0};
  for (double setup = 0; setup < 6.5; setup += 0.25) {
    FaultEnv env;
    const Stopped s = run_until_stopped(env, c, setup);
    EXPECT_LE(s.saved_at, 40.0) << "setup " << setup << " s: saved after the deadline, " << s.steps << " steps";
    // Not early either: one more step (6.5 s), the save and the margin (10% + 1 s) did not fit.
    EXPECT_GE(s.saved_at, 40.0 - 6.5 - 1.0 - Deadline::margin(7.5) - 1e-9) << "setup " << setup << " s";
    EXPECT_GE(s.steps, 3);
  }
}

TEST(StopPolicy, TheDeadlineAndTheTimeBudgetReadOneStepEvalAndSaveCost) {
  FaultEnv env;
  StopPolicy policy(env, DeadlineSpec::parse("1h"));
  TimeBudget::Options o;
  o.budget = 3600;
  o.steps_per_epoch = 100;
  TimeBudget& plan = policy.plan_for(o);
  policy.restart_step_clock();
  for (int i = 0; i < 4; ++i) {
    env.advance(2.0);  // the batch
    env.advance(0.5);  // the step
    EXPECT_DOUBLE_EQ(policy.step_ended(env.now), 2.5);
  }
  EXPECT_DOUBLE_EQ(policy.deadline()->step_seconds(), 2.5);
  EXPECT_DOUBLE_EQ(plan.costs().step, 2.5);  // (the plan leaves the session's first step out)
  policy.eval_took(3.0);
  EXPECT_DOUBLE_EQ(policy.deadline()->eval_seconds(), 3.0);
  EXPECT_DOUBLE_EQ(plan.costs().eval, 3.0);
  // A waited save sets what a save costs; a background one's snapshot never counts for less.
  policy.save_took(4.0, /*waited=*/true);
  EXPECT_FALSE(policy.wants_whole_save());
  policy.save_took(0.25, /*waited=*/false);
  EXPECT_DOUBLE_EQ(policy.deadline()->save_seconds(), 4.0);
  EXPECT_DOUBLE_EQ(plan.costs().save, 4.0);
}

TEST(StopPolicy, TheFirstStepAfterARestartCountsFromTheRestartNotFromTheEvaluation) {
  FaultEnv env;
  StopPolicy policy(env, std::nullopt);
  policy.restart_step_clock();
  env.advance(1.0);
  policy.step_ended(env.now);
  env.advance(30.0);  // an evaluation and a save, timed on their own
  policy.eval_took(30.0);
  policy.restart_step_clock();
  env.advance(1.5);  // the next epoch's loader starts, its first batch, the step
  EXPECT_DOUBLE_EQ(policy.step_ended(env.now), 1.5);
  EXPECT_FALSE(policy.before_step(true)) << "no deadline, no signal";
}

TEST(StopPolicy, ASignalStopsBeforeTheDeadlineIsAsked) {
  FaultEnv env;
  StopPolicy policy(env, DeadlineSpec::parse("1h"));
  EXPECT_FALSE(policy.before_step(false));
  policy.signals().simulate(SIGTERM);
  auto why = policy.before_step(false);
  ASSERT_TRUE(why);
  EXPECT_EQ(why->kind, StopReason::Kind::signal);
  EXPECT_EQ(why->text, "signal SIGTERM");
}

TEST(StopPolicy, ADeadlineThatCannotHoldTheFirstStepAndASaveIsABudgetError) {
  FaultEnv env;
  StopPolicy policy(env, DeadlineSpec::parse("10s"));
  policy.check_time_left();
  policy.restart_step_clock();
  env.advance(9.0);  // the first batch and step
  policy.step_ended(env.now);
  try {
    policy.check_fits_first_step();
    FAIL() << "a 9 s step fit a 10 s deadline with its margin";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::budget);
  }
}

}  // namespace
}  // namespace frugal
