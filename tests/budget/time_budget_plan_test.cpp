// Training to a time budget: the planner and the revisable schedule on a fake clock (no sleeping).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "frugal/util/error.h"
#include "frugal/budget/time_budget.h"

using namespace frugal;

namespace {

// One session of a simulated run: what its machine costs, and its --deadline (0: none).
struct Session {
  double startup = 10, step = 0.5, eval = 5, save = 1, deadline = 0;
  bool known_costs = false;  // the first plan knows the evaluation and save costs (else: a rough guess)
  int fast_steps = 0;        // the session's first steps cost fast_step (batches decoded in advance)
  double fast_step = 0;
  double slow_from = 0, slow_step = 0;  // from this session second on (when > 0), steps cost slow_step
};

struct Outcome {
  std::vector<double> lr;             // the learning rate of each step that counts (redone steps replace)
  std::vector<nlohmann::json> plans;  // the plan records, in order
  std::vector<std::int64_t> revised_at;
  double spent = 0;        // budget used when the run ended
  double session_sum = 0;  // seconds of all sessions, counted by the simulator itself
  std::int64_t steps = 0, total = 0;
  bool finished = false;
};

constexpr double kBase = 1.0, kWarmup = 0.02;

// Drives TimeBudget as the trainer does: a session measures, plans, steps, evaluates and saves
// after each epoch (and at the end), and a deadline stops it saved. The checkpoint is the JSON.
Outcome simulate(double budget, std::int64_t per_epoch, const std::vector<Session>& sessions) {
  Outcome out;
  nlohmann::json checkpoint;
  std::int64_t saved_steps = 0;
  for (const Session& s : sessions) {
    TimeBudget tb({budget, per_epoch});
    if (s.known_costs)
      tb.set_prior_costs({0, s.eval, s.save});
    else
      tb.set_prior_costs({0, s.eval / 2, 0});  // a rough guess, corrected once measured
    if (!checkpoint.is_null()) tb.resume(checkpoint);
    std::int64_t done = saved_steps;
    out.lr.resize(static_cast<std::size_t>(done));
    double t = s.startup;
    int session_steps = 0;
    bool cut = false;
    auto note_plan = [&](const nlohmann::json& r) {
      if (r.is_null()) return;
      out.plans.push_back(r);
      out.revised_at.push_back(done);
    };
    for (;;) {
      note_plan(tb.update(done, t));
      if (done >= tb.total_steps()) {
        out.finished = true;
        break;
      }
      const bool epoch_end = (done + 1) % per_epoch == 0 || done + 1 == tb.total_steps();
      if (s.deadline > 0 && t + s.step + s.save + (epoch_end ? s.eval : 0) > s.deadline) {
        checkpoint = tb.to_json(t);
        saved_steps = done;
        t += s.save;
        cut = true;
        break;
      }
      out.lr.push_back(tb.lr(kBase, done, kWarmup));
      const double cost = session_steps++ < s.fast_steps        ? s.fast_step
                          : s.slow_from > 0 && t >= s.slow_from ? s.slow_step
                                                                : s.step;
      t += cost;
      tb.record_step(cost);
      ++done;
      if (done % per_epoch == 0 || done == tb.total_steps()) {
        t += s.eval;
        tb.record_eval(s.eval);
        checkpoint = tb.to_json(t);
        saved_steps = done;
        t += s.save;
        tb.record_save(s.save);
        note_plan(tb.update(done, t, /*after_eval=*/true));
      }
    }
    out.session_sum += t;
    out.spent = tb.spent(t);
    out.steps = done;
    out.total = tb.total_steps();
    if (!cut) break;
  }
  return out;
}

double largest_jump(const std::vector<double>& lr, std::size_t from, std::size_t to) {
  double m = 0;
  for (std::size_t i = from + 1; i < to && i < lr.size(); ++i) m = std::max(m, std::abs(lr[i] - lr[i - 1]));
  return m;
}

}  // namespace

