// The confusion matrix's figures against scikit-learn's (1.9, precision_recall_fscore_support with
// zero_division=0 on the predictions the matrices count): every value to the last bit.
#include <gtest/gtest.h>

#include <cmath>

#include "frugal/training/classification_report.h"
#include "frugal/util/error.h"

using namespace frugal;

namespace {

// Class 2 has no image and is never predicted; class 3 is never predicted right.
const ConfusionMatrix kSmall = {{5, 1, 0, 2}, {2, 3, 0, 0}, {0, 0, 0, 0}, {1, 4, 0, 0}};

TEST(ClassificationReport, PerClassFiguresAsScikitLearns) {
  const ClassificationReport r = classification_report(kSmall);
  ASSERT_EQ(r.per_class.size(), 4u);
  const double precision[] = {0.625, 0.375, 0.0, 0.0}, recall[] = {0.625, 0.6, 0.0, 0.0},
               f1[] = {0.625, 0.46153846153846156, 0.0, 0.0};
  const std::int64_t support[] = {8, 5, 0, 5};
  for (std::size_t c = 0; c < 4; ++c) {
    EXPECT_EQ(r.per_class[c].precision, precision[c]) << c;
    EXPECT_EQ(r.per_class[c].recall, recall[c]) << c;
    EXPECT_EQ(r.per_class[c].f1, f1[c]) << c;
    EXPECT_EQ(r.per_class[c].support, support[c]) << c;
  }
  EXPECT_EQ(r.samples, 18);
  EXPECT_EQ(r.accuracy, 8.0 / 18.0);
}

TEST(ClassificationReport, ZeroDivisionGivesZeroNotNaN) {
  // Class 2: no image, no prediction (precision, recall and F1 all 0/0); class 3: images, never
  // predicted (precision 0/0, recall 0/5, F1 0/5).
  const ClassificationReport r = classification_report(kSmall);
  for (std::size_t c : {2u, 3u}) {
    EXPECT_FALSE(std::isnan(r.per_class[c].precision));
    EXPECT_EQ(r.per_class[c].precision, 0.0);
    EXPECT_EQ(r.per_class[c].f1, 0.0);
  }
}

TEST(ClassificationReport, AveragesAsScikitLearns) {
  const ClassificationReport r = classification_report(kSmall);
  EXPECT_EQ(r.macro.precision, 0.25);
  EXPECT_EQ(r.macro.recall, 0.30625);
  EXPECT_EQ(r.macro.f1, 0.2716346153846154);
  EXPECT_EQ(r.weighted.precision, 0.3819444444444444);
  EXPECT_EQ(r.weighted.recall, 0.4444444444444444);
  EXPECT_EQ(r.weighted.f1, 0.40598290598290604);
  EXPECT_EQ(r.macro.support, 18);
  EXPECT_EQ(r.weighted.support, 18);
}

// 20 classes: NumPy sums them pairwise (eight running sums), which a plain loop does not match.
TEST(ClassificationReport, AveragesOfManyClassesToTheLastBit) {
  const ConfusionMatrix m = {{14, 0, 1, 0, 0, 1, 2, 0, 0, 0, 0, 0, 3, 0, 0, 1, 0, 1, 0, 0},
                             {0, 16, 0, 1, 0, 1, 1, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 1, 1, 1},
                             {1, 2, 20, 0, 3, 0, 1, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0},
                             {0, 0, 0, 20, 1, 0, 1, 0, 0, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0},
                             {0, 0, 0, 0, 12, 0, 1, 1, 0, 1, 0, 0, 1, 1, 2, 0, 1, 0, 1, 1},
                             {0, 0, 2, 0, 0, 19, 1, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 1, 1},
                             {1, 1, 1, 0, 0, 0, 15, 1, 0, 0, 0, 0, 1, 0, 1, 2, 0, 0, 2, 0},
                             {0, 1, 0, 0, 1, 1, 0, 19, 0, 0, 2, 0, 1, 0, 0, 0, 0, 0, 1, 0},
                             {0, 1, 1, 0, 0, 0, 1, 0, 14, 1, 0, 0, 0, 0, 0, 0, 2, 1, 1, 0},
                             {2, 1, 2, 1, 0, 1, 2, 0, 1, 14, 0, 1, 0, 0, 0, 0, 0, 1, 1, 0},
                             {1, 0, 0, 1, 0, 1, 0, 1, 0, 0, 18, 1, 0, 0, 0, 0, 1, 1, 0, 1},
                             {0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 18, 0, 1, 0, 1, 0, 2, 1, 0},
                             {0, 0, 0, 0, 1, 0, 0, 0, 0, 2, 0, 0, 23, 0, 0, 0, 0, 1, 0, 0},
                             {0, 0, 0, 1, 0, 0, 2, 0, 1, 0, 0, 0, 3, 23, 0, 0, 0, 1, 0, 2},
                             {0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 2, 0, 2, 18, 1, 0, 0, 0, 0},
                             {1, 1, 0, 1, 0, 0, 1, 0, 1, 1, 0, 2, 1, 0, 1, 7, 1, 0, 0, 0},
                             {0, 0, 0, 0, 1, 0, 0, 0, 0, 2, 1, 0, 0, 0, 0, 1, 14, 0, 0, 1},
                             {1, 1, 1, 0, 0, 1, 0, 1, 1, 1, 0, 1, 2, 1, 1, 0, 1, 15, 0, 1},
                             {0, 0, 0, 1, 0, 0, 1, 2, 3, 0, 1, 0, 0, 0, 1, 3, 1, 0, 11, 1},
                             {1, 0, 1, 0, 0, 0, 2, 0, 1, 0, 1, 0, 0, 1, 0, 0, 0, 0, 3, 10}};
  const ClassificationReport r = classification_report(m);
  EXPECT_EQ(r.macro.precision, 0x1.44f6976b189f2p-1);
  EXPECT_EQ(r.macro.recall, 0x1.44a8883e29846p-1);
  EXPECT_EQ(r.macro.f1, 0x1.440af901188eep-1);
  EXPECT_EQ(r.weighted.precision, 0x1.4849bd4691fa6p-1);
  EXPECT_EQ(r.weighted.recall, 0x1.47ae147ae147bp-1);
  EXPECT_EQ(r.weighted.f1, 0x1.472eb21a49b10p-1);
}

TEST(ClassificationReport, NoImagesGivesZerosAndNoNaN) {
  const ClassificationReport r = classification_report({{0, 0}, {0, 0}});
  EXPECT_EQ(r.samples, 0);
  EXPECT_EQ(r.accuracy, 0.0);
  EXPECT_EQ(r.macro.f1, 0.0);
  EXPECT_EQ(r.weighted.precision, 0.0);  // every weight 0: the unweighted mean, as sklearn's
  EXPECT_TRUE(classification_report({}).per_class.empty());
}

TEST(ClassificationReport, ANonSquareMatrixIsRefused) { EXPECT_THROW(classification_report({{1, 2}, {3}}), Error); }

TEST(PairwiseSum, AddsAsNumPyDoes) {
  // 0.1 summed 200 times: np.sum gives 20.0 (a plain loop 20.000000000000014).
  std::vector<double> v(200, 0.1);
  EXPECT_EQ(pairwise_sum(v.data(), v.size()), 20.0);
  EXPECT_EQ(pairwise_sum(v.data(), 3), 0.1 + 0.1 + 0.1);
  EXPECT_EQ(pairwise_sum(v.data(), 0), 0.0);
}

TEST(WorstPredictions, KeepsTheHighestLossesHighestFirst) {
  WorstPredictions w(3);
  const double losses[] = {0.5, 2.0, 0.1, 3.0, 2.0, 1.0};
  for (std::int64_t i = 0; i < 6; ++i) w.add({i, "", 0, 1, 0.5, losses[i]});
  const auto s = w.sorted();
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].sample, 3);
  EXPECT_EQ(s[1].sample, 1);  // equal losses: the earlier image first
  EXPECT_EQ(s[2].sample, 4);
  WorstPredictions none(0);
  none.add({0, "", 0, 0, 1.0, 9.0});
  EXPECT_TRUE(none.sorted().empty());
}

