// Multi-label evaluation (each class a tag of its own, a sigmoid per output): counts that sum over
// batches and over processes (DDP, pipeline replicas), and the figures made from them.
//
// Average precision needs every score sorted; here each class's logits are counted in a histogram
// of kBins bins over [-kLogitRange, kLogitRange) instead, one for the images that have the tag and
// one for those that do not. Those sum across processes like every other count (an exact AP would
// gather every score on one process), memory is classes x kBins x 2 counts whatever the data's
// size, and AP is sklearn's average_precision_score with scores that fall in one bin (1/64 of a
// logit apart) taken as tied. Precision, recall and F1 at the thresholds are exact counts.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "frugal/training/train_log.h"

namespace frugal {

class MultiLabelTally {
 public:
  static constexpr std::int64_t kBins = 2048;
  static constexpr double kLogitRange = 16.0;

  // `thresholds`: per class, or one for all (probabilities in (0, 1)).
  MultiLabelTally(std::int64_t classes, const std::vector<float>& thresholds, const torch::Device& device);

  // (B, classes) float32 logits and 0/1 targets, on the tally's device.
  void add(const torch::Tensor& logits, const torch::Tensor& targets);
  // The counts, to be summed in place across processes.
  std::vector<torch::Tensor> counts() { return {hist_pos_, hist_neg_, tp_, fp_, fn_, exact_}; }
  // Fills r's multi-label figures (and accuracy: the share of images whose every tag is right)
  // from the counts; r.samples must be set.
  void fill(EvalResult& r) const;

 private:
  std::int64_t classes_;
  torch::Tensor logit_thresholds_;     // (classes) on the device
  torch::Tensor hist_pos_, hist_neg_;  // (classes, kBins) int64
  torch::Tensor tp_, fp_, fn_;         // (classes) int64
  torch::Tensor exact_;                // (1) int64
};

// Per class from its histograms (index = bin, higher bins higher scores): average precision, and
// the probability threshold at which its F1 is highest (NaN for a class with no positives).
double average_precision(const std::int64_t* pos, const std::int64_t* neg, std::int64_t bins);
double best_f1_threshold(const std::int64_t* pos, const std::int64_t* neg, std::int64_t bins);

}  // namespace frugal