TEST(TimeBudgetPlan, CountsAnEvaluationAndASaveAtEachEpochEndAndAtTheEnd) {
  PlanInputs in;
  in.costs = {0.5, 30, 10};
  in.steps_per_epoch = 100;
  in.steps_done = 50;
  // Steps 50..249: epoch ends at 100 and 200, and the run's end at 250.
  EXPECT_DOUBLE_EQ(seconds_to_finish(in, 250), 200 * 0.5 + 3 * 40);
  // Ending on an epoch end pays once for it.
  EXPECT_DOUBLE_EQ(seconds_to_finish(in, 200), 150 * 0.5 + 2 * 40);
  EXPECT_DOUBLE_EQ(seconds_to_finish(in, 50), 0);
}

TEST(TimeBudgetPlan, EvaluationAndSaveCostsShortenThePlan) {
  PlanInputs in;
  in.budget = 1000;
  in.costs = {0.5, 0, 0};
  in.steps_per_epoch = 100;
  EXPECT_EQ(steps_that_fit(in), 2000);
  in.costs = {0.5, 30, 10};
  // An epoch costs 50 s of steps + 40 s: 11 of them take 990 s; one step more brings a 12th
  // evaluation and save (1030.5 s).
  EXPECT_EQ(steps_that_fit(in), 1100);
  EXPECT_EQ(plan_run(in).total_steps, 1100);
  EXPECT_DOUBLE_EQ(plan_run(in).end_seconds, 990);
}

TEST(TimeBudgetPlan, ABudgetShorterThanOneEpochIsABudgetErrorSayingWhatFits) {
  PlanInputs in;
  in.budget = 60;
  in.spent = 5;
  in.costs = {0.5, 5, 1};
  in.steps_per_epoch = 200;  // one epoch: 100 s + 6 s, after 5 s spent
  try {
    plan_run(in);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::budget);
    EXPECT_NE(std::string(e.what()).find("at least 1m51s"), std::string::npos) << e.what();
  }
  in.budget = 111;
  EXPECT_EQ(plan_run(in).total_steps, 200);
}

TEST(TimeBudgetPlan, SteadySpeedEndsWithinOneStepOfTheBudget) {
  const double budget = 3600;
  Outcome o = simulate(budget, 200, {Session{}});
  ASSERT_TRUE(o.finished);
  EXPECT_EQ(o.steps, o.total);
  EXPECT_LE(o.spent, budget);
  // One more step would not have fitted (with the evaluation a new epoch would bring).
  const double next = 0.5 + (o.total % 200 == 0 ? 6 : 0);
  EXPECT_GT(o.spent + next, budget);
  EXPECT_NEAR(o.spent, o.session_sum, 1e-9);
  EXPECT_LT(o.lr.back(), 1e-3 * kBase);  // annealed
  EXPECT_GT(o.lr.front(), 0);
}

TEST(TimeBudgetPlan, ASlowerMachineInSessionTwoReplansContinuouslyAndStillEndsAnnealed) {
  const double budget = 4000;
  Session fast, slow;
  fast.deadline = 1200;
  slow.step = 0.8;
  Outcome o = simulate(budget, 200, {fast, slow});
  ASSERT_TRUE(o.finished);
  EXPECT_LE(o.spent, budget + 0.8);
  EXPECT_GT(o.spent, budget - 0.05 * (budget - 1200));
  // Session 2 re-planned on its own speed, shorter than session 1's plan.
  std::size_t speed = 0;
  while (speed < o.plans.size() && o.plans[speed]["time_budget"]["event"] != "speed") ++speed;
  ASSERT_LT(speed, o.plans.size());
  ASSERT_GT(speed, 0u);
  EXPECT_LT(o.plans[speed]["time_budget"]["total_steps"].get<std::int64_t>(),
            o.plans[speed - 1]["time_budget"]["total_steps"].get<std::int64_t>());
  // Continuous at the change: the step across it moves the learning rate no more than the steps
  // beside it (a schedule restarted on the new total would jump).
  const auto c = static_cast<std::size_t>(o.revised_at[speed]);
  const double across = std::abs(o.lr[c] - o.lr[c - 1]);
  const double beside = std::max(std::abs(o.lr[c - 1] - o.lr[c - 2]), std::abs(o.lr[c + 1] - o.lr[c]));
  EXPECT_LE(across, 1.5 * beside + 1e-12);
  const std::int64_t new_total = o.plans[speed]["time_budget"]["total_steps"];
  const double restarted =
      lr_at_progress(kBase, (static_cast<double>(c) + 0.5) / static_cast<double>(new_total), kWarmup);
  EXPECT_GT(std::abs(restarted - o.lr[c - 1]), 10 * beside);  // the check above can fail
  EXPECT_LE(largest_jump(o.lr, 0, o.lr.size()), 2 * kBase / (kWarmup * static_cast<double>(o.total)));
  EXPECT_LT(o.lr.back(), 1e-3 * kBase);
}

