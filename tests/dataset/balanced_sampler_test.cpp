// --sampler balanced (dataset/sampler.h's weighted_epoch_order): draws with replacement in the
// proportions of the weights (torch's WeightedRandomSampler with replacement=True), the same for
// the same (seed, epoch), never a sample of weight 0; EpochPlan takes them when given.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "frugal/dataset/sampler.h"
#include "frugal/util/error.h"

namespace frugal {
namespace {

TEST(BalancedSampler, ClassesComeAlikeFromImbalancedData) {
  // 9,000 / 900 / 100 images of three classes, each weighted 1 / its class's count.
  std::vector<int> fixed;
  const int counts[3] = {9000, 900, 100};
  for (int c = 0; c < 3; ++c) fixed.insert(fixed.end(), counts[c], c);
  std::vector<double> w;
  for (int c : fixed) w.push_back(1.0 / counts[c]);
  const auto order = weighted_epoch_order(fixed.size(), 7, 0, w);
  ASSERT_EQ(order.size(), fixed.size());
  int seen[3] = {0, 0, 0};
  for (std::size_t i : order) ++seen[fixed[i]];
  for (int c = 0; c < 3; ++c) EXPECT_NEAR(seen[c] / 10000.0, 1.0 / 3.0, 0.02) << "class " << c;  // ~5 sigma
  EXPECT_EQ(order, weighted_epoch_order(fixed.size(), 7, 0, w));  // (seed, epoch): the same draws
  EXPECT_NE(order, weighted_epoch_order(fixed.size(), 7, 1, w));
  EXPECT_NE(order, weighted_epoch_order(fixed.size(), 8, 0, w));
}

TEST(BalancedSampler, ZeroWeightsAreNeverDrawnAndBadWeightsRefused) {
  std::vector<double> w(1000, 1.0);
  for (std::size_t i = 0; i < w.size(); i += 2) w[i] = 0;
  for (std::size_t i : weighted_epoch_order(w.size(), 1, 3, w)) EXPECT_EQ(i % 2, 1u) << i;
  EXPECT_THROW(weighted_epoch_order(3, 1, 0, {1, -1, 1}), Error);
  EXPECT_THROW(weighted_epoch_order(3, 1, 0, {0, 0, 0}), Error);
  EXPECT_THROW(weighted_epoch_order(3, 1, 0, {1, 1}), Error);
}

TEST(BalancedSampler, EpochPlanUsesTheWeightsAndResumesByPosition) {
  LoaderOptions o;
  o.batch_size = 4;
  o.seed = 3;
  o.sample_weights.assign(40, 1.0);
  o.sample_weights[5] = 100;  // one sample drawn most of the time
  const EpochPlan whole = EpochPlan::make(40, o, 2, 0, "test");
  EXPECT_EQ(whole.order, weighted_epoch_order(40, 3, 2, o.sample_weights));
  EXPECT_GT(std::count(whole.order.begin(), whole.order.end(), 5u), 20);
  const EpochPlan resumed = EpochPlan::make(40, o, 2, 12, "test");
  EXPECT_EQ(resumed.samples(0), whole.samples(3));  // position 12: batch 3 of the epoch
}

}  // namespace
}  // namespace frugal
