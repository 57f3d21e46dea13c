// The training curve's points (frugal/training/train_series.h): how often, and what each holds.
#include <gtest/gtest.h>

#include <cmath>

#include "budget/fault_env.h"
#include "frugal/training/train_series.h"

using namespace frugal;
using frugal::testing::FaultEnv;

namespace {

TEST(TrainSeries, EveryStepBelow200StepsAndAtLeast100PointsAbove) {
  EXPECT_EQ(TrainSeries::every(7), 1);
  EXPECT_EQ(TrainSeries::every(199), 1);
  EXPECT_EQ(TrainSeries::every(200), 2);
  EXPECT_EQ(TrainSeries::every(98), 1);  // issue 44: 4 points of 98 steps before
  EXPECT_EQ(TrainSeries::every(0), 1);   // a time budget not yet planned
  for (std::int64_t total : {7, 98, 150, 200, 999, 1000, 12345, 1000000}) {
    FaultEnv env;
    TrainSeries s(env);
    std::int64_t points = 0;
    for (std::int64_t step = 1; step <= total; ++step)
      if (s.step(step, total, 1.0, 8, 0.1, nullptr, -1, env.now, env.now)) ++points;
    EXPECT_GE(points, std::min<std::int64_t>(total, 100)) << total;
    EXPECT_LE(points, 200) << total;
  }
}

TEST(TrainSeries, APointHoldsTheMeanLossImagesPerSecondLrScaleAndPlan) {
  FaultEnv env;
  env.wall = Env::WallTime{} + std::chrono::seconds(1700000000);
  TrainSeries s(env);
  int scale_reads = 0;
  auto scale = [&] {
    ++scale_reads;
    return 1024.0;
  };
  std::optional<TrainPoint> p;
  for (std::int64_t step = 1; step <= 4; ++step) {
    const auto started = env.now;
    env.advance(0.5);
    p = s.step(step, 400, step == 3 ? NAN : static_cast<double>(step), 32, 0.01 * step, scale, 400, started, env.now);
    if (step < 4) EXPECT_FALSE(p) << step;
  }
  ASSERT_TRUE(p);
  EXPECT_EQ(scale_reads, 1) << "the scale is read for a point only (it waits for the GPU)";
  EXPECT_EQ(p->step, 4);
  EXPECT_DOUBLE_EQ(p->loss, (1.0 + 2.0 + 4.0) / 3.0) << "a NaN step is left out of the mean";
  EXPECT_DOUBLE_EQ(p->images_per_s, 4 * 32 / 2.0);
  EXPECT_DOUBLE_EQ(p->lr, 0.04);
  EXPECT_EQ(p->loss_scale, 1024.0);
  EXPECT_EQ(p->planned_steps, 400);
  EXPECT_EQ(p->time, 1700000000.0);
  const auto tags = p->tags();
  ASSERT_EQ(tags.size(), 5u);
  EXPECT_EQ(tags[0].first, "train/loss");
  EXPECT_EQ(tags[4].first, "budget/planned_steps");
}

TEST(TrainSeries, PointsAsMetricsJsonlHoldsThem) {
  TrainPoint a, b;
  a.step = 1, a.loss = 0.5, a.lr = 0.1, a.images_per_s = 100, a.time = 10;
  b.step = 2, b.loss = NAN, b.planned_steps = 9, b.time = 11;
  EXPECT_EQ(a.tags().size(), 4u) << "no plan, no budget/planned_steps";
  const auto j = points_json({a, b});
  EXPECT_EQ(j["step"], nlohmann::json({1, 2}));
  EXPECT_EQ(j["train/loss"], nlohmann::json({0.5, nullptr}));
  EXPECT_EQ(j["train/loss_scale"], nlohmann::json({1.0, 1.0}));
  EXPECT_EQ(j["budget/planned_steps"], nlohmann::json({nullptr, 9}));
  EXPECT_EQ(j["time"], nlohmann::json({10.0, 11.0}));
}

}  // namespace