// Seen on Fashion-MNIST (2 cores, --time-budget 2m): the first steps ran at twice the steady speed,
// the first plan counted 1.9 epochs, and the one check at the epoch's end found half the progress
// travelled and no time left to anneal. Checked every 2% of the steps left, the plan follows.
TEST(TimeBudgetPlan, AFastStartIsCorrectedWithinTheEpochAndTheRunStillEndsAnnealed) {
  const double budget = 120;
  Session s;
  s.startup = 1.3;
  s.step = 0.26;
  s.eval = 4;
  s.save = 0.01;
  s.fast_steps = 6;
  s.fast_step = 0.12;
  s.known_costs = true;  // the plan ends within the first epoch: no evaluation is timed before the last
  Outcome o = simulate(budget, 469, {s});
  ASSERT_TRUE(o.finished);
  ASSERT_GE(o.plans.size(), 2u);
  EXPECT_EQ(o.plans[1]["time_budget"]["event"], "speed");
  EXPECT_LT(o.revised_at[1], 469 / 4);  // found early in the first epoch, not at its end
  EXPECT_LT(o.plans.back()["time_budget"]["total_steps"].get<std::int64_t>(),
            o.plans[0]["time_budget"]["total_steps"].get<std::int64_t>());
  EXPECT_LE(o.spent, budget + s.step);
  EXPECT_GT(o.spent, budget - 0.05 * budget);
  EXPECT_LT(o.lr.back(), 1e-3 * kBase);  // annealed
  EXPECT_LE(largest_jump(o.lr, 0, o.lr.size()), 2 * kBase / (kWarmup * static_cast<double>(o.total)));
}

// Seen in CI (cli.notebook_guide, 40 s budget, 7 steps an epoch, tests running beside it): steps
// slowed near the end and the run ended 0.72 s (2 steps) over its budget, the plan being checked
// only every 5 steps and off by a step before it was revised. In the budget's last stretch (its
// last 2%, at least 5 s: the step-time average's window) the plan is checked before each step.
TEST(TimeBudgetPlan, StepsSlowingInTheLastSecondsStillEndWithinAStepOfTheBudget) {
  const double budget = 40;
  // Before: up to 41.3 s (24 of these 120 over by more than a step); now at most 40.07 s.
  for (double slow_from = 30; slow_from < 40; slow_from += 0.25) {
    for (double slow_step : {0.3, 0.36, 0.5}) {
      Session s;
      s.startup = 1;
      s.step = 0.25;
      s.eval = 0.017;
      s.save = 0.02;
      s.known_costs = true;
      s.slow_from = slow_from;
      s.slow_step = slow_step;
      Outcome o = simulate(budget, 7, {s});
      ASSERT_TRUE(o.finished);
      EXPECT_LE(o.spent, budget + s.slow_step) << "slowed from " << slow_from << " s to " << slow_step;
      EXPECT_GT(o.spent, budget - 1.0) << "slowed from " << slow_from << " s";
      EXPECT_LT(o.lr.back(), 1e-2 * kBase);
    }
  }
}

