// What a run tells the user while it trains, and the records it reports: a redrawn bar on a terminal (step, loss,
// images/s, ETA), a plain line every 10 s otherwise; one line per epoch either way.
#pragma once

#include <chrono>
#include <cstdint>

#include "frugal/training/classification_report.h"
#include "frugal/util/env.h"
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace frugal {

// What one optimizer step did (TrainStep::run).
struct StepResult {
  double loss = 0;  // mean over the step's samples
  std::int64_t samples = 0;
  bool skipped = false;  // inf/NaN gradients: no optimizer step
  bool oom_recovered = false;
  // Top-1 right answers among the samples, counted in the step's own forwards (the model in
  // training mode, before the step); -1 when the targets are not class indices (multi-label tags).
  std::int64_t correct = -1;
};

// What one evaluation found (evaluate()).
struct EvalResult {
  double loss = 0, accuracy = 0;  // mean cross-entropy; top-1 in [0, 1]
  std::int64_t samples = 0;
  // Accuracy per class index (NaN when a class has no samples): the model's outputs, or with a
  // ClassMatch the data's classes (in the data's order).
  std::vector<double> per_class;
  // Multi-label (each class a tag of its own; src/train/multi_label.h): loss is the mean binary
  // cross-entropy, accuracy the share of images whose every tag is right (exact match), per_class
  // each class's average precision; precision, recall and F1 are micro-averaged over every
  // (image, tag) at each class's threshold.
  bool multi_label = false;
  double mean_ap = 0;  // over the classes that have positives
  double precision = 0, recall = 0, f1 = 0;
  std::vector<double> class_precision, class_recall, class_f1;  // NaN where undefined
  std::vector<std::int64_t> positives;                          // images with the tag
  std::vector<double> best_thresholds;  // the probability at which each class's F1 is highest (NaN: no positives)
  // Asked for (EvalOptions::confusion, ::worst), single-label only: the confusion matrix over the
  // model's outputs (true x predicted, in the model's class order), and the images of highest loss
  // (highest first; `name` left for the caller, who knows the dataset).
  ConfusionMatrix confusion;
  std::vector<Prediction> worst;
  // What ranks checkpoints and is shown first: accuracy, or mean AP for multi-label.
  double score() const { return multi_label ? mean_ap : accuracy; }
  const char* score_name() const { return multi_label ? "mean AP" : "accuracy"; }
  nlohmann::json to_json(const std::vector<std::string>& classes) const;  // eval --json shape
};

class TrainLog {
 public:
  // Time (throughput, ETA, "done in") is read only from `env`'s steady clock.
  explicit TrainLog(bool quiet, Env& env = Env::real());
  void step(std::int64_t step, std::int64_t total, std::int64_t epoch, const StepResult& r, double lr);
  void epoch(std::int64_t epoch, std::int64_t epochs, const EvalResult& e);
  void done();
  double images_per_second() const;

 private:
  Env& env_;
  bool quiet_, tty_;
  Env::SteadyTime start_, last_line_;
  std::int64_t images_ = 0, first_step_ = -1;
  double ema_loss_ = -1;
  bool bar_open_ = false;
};

}  // namespace frugal
