// The training step (the configuration is training/train_config.h's): the batch made ready for the
// model, the loss, and one optimizer step over accumulated micro-batches with OOM recovery
// (src/train/step.cpp).
#pragma once

#include <torch/torch.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "frugal/models/models.h"
#include "frugal/train/amp.h"
#include "frugal/training/train_config.h"
#include "frugal/training/train_log.h"

namespace frugal {

struct StepOptions {
  int micro_batch = 64;  // samples per forward/backward
  double label_smoothing = 0.0;
  double clip_grad_norm = 0.0;  // 0: no clipping
  AmpMode amp = AmpMode::off;
  torch::Device device = torch::kCPU;
  bool channels_last = false;                // lay each micro-batch out channels-last (see to_channels_last)
  std::vector<float> mean{0.5f}, std{0.5f};  // normalization of uint8 images
  torch::Tensor class_weights;               // --class-weights: (classes) float32 on the device; undefined: none
  // Data-parallel with --sync-bn: each batch is forwarded in ceil(max(its size, this) /
  // micro_batch) chunks, empty ones too, so that every rank makes the same collectives (0: only
  // the chunks that hold samples).
  std::int64_t equal_forwards = 0;
};

// Stores the model's 4-D weights channels-last, as PyTorch's module.to(memory_format=...) does:
// also the single-input-channel ones, which contiguous(ChannelsLast) would leave with NCHW strides
// (they count as channels-last already) and which would then keep the first layers on NCHW kernels.
// The same holds for an input (N, 1, H, W); TrainStep lays batches out that way with channels_last.
void to_channels_last(Model& model);
torch::Tensor as_channels_last(const torch::Tensor& t);

// (B, C, H, W) uint8 on any device -> normalized float on options.device (channels-last when asked).
torch::Tensor prepare_batch(const torch::Tensor& images, const StepOptions& options);
// The training loss of (B, classes) float32 logits against a batch's labels, the mean over the
// batch: cross-entropy of (B) class indices, or for multi-label (B, classes) 0/1 targets binary
// cross-entropy with logits, the mean over samples and classes (torch's BCEWithLogitsLoss);
// label smoothing e moves each target to y (1 - e) + e / 2 there, as it does to y (1 - e) + e / K
// for cross-entropy.
// `class_weights` (single-label only): cross-entropy's weight, the mean then over the batch's weights
// (torch's weighted cross-entropy).
torch::Tensor classification_loss(const torch::Tensor& logits, const torch::Tensor& labels, double label_smoothing,
                                  const torch::Tensor& class_weights = {});

// One optimizer step over the samples of `batches` (uint8 images as the loader gives them),
// split into micro-batches of `micro_batch`. Each micro-batch's mean loss is weighted by its share
// of the step's samples, so the accumulated gradient equals that of one batch of all of them.
//
// On running out of memory (c10::OutOfMemoryError, or cuBLAS/cuDNN failing to allocate, see
// is_out_of_memory) the step is undone (gradients zeroed, batch-norm statistics restored, CUDA
// cache emptied), micro_batch halved and the step rerun on the same samples; the new size is kept
// (micro_batch()) and noted once. At micro-batch 1 the error becomes Error(budget). An OOM inside
// optimizer.step() is redone only when no parameter or optimizer state had changed yet (else
// Error(budget): redoing it would step some parameters twice); make_optimizer() creates the
// optimizer state up front so that the first step allocates none of it.
class TrainStep {
 public:
  TrainStep(Model& model, torch::optim::Optimizer& optimizer, LossScaler& scaler, StepOptions options);
  // `global_samples`: the step's samples over all the processes of a data-parallel run (0: these
  // batches are the whole step). Each micro-batch's loss is weighted by its share of them, so that
  // the gradients summed over the processes (reduce_gradients) are those of the global batch's
  // mean loss; the result's loss and samples are then the global batch's too.
  virtual ~TrainStep() = default;
  virtual StepResult run(const std::vector<std::pair<torch::Tensor, torch::Tensor>>& batches,
                         std::int64_t global_samples = 0);
  int micro_batch() const { return options_.micro_batch; }
  void set_label_smoothing(double e) { options_.label_smoothing = e; }  // a recipe chosen mid-run

  // Data-parallel: called once per optimizer step, after the last micro-batch's backward and
  // before unscaling: sums the parameters' gradients (undefined ones as zeros) and `extra` (the
  // step's loss sum and top-1 count) over the processes, in place. Every process then unscales, checks for inf/NaN
  // and steps on the same gradients: one decision, taken alike everywhere.
  std::function<void(const std::vector<torch::Tensor>& params, std::vector<torch::Tensor> extra)> reduce_gradients;
  // Data-parallel: replaces zero_grad(set_to_none) before a step's first backward, e.g. with
  // gradients that are views of the all-reduce's buckets, zeroed (ProcessGroup::prepare_gradients).
  std::function<void(const std::vector<torch::Tensor>& params)> zero_gradients;

  // --mixup/--cutmix: mixes the step's `batch`th batch (float, normalized, on the device) in place
  // and returns its (B, classes) float targets (src/train/batch_mix.h); the loss is then taken
  // against those: soft-target cross-entropy, or for multi-label binary cross-entropy (smoothing is
  // in the targets already). Unset: no mixing.
  std::function<torch::Tensor(torch::Tensor& images, const torch::Tensor& labels, std::size_t batch)> mix;

  // Test seams: called before each micro-batch's forward with a running micro-step counter, and
  // before optimizer.step(); may throw (e.g. c10::OutOfMemoryError) to simulate a failure there.
  std::function<void(std::int64_t micro_step)> before_micro_step;
  std::function<void()> before_optimizer_step;

 protected:
  StepResult attempt(const std::vector<std::pair<torch::Tensor, torch::Tensor>>& batches, std::int64_t global_samples);
  std::vector<torch::Tensor> trainable() const;
  std::pair<torch::Tensor, torch::Tensor> mixed_batch(std::size_t b, const torch::Tensor& images,
                                                      const torch::Tensor& labels);
  torch::Tensor loss_of(const torch::Tensor& logits, const torch::Tensor& y, bool mixed, bool multi_label) const;

  Model& model_;
  torch::optim::Optimizer& optimizer_;
  LossScaler& scaler_;
  StepOptions options_;
  std::int64_t micro_steps_ = 0;
  bool oom_noted_ = false;
};

}  // namespace frugal
