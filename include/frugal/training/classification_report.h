// What a single-label evaluation tells beyond accuracy, without LibTorch: the confusion matrix,
// per-class precision, recall, F1 and support with their macro and weighted averages (as
// scikit-learn's classification_report defines them, a division by zero giving 0), and the images
// of highest loss. `frugal eval` prints them and gives them in --json (classification_json(),
// worst_json()); the report page reads the same.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace frugal {

// confusion[t][p]: the images of true class t predicted as p; square, in the model's class order.
using ConfusionMatrix = std::vector<std::vector<std::int64_t>>;

struct ClassScores {
  double precision = 0, recall = 0, f1 = 0;
  std::int64_t support = 0;  // images of the class (an average's: all images)
};

struct ClassificationReport {
  std::vector<ClassScores> per_class;
  ClassScores macro, weighted;  // the unweighted mean of the classes', and the mean weighted by support
  double accuracy = 0;          // the diagonal's share (0 without images)
  std::int64_t samples = 0;
};

// Per class c: precision = tp / (tp + fp), recall = tp / support, F1 = 2 tp / (support + predicted),
// each 0 where its denominator is (sklearn's zero_division=0); the averages are summed as NumPy sums
// (pairwise_sum), so that they equal sklearn's to the last bit. Error(invalid) when not square.
ClassificationReport classification_report(const ConfusionMatrix& confusion);

// NumPy's pairwise summation of doubles (what np.sum and np.mean do on a contiguous array): the same
// additions in the same order, so the same rounding.
double pairwise_sum(const double* values, std::size_t n);

// One image's prediction, as eval --worst lists it.
struct Prediction {
  std::int64_t sample = -1;  // the dataset's index of the image
  std::string name;          // its entry name (the caller fills it from `sample`)
  std::int64_t true_class = 0, predicted = 0;
  double probability = 0;  // of the predicted class (softmax)
  double loss = 0;         // the image's cross-entropy
};

// The `limit` predictions of highest loss seen; ties go to the lower sample index.
class WorstPredictions {
 public:
  explicit WorstPredictions(std::size_t limit) : limit_(limit) {}
  std::size_t limit() const { return limit_; }
  void add(Prediction p);
  // Highest loss first.
  std::vector<Prediction> sorted() const;

 private:
  std::size_t limit_;
  std::vector<Prediction> heap_;  // a min-heap by (loss, then later sample first): its top goes first
};

// {"classes": [...], "confusion": [[...]], "per_class_report": [{"class", "precision", "recall",
// "f1", "support"}], "macro": {...}, "weighted": {...}} (each average: precision, recall, f1,
// support). `classes` names the matrix's rows in order.
nlohmann::json classification_json(const ConfusionMatrix& confusion, const ClassificationReport& report,
                                   const std::vector<std::string>& classes);
// [{"name", "true", "predicted", "probability", "loss"}], class names from `classes`.
nlohmann::json worst_json(const std::vector<Prediction>& worst, const std::vector<std::string>& classes);

// The text `eval --confusion` prints: the matrix (rows: true class, columns: predicted, as
// numbers with a legend when names are long), then a table of precision, recall, F1 and support.
std::string confusion_text(const ConfusionMatrix& confusion, const ClassificationReport& report,
                           const std::vector<std::string>& classes);
// The text `eval --worst N` prints: one line per image.
std::string worst_text(const std::vector<Prediction>& worst, const std::vector<std::string>& classes);

}  // namespace frugal
