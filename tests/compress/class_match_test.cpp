// The one class-matching rule (evaluate.h) that eval, compress's accuracy report and fine-tuning
// share: by name, a subset of the model's classes allowed, an unknown class refused naming it.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>

#include "frugal/util/error.h"
#include "frugal/train/step.h"
#include "frugal/train/evaluate.h"
#include "frugal/models/models.h"

using namespace frugal;

namespace {

using Names = std::vector<std::string>;

// The message of the Error fn throws, with its kind; nullopt when it throws none.
template <class F>
std::optional<std::pair<ErrorKind, std::string>> error_of(F&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return std::make_pair(e.kind(), std::string(e.what()));
  }
  return std::nullopt;
}

TEST(ClassMatch, SameClassesMapOneToOne) {
  auto m = match_classes({"a", "b", "c"}, {"a", "b", "c"}, "d.zip");
  EXPECT_EQ(m.to_model, (std::vector<std::int64_t>{0, 1, 2}));
  EXPECT_TRUE(m.absent.empty());
  EXPECT_EQ(m.note("d.zip"), "");
  EXPECT_EQ(m.model_classes, 3);
}

TEST(ClassMatch, ASubsetInAnyOrderMapsByNameAndNamesTheAbsent) {
  auto m = match_classes({"a", "b", "c", "d"}, {"d", "b"}, "d.zip");
  EXPECT_EQ(m.to_model, (std::vector<std::int64_t>{3, 1}));
  EXPECT_EQ(m.absent, (Names{"a", "c"}));
  EXPECT_NE(m.note("d.zip").find("d.zip holds 2 of the model's 4 classes (absent: a, c)"), std::string::npos);
  EXPECT_TRUE(torch::equal(m.remap(), torch::tensor({3, 1}, torch::kInt64)));
}

TEST(ClassMatch, AnUnknownClassIsBadInputNamingItAndBothLists) {
  auto e = error_of([] { match_classes({"bright", "dark"}, {"bright", "cloudy"}, "d.zip"); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->first, ErrorKind::invalid);
  EXPECT_NE(e->second.find("d.zip"), std::string::npos) << e->second;
  EXPECT_NE(e->second.find("1 class it does not: \"cloudy\""), std::string::npos) << e->second;
  EXPECT_NE(e->second.find("the model's classes: bright, dark; the data's: bright, cloudy"), std::string::npos)
      << e->second;
  EXPECT_EQ(e->second.find("number prefix"), std::string::npos) << e->second;
}

TEST(ClassMatch, ANumberPrefixOnEitherSideIsPointedOut) {
  Names model, data;
  for (int i = 0; i < 10; ++i) {
    model.push_back("c" + std::to_string(i));
    data.push_back(std::to_string(i) + "_c" + std::to_string(i));
  }
  auto e = error_of([&] { match_classes(model, data, "test.zip"); });
  ASSERT_TRUE(e);
  EXPECT_NE(e->second.find("10 classes it does not: \"0_c0\", \"1_c1\", \"2_c2\", ... (10 in all)"), std::string::npos)
      << e->second;
  EXPECT_NE(e->second.find("the model's classes: c0, c1, c2, c3, c4, ... (10 in all)"), std::string::npos) << e->second;
  EXPECT_NE(e->second.find("number prefix (\"0_c0\" where the model has \"c0\")"), std::string::npos) << e->second;
  auto back = error_of([&] { match_classes(data, model, "test.zip"); });  // the model's names carry it
  ASSERT_TRUE(back);
  EXPECT_NE(back->second.find("number prefix (\"c0\" where the model has \"0_c0\")"), std::string::npos)
      << back->second;
}

// A source of fixed batches, as a loader gives them.
class FixedBatches : public BatchSource {
 public:
  explicit FixedBatches(std::vector<Batch> batches) : batches_(std::move(batches)) {}
  void start(std::int64_t, std::int64_t) override { next_ = 0; }
  std::optional<Batch> next() override {
    if (next_ >= batches_.size()) return std::nullopt;
    return batches_[next_++];
  }
  std::int64_t batches_per_epoch() const override { return static_cast<std::int64_t>(batches_.size()); }
  std::uint64_t samples_seen() const override { return 0; }
  std::uint64_t samples_bad() const override { return 0; }

 private:
  std::vector<Batch> batches_;
  std::size_t next_ = 0;
};

TEST(ClassMatch, EvaluationMapsLabelsToTheModelAndReportsPerDataClass) {
  torch::manual_seed(3);
  auto model = make_model("cnn", 4, 1);
  auto images = torch::randint(0, 255, {12, 1, 28, 28}, torch::kUInt8);
  auto data_labels = torch::tensor({0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1}, torch::kInt64);
  Batch b;
  b.images = images;
  b.labels = data_labels;
  FixedBatches source({b});
  StepOptions so;
  // The data's classes "d", "b" are the model's outputs 3 and 1.
  auto match = match_classes({"a", "b", "c", "d"}, {"d", "b"}, "d.zip");
  auto r = evaluate(*model, source, match, so);
  // The same batch with labels already in the model's numbering, evaluated over all 4 outputs.
  Batch mapped = b;
  mapped.labels = match.remap().index_select(0, data_labels);
  FixedBatches plain({mapped});
  auto ref = evaluate(*model, plain, 4, so);
  EXPECT_EQ(r.samples, 12);
  EXPECT_DOUBLE_EQ(r.accuracy, ref.accuracy);
  EXPECT_DOUBLE_EQ(r.loss, ref.loss);
  ASSERT_EQ(r.per_class.size(), 2u);  // the data's classes, in the data's order
  EXPECT_DOUBLE_EQ(r.per_class[0], ref.per_class[3]);
  EXPECT_DOUBLE_EQ(r.per_class[1], ref.per_class[1]);
  EXPECT_TRUE(std::isnan(ref.per_class[0]));
}

}  // namespace