TEST(ClassificationReport, JsonHasTheKeysTheReportReads) {
  const ClassificationReport r = classification_report(kSmall);
  const auto j = classification_json(kSmall, r, {"a", "b", "c", "d"});
  EXPECT_EQ(j["confusion"], nlohmann::json(kSmall));
  EXPECT_EQ(j["classes"][3], "d");
  EXPECT_EQ(j["per_class_report"][1]["class"], "b");
  EXPECT_EQ(j["per_class_report"][1]["support"], 5);
  EXPECT_EQ(j["macro"]["recall"], 0.30625);
  EXPECT_EQ(j["weighted"]["support"], 18);
  const auto w = worst_json({{7, "x/7.png", 0, 3, 0.75, 2.5}}, {"a", "b", "c", "d"});
  EXPECT_EQ(w[0], nlohmann::json(
                      {{"name", "x/7.png"}, {"true", "a"}, {"predicted", "d"}, {"probability", 0.75}, {"loss", 2.5}}));
}

TEST(ClassificationReport, TextEscapesNamesFromData) {
  const ClassificationReport r = classification_report({{1, 0}, {0, 1}});
  const std::string t = confusion_text({{1, 0}, {0, 1}}, r, {"a\x1b[31m", "b"});
  EXPECT_EQ(t.find('\x1b'), std::string::npos);
  EXPECT_NE(t.find("macro avg"), std::string::npos);
  const std::string w = worst_text({{0, "bad\nname", 0, 1, 0.9, 2.3}}, {"a", "b"});
  EXPECT_EQ(w.find("bad\nname"), std::string::npos);
}

}  // namespace
