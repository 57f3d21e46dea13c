// Horizon: where a run of epochs and a run of a time budget end, the learning rate at each step
// (an --extend tail first), the epochs the epoch line shows, the plan's updates and what a
// checkpoint records of them.
#include "train/horizon.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace frugal {
namespace {

struct Told {
  std::vector<std::string> lines;
  std::vector<nlohmann::json> records;
  Horizon::Tell tell() {
    return [this](const std::string& line, const nlohmann::json& record) {
      if (!line.empty()) lines.push_back(line);
      if (!record.is_null()) records.push_back(record);
    };
  }
};

Horizon::Options epochs_options(std::int64_t epochs) {
  Horizon::Options o;
  o.steps_per_epoch = 10;
  o.epochs = epochs;
  o.lr = 0.1;
  o.warmup_fraction = 0.1;
  o.images_per_step = 32;
  return o;
}

TEST(Horizon, ARunOfEpochsEndsAfterItsEpochsOnACosine) {
  Told told;
  Horizon h(
      epochs_options(3), {}, [] { return 0.0; }, told.tell());
  EXPECT_TRUE(h.planned());
  EXPECT_EQ(h.total_steps(), 30);
  EXPECT_TRUE(h.more(25, 2));
  EXPECT_FALSE(h.more(30, 3));
  EXPECT_TRUE(h.work_left(0, 0));
  EXPECT_FALSE(h.work_left(30, 3));
  EXPECT_FALSE(h.ended(30));  // the last epoch ends it, not a step count
  EXPECT_FALSE(h.last(29));
  for (std::int64_t step : {0, 1, 2, 3, 15, 29}) EXPECT_DOUBLE_EQ(h.lr(step), cosine_lr(0.1, step, 3, 30));
  EXPECT_EQ(h.epochs_to_show(0, 5), 3);
  EXPECT_EQ(h.steps_said(), "30 steps");
  EXPECT_FALSE(h.update(12, true));  // nothing to re-plan
  EXPECT_TRUE(told.lines.empty());
  EXPECT_TRUE(told.records.empty());
  RunState s;
  h.save_to(s);
  EXPECT_EQ(s.total_steps, 30);
  EXPECT_TRUE(s.time_budget.is_null());
  EXPECT_TRUE(s.tail.is_null());
}

TEST(Horizon, AnExtensionsTailSetsTheLearningRate) {
  Told told;
  Horizon h(
      epochs_options(5), {}, [] { return 0.0; }, told.tell());
  h.start_tail(30, 0.0005, 0.1, 0.1);  // the schedule had ended: a tenth of the peak
  ScheduleTail t;
  t.start = 30, t.from_lr = 0.0005, t.peak = 0.01, t.warmup = 2;
  for (std::int64_t step : {30, 31, 32, 40, 49}) EXPECT_DOUBLE_EQ(h.lr(step), t.lr(step, 50));
  ASSERT_EQ(told.lines.size(), 1u);
  EXPECT_NE(told.lines[0].find("extending the run from step 30 to 50 (5 epochs)"), std::string::npos) << told.lines[0];
  RunState s;
  h.save_to(s);
  EXPECT_EQ(s.tail, t.to_json());

  // A resumed run continues the tail its checkpoint holds.
  Horizon::Saved saved;
  saved.tail = t;
  Horizon resumed(
      epochs_options(5), saved, [] { return 0.0; }, told.tell());
  EXPECT_DOUBLE_EQ(resumed.lr(41), t.lr(41, 50));
}

TimeBudget::Options budget_options() {
  TimeBudget::Options o;
  o.budget = 1000;
  o.steps_per_epoch = 10;
  o.measure_steps = 5;
  return o;
}

TEST(Horizon, ARunOfATimeBudgetEndsWhereItsPlanEnds) {
  Told told;
  double seconds = 0;
  TimeBudget plan(budget_options());
  Horizon h(
      epochs_options(0), {}, [&] { return seconds; }, told.tell());
  h.follow_budget(plan, {1000, "1000s"}, 0, false);
  EXPECT_FALSE(h.planned());
  EXPECT_TRUE(h.work_left(0, 0));
  EXPECT_EQ(h.steps_said(), "steps to fit the time budget (planned once the first are timed), each");
  EXPECT_TRUE(h.update(0, false));  // nothing timed yet: no plan
  EXPECT_TRUE(told.records.empty());
  for (int i = 0; i < 6; ++i) plan.record_step(1.0), seconds += 1.0;
  EXPECT_TRUE(h.update(6, false));
  ASSERT_TRUE(h.planned());
  ASSERT_EQ(told.records.size(), 1u);
  ASSERT_EQ(told.lines.size(), 1u);
  EXPECT_EQ(told.records[0]["time_budget"]["summary"], told.lines[0]);
  const std::int64_t total = h.total_steps();
  EXPECT_EQ(total, plan.total_steps());
  EXPECT_GT(total, 100);
  EXPECT_LE(total, 1000);                // 994 s left at 1 s a step, nothing else timed
  EXPECT_TRUE(h.more(total - 1, 1000));  // the steps decide, not the epochs
  EXPECT_FALSE(h.more(total, 0));
  EXPECT_FALSE(h.ended(total - 1));
  EXPECT_TRUE(h.ended(total));
  EXPECT_FALSE(h.last(total - 2));
  EXPECT_TRUE(h.last(total - 1));
  for (std::int64_t step : {std::int64_t{6}, total / 2, total - 1})
    EXPECT_DOUBLE_EQ(h.lr(step), plan.lr(0.1, step, 0.1));
  // This epoch and those the steps left need.
  EXPECT_EQ(h.epochs_to_show(0, 6), 1 + (total - 6 + 9) / 10);
  EXPECT_EQ(h.epochs_to_show(4, total), 5);
  h.agree(total - 3);  // rank 0's plan
  EXPECT_TRUE(h.ended(total - 3));
  RunState s;
  h.save_to(s);
  EXPECT_EQ(s.total_steps, total - 3);
  EXPECT_EQ(s.time_budget, plan.to_json(seconds));
}

TEST(Horizon, AnExtendedBudgetRunFollowsItsTail) {
  Told told;
  TimeBudget plan(budget_options());
  Horizon h(
      epochs_options(0), {}, [] { return 0.0; }, told.tell());
  h.follow_budget(plan, {1000, "1000s"}, 0, false);
  h.agree(200);
  h.start_tail(100, 0.05, 0.1, 0.2);  // {lr} given: the new peak
  ScheduleTail t;
  t.start = 100, t.from_lr = 0.05, t.peak = 0.2, t.warmup = 10;
  for (std::int64_t step : {100, 105, 150, 199}) EXPECT_DOUBLE_EQ(h.lr(step), t.lr(step, 200));
  ASSERT_EQ(told.lines.size(), 1u);
  EXPECT_NE(told.lines[0].find("(the time budget 1000s, re-planned as it goes)"), std::string::npos) << told.lines[0];
}

}  // namespace
}  // namespace frugal