TEST(TimeBudgetPlan, DeadlinesCutSessionsAndTheirTimeCountsAgainstTheBudget) {
  const double budget = 3000;
  Session s;
  s.deadline = 1000;
  Outcome o = simulate(budget, 200, {s, s, s, s, s});
  ASSERT_TRUE(o.finished);
  EXPECT_LE(o.spent, budget);
  EXPECT_NEAR(o.spent, o.session_sum, 1e-9);  // every session's time, the cut ones included
  // Three start-ups were paid for: fewer steps than one session of 3000 s would plan.
  Outcome one = simulate(budget, 200, {Session{}});
  EXPECT_LT(o.total, one.total);
  EXPECT_GT(o.total, one.total - 2 * 20 / 0.5 - 0.05 * one.total);
  EXPECT_LT(o.lr.back(), 1e-3 * kBase);
}

TEST(TimeBudgetPlan, AResumeAtTheSameSpeedContinuesTheSavedCurveBitwise) {
  Session one;
  one.known_costs = true;
  Session cut = one;
  cut.deadline = 1200;
  Outcome whole = simulate(4000, 200, {one});
  Outcome resumed = simulate(4000, 200, {cut, one});
  ASSERT_TRUE(resumed.finished);
  // The schedule comes back from the checkpoint exactly, and the second session's own timing is
  // within the slack: the curve is the uninterrupted run's, to the bit, until the time the second
  // start-up cost (10 s + the cut's save) is taken back near the end by a small revision.
  ASSERT_EQ(whole.plans.size(), 1u);
  ASSERT_EQ(resumed.plans.size(), 2u);
  EXPECT_EQ(resumed.plans[0], whole.plans[0]);
  const auto first_change = static_cast<std::size_t>(resumed.revised_at[1]);
  EXPECT_GT(first_change, resumed.lr.size() * 9 / 10);
  ASSERT_LE(first_change, whole.lr.size());
  EXPECT_EQ(0, std::memcmp(whole.lr.data(), resumed.lr.data(), first_change * sizeof(double)));
  EXPECT_LT(resumed.total, whole.total);
  EXPECT_GT(resumed.total, whole.total - 2 * 11 / 0.5);
  EXPECT_LE(resumed.spent, 4000);
  EXPECT_LT(resumed.lr.back(), 1e-3 * kBase);
}

TEST(TimeBudgetPlan, AChangedBudgetOnResumeReplansFromWhereTheRunIs) {
  TimeBudget first({1000, 100});
  for (int i = 0; i < 7; ++i) first.record_step(0.1);
  ASSERT_FALSE(first.update(7, 2).is_null());
  const auto saved = first.to_json(50);
  const double lr_before = first.lr(kBase, 299, kWarmup);
  TimeBudget longer({2000, 100});
  longer.resume(saved);
  auto r = longer.update(300, 1);
  ASSERT_FALSE(r.is_null());
  EXPECT_NE(r["time_budget"]["event"].get<std::string>().find("budget changed"), std::string::npos);
  EXPECT_GT(longer.total_steps(), first.total_steps());
  EXPECT_NEAR(longer.lr(kBase, 300, kWarmup), lr_before, 2 * std::abs(lr_before - first.lr(kBase, 298, kWarmup)));
  EXPECT_TRUE(longer.update(301, 2).is_null());  // once
}

TEST(TimeBudgetPlan, ABudgetSpentEndsTheRunWhereItIs) {
  TimeBudget first({1000, 100});
  for (int i = 0; i < 7; ++i) first.record_step(0.1);
  first.update(7, 2);
  TimeBudget shorter({60, 100});
  shorter.resume(first.to_json(100));
  shorter.update(400, 1);
  EXPECT_EQ(shorter.total_steps(), 400);
}

TEST(RevisableSchedule, FreshScheduleWarmsUpThenAnnealsToTheMinimum) {
  Schedule s;
  s.total_steps = 1000;
  EXPECT_NEAR(s.lr(1.0, 0, 0.1), 0.5 / 100, 1e-12);
  EXPECT_NEAR(s.lr(1.0, 99, 0.1), 0.995, 1e-12);
  EXPECT_NEAR(s.lr(1.0, 100, 0.1), 1.0, 1e-5);
  EXPECT_LT(s.lr(1.0, 999, 0.1, 0.1), 0.1 + 1e-5);
  EXPECT_GT(s.lr(1.0, 999, 0.1, 0.1), 0.1);
  EXPECT_DOUBLE_EQ(lr_at_progress(2.0, 1.0, 0.1, 0.25), 0.5);
}

