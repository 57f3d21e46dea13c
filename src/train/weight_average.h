// --ema DECAY: an exponential moving average of the model's weights, held to timm's ModelEmaV3
// with use_warmup (internal to the session). What a run with it evaluates, keeps as best and
// exports is the average; its checkpoints hold the average as their weights and the trained
// weights beside it in the trainer state, so that a resume continues both bitwise.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "frugal/checkpoint/checkpoint.h"
#include "frugal/models/models.h"

namespace frugal {

class WeightAverage {
 public:
  // A copy of `model`'s parameters and buffers (state_dict: its names, in their order), made
  // after the model is placed and initialised, as timm copies the model it is given.
  WeightAverage(Model& model, double decay);

  // timm's get_decay(step) with use_warmup, warmup_gamma 1 and warmup_power 2/3: 0 at step 1 (the
  // average becomes the weights), then 1 - (1 + (step - 1))^(-2/3), at most `decay`.
  static double decay_at(double decay, std::int64_t step);
  // After optimizer step `step` (1 for the run's first): floating tensors lerp toward the model's
  // with weight 1 - decay_at(step) (torch._foreach_lerp_, as timm's foreach path), the others
  // (batch norm's step counters) copied.
  void update(std::int64_t step);
  // Exchanges the model's values with the average's: called twice around an evaluation.
  void swap();
  // Copies the model's values into the average (a resume that found no average to load).
  void reset();

  const std::vector<std::string>& names() const { return names_; }
  const std::vector<torch::Tensor>& tensors() const { return average_; }
  std::vector<torch::Tensor>& tensors() { return average_; }
  // The average's floating buffers (batch norm's statistics), which data-parallel ranks average.
  std::vector<torch::Tensor> floating_buffers() const;

  // Checkpoints: the average as the weights (torchvision names), the model's own under this
  // trainer-state prefix.
  static constexpr const char* kTrainedPrefix = "trained.";
  void put(Checkpoint& ck) const;
  // From a checkpoint written with an average: the model gets the trained weights (kTrainedPrefix),
  // the average the checkpoint's weights. Returns false (nothing changed) when it holds none.
  bool load(const Checkpoint& ck);

 private:
  std::vector<torch::Tensor> model_tensors() const;
  Model& model_;
  double decay_;
  std::vector<std::string> names_;
  std::vector<bool> is_buffer_;
  std::vector<torch::Tensor> average_;
};

}  // namespace frugal
