// Multi-label evaluation: the histogram AP against an exact AP computed here from sorted scores
// (scikit-learn's definition; tests/cli/train_multilabel.sh checks it against scikit-learn itself),
// the tuned threshold, the counts at thresholds, the loss, and targets through the Loader.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "frugal/train/evaluate.h"
#include "frugal/train/step.h"
#include "frugal/training/train_log.h"
#include "train/multi_label.h"

using namespace frugal;

namespace {

// Average precision from scores sorted high to low, ties taken together (sklearn's step sum).
double exact_ap(std::vector<std::pair<double, bool>> s) {
  std::sort(s.begin(), s.end(), [](auto& a, auto& b) { return a.first > b.first; });
  double positives = 0;
  for (auto& [v, y] : s) positives += y;
  double ap = 0, tp = 0, fp = 0;
  for (std::size_t i = 0; i < s.size();) {
    double gained = 0;
    std::size_t j = i;
    for (; j < s.size() && s[j].first == s[i].first; ++j) {
      (s[j].second ? tp : fp) += 1;
      gained += s[j].second;
    }
    ap += gained / positives * tp / (tp + fp);
    i = j;
  }
  return ap;
}

TEST(MultiLabel, HistogramApMatchesTheExactOneWhenScoresFallInTheirOwnBins) {
  std::mt19937 rng(3);
  std::normal_distribution<double> noise(0, 2);
  const std::int64_t n = 300;
  auto logits = torch::empty({n, 2});
  auto targets = torch::zeros({n, 2});
  std::vector<std::vector<std::pair<double, bool>>> per(2);
  for (std::int64_t i = 0; i < n; ++i)
    for (int c = 0; c < 2; ++c) {
      const bool y = (i + c) % 3 == 0;
      // Scores on bin centres, so that binning loses nothing but the ties it must keep.
      const double width = 2 * MultiLabelTally::kLogitRange / MultiLabelTally::kBins;
      double v = std::round((noise(rng) + (y ? 1.5 : -1.0)) / width) * width + width / 2;
      logits[i][c] = v;
      targets[i][c] = y ? 1.0 : 0.0;
      per[static_cast<std::size_t>(c)].push_back({v, y});
    }
  MultiLabelTally tally(2, {0.5f}, torch::kCPU);
  tally.add(logits.slice(0, 0, 100), targets.slice(0, 0, 100));  // in pieces, as batches come
  tally.add(logits.slice(0, 100), targets.slice(0, 100));
  EvalResult r;
  r.samples = n;
  tally.fill(r);
  ASSERT_EQ(r.per_class.size(), 2u);
  for (int c = 0; c < 2; ++c) EXPECT_NEAR(r.per_class[c], exact_ap(per[c]), 1e-9) << c;
  EXPECT_NEAR(r.mean_ap, (r.per_class[0] + r.per_class[1]) / 2, 1e-12);
  // Counts at 0.5 (logit 0), against a count made here.
  double tp = 0, fp = 0, fn = 0;
  for (int c = 0; c < 2; ++c)
    for (auto& [v, y] : per[c]) {
      tp += v >= 0 && y;
      fp += v >= 0 && !y;
      fn += v < 0 && y;
    }
  EXPECT_NEAR(r.precision, tp / (tp + fp), 1e-12);
  EXPECT_NEAR(r.recall, tp / (tp + fn), 1e-12);
  EXPECT_NEAR(r.f1, 2 * tp / (2 * tp + fp + fn), 1e-12);
}

TEST(MultiLabel, TheTunedThresholdLiesInTheGapBetweenTheClasses) {
  // Positives at logits 2..3, negatives at -3..-1: every threshold in (-1, 2) gives F1 = 1; the
  // one chosen is the gap's middle (logit 0.5), not its top edge.
  auto logits = torch::tensor({2.0f, 2.5f, 3.0f, -1.0f, -2.0f, -3.0f}).reshape({6, 1});
  auto targets = torch::tensor({1.0f, 1.0f, 1.0f, 0.0f, 0.0f, 0.0f}).reshape({6, 1});
  MultiLabelTally tally(1, {0.9f}, torch::kCPU);
  tally.add(logits, targets);
  EvalResult r;
  r.samples = 6;
  tally.fill(r);
  ASSERT_EQ(r.best_thresholds.size(), 1u);
  const double logit = std::log(r.best_thresholds[0] / (1 - r.best_thresholds[0]));
  EXPECT_NEAR(logit, 0.5, 0.05);
  // At 0.9 (logit 2.2): 2 of the 3 positives found, none wrong.
  EXPECT_NEAR(r.recall, 2.0 / 3.0, 1e-12);
  EXPECT_NEAR(r.precision, 1.0, 1e-12);
  EXPECT_NEAR(r.accuracy, 5.0 / 6.0, 1e-12);  // the image at 2.0 misses its tag
}

TEST(MultiLabel, AClassWithoutPositivesHasNoApAndIsLeftOutOfTheMean) {
  auto logits = torch::tensor({{1.0f, -1.0f}, {-1.0f, 1.0f}});
  auto targets = torch::tensor({{1.0f, 0.0f}, {0.0f, 0.0f}});
  MultiLabelTally tally(2, {0.5f, 0.5f}, torch::kCPU);
  tally.add(logits, targets);
  EvalResult r;
  r.samples = 2;
  tally.fill(r);
  EXPECT_DOUBLE_EQ(r.per_class[0], 1.0);
  EXPECT_TRUE(std::isnan(r.per_class[1]));
  EXPECT_TRUE(std::isnan(r.best_thresholds[1]));
  EXPECT_DOUBLE_EQ(r.mean_ap, 1.0);
  EXPECT_EQ(r.positives[1], 0);
}

TEST(MultiLabel, TheLossIsBinaryCrossEntropyWithSmoothedTargets) {
  auto logits = torch::tensor({{2.0f, -1.0f}, {0.5f, 0.0f}});
  auto targets = torch::tensor({{1.0f, 0.0f}, {0.0f, 1.0f}});
  auto by_hand = [&](double e) {
    auto y = targets * (1 - e) + e / 2;
    auto p = torch::sigmoid(logits);
    return -(y * torch::log(p) + (1 - y) * torch::log(1 - p)).mean().item<double>();
  };
  EXPECT_NEAR(classification_loss(logits, targets, 0.0).item<double>(), by_hand(0.0), 1e-6);
  EXPECT_NEAR(classification_loss(logits, targets, 0.2).item<double>(), by_hand(0.2), 1e-6);
  // Class indices still take cross-entropy.
  auto idx = torch::tensor({0, 1}, torch::kInt64);
  EXPECT_NEAR(classification_loss(logits, idx, 0.0).item<double>(),
              torch::nn::functional::cross_entropy(logits, idx).item<double>(), 1e-6);
}

TEST(MultiLabel, ModelLabelsPlaceTheDataColumnsAtTheModelsOutputs) {
  ClassMatch m = match_classes({"a", "b", "c"}, {"c", "a"}, "data");
  auto labels = torch::tensor({{1.0f, 0.0f}, {1.0f, 1.0f}});  // columns: c, a
  auto out = m.model_labels(labels, m.remap());
  EXPECT_TRUE(torch::equal(out, torch::tensor({{0.0f, 0.0f, 1.0f}, {1.0f, 0.0f, 1.0f}})));
}

}  // namespace