TEST(RevisableSchedule, RevisingKeepsTheProgressReachedAndStillEndsAtTheMinimum) {
  Schedule s;
  s.total_steps = 1000;
  for (std::int64_t new_total : {600, 3000}) {
    Schedule r = s.revised(400, new_total);
    EXPECT_EQ(r.revision, 1);
    EXPECT_DOUBLE_EQ(r.progress(400), s.progress(400));
    EXPECT_DOUBLE_EQ(r.progress(static_cast<double>(new_total)), 1.0);
    EXPECT_LT(r.lr(1.0, new_total - 1, 0.02), 1e-4);
  }
  Schedule none = s.revised(400, 100);  // nothing left: the run ends at 400
  EXPECT_EQ(none.total_steps, 400);
}

TEST(RevisableSchedule, JsonRoundTripIsBitwise) {
  Schedule s;
  s.total_steps = 77777;
  s = s.revised(123, 99991).revised(4567, 55555);
  Schedule back = Schedule::from_json(nlohmann::json::parse(s.to_json().dump()));
  EXPECT_EQ(back.anchor_step, s.anchor_step);
  EXPECT_EQ(back.total_steps, s.total_steps);
  EXPECT_EQ(back.revision, 2);
  EXPECT_EQ(0, std::memcmp(&back.anchor_progress, &s.anchor_progress, sizeof(double)));
}

TEST(RevisableSchedule, MistypedOrOutOfRangeJsonIsInvalid) {
  for (const char* text : {R"({"anchor_step":1,"anchor_progress":0.1,"total_steps":0,"revision":0})",
                           R"({"anchor_step":1,"anchor_progress":1.5,"total_steps":9,"revision":0})",
                           R"({"anchor_step":"1","anchor_progress":0.1,"total_steps":9,"revision":0})",
                           R"({"anchor_progress":0.1,"total_steps":9,"revision":0})", "[]"}) {
    try {
      Schedule::from_json(nlohmann::json::parse(text));
      ADD_FAILURE() << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid) << text;
    }
  }
}

TEST(CostMeter, OneSlowSampleMovesTheEstimateLittle) {
  CostMeter m(4, 0.05);
  m.set_prior(9);
  EXPECT_EQ(m.value(), 9);
  for (int i = 0; i < 10; ++i) m.add(1.0);
  EXPECT_DOUBLE_EQ(m.value(), 1.0);
  m.add(11.0);
  EXPECT_NEAR(m.value(), 1.5, 1e-12);
}

TEST(CostMeter, AWindowInSecondsAveragesShortAndLongStepsOverTheSameTime) {
  // After `window` seconds of a new speed, the estimate has moved 1 - 1/e of the way, whether the
  // steps take 2 s or 20 ms.
  CostMeter slow(1);
  slow.set_window(10);
  slow.add(1.0);
  for (int i = 0; i < 5; ++i) slow.add(2.0);  // 10 s
  EXPECT_NEAR(slow.value(), 2.0 - std::exp(-1.0), 1e-12);
  CostMeter fast(1);
  fast.set_window(10);
  fast.add(0.01);
  for (int i = 0; i < 500; ++i) fast.add(0.02);  // 10 s
  EXPECT_NEAR(fast.value(), 0.02 - 0.01 * std::exp(-1.0), 1e-12);
}

TEST(TimeBudgetPlan, AnEpochShorterThanTheTimedStepsIsPlannedAtItsEnd) {
  TimeBudget tb({600, 3});
  tb.record_step(1.0);  // not timed: the session's first
  EXPECT_TRUE(tb.update(1, 2).is_null());
  tb.record_step(0.1);
  tb.record_step(0.1);
  EXPECT_TRUE(tb.update(3, 3).is_null());  // 2 timed, 5 wanted
  tb.record_eval(0.2);
  auto r = tb.update(3, 4, /*after_eval=*/true);
  ASSERT_FALSE(r.is_null());
  EXPECT_EQ(r["time_budget"]["event"], "plan");
  EXPECT_TRUE(tb.planned());
}
