// The accumulated training step (with OOM recovery).
#include <c10/util/Exception.h>
#include <torch/torch.h>

#include <cmath>

#include "frugal/loader/loader.h"
#include "frugal/util/error.h"
#include "frugal/util/progress.h"
#include "frugal/train/amp.h"
#include "frugal/train/step.h"
#include "frugal/training/train_log.h"
#include "frugal/models/models.h"
#include "frugal/loader/oom.h"
#include "train/batch_mix.h"
#include "train/device.h"

namespace frugal {

torch::Tensor prepare_batch(const torch::Tensor& images, const StepOptions& o) {
  auto x = images.to(o.device, /*non_blocking=*/true);
  x = normalize(x, o.mean, o.std);
  if (o.channels_last) x = as_channels_last(x);
  return x;
}

torch::Tensor classification_loss(const torch::Tensor& logits, const torch::Tensor& labels, double label_smoothing,
                                  const torch::Tensor& class_weights) {
  if (labels.dim() == 2) {
    auto y = labels.to(logits.scalar_type());
    if (label_smoothing > 0) y = y * (1.0 - label_smoothing) + label_smoothing / 2.0;
    return torch::binary_cross_entropy_with_logits(logits, y);
  }
  auto ce = torch::nn::functional::CrossEntropyFuncOptions().label_smoothing(label_smoothing);
  if (class_weights.defined()) ce.weight(class_weights);
  return torch::nn::functional::cross_entropy(logits, labels, ce);
}

namespace {

// What optimizer.step() changes in place, per parameter: the parameter's and its state tensors'
// version counters (bumped by every in-place write, grad mode or not) and AdamW's step count.
// Equal before and after a failed step() means nothing was stepped and the step can be redone.
std::vector<std::int64_t> optimizer_versions(torch::optim::Optimizer& optimizer) {
  std::vector<std::int64_t> v;
  auto& state = optimizer.state();
  v.push_back(static_cast<std::int64_t>(state.size()));
  for (auto& group : optimizer.param_groups())
    for (auto& p : group.params()) {
      v.push_back(p._version());
      auto it = state.find(p.unsafeGetTensorImpl());
      if (it == state.end()) continue;
      auto version = [](const torch::Tensor& t) { return t.defined() ? t._version() : -1; };
      if (auto* a = dynamic_cast<torch::optim::AdamWParamState*>(it->second.get())) {
        v.insert(v.end(), {a->step(), version(a->exp_avg()), version(a->exp_avg_sq()), version(a->max_exp_avg_sq())});
      } else if (auto* m = dynamic_cast<torch::optim::SGDParamState*>(it->second.get())) {
        v.push_back(version(m->momentum_buffer()));
      }
    }
  return v;
}

// The optimizer's step, after the gradients were found finite (clipped first when asked). A step
// that runs out of memory after it updated some parameters cannot be redone: exit 4 saying so.
void optimizer_step(torch::optim::Optimizer& optimizer, std::vector<torch::Tensor>& params, double clip_grad_norm,
                    const std::function<void()>& before_optimizer_step) {
  if (clip_grad_norm > 0) torch::nn::utils::clip_grad_norm_(params, clip_grad_norm);
  auto before = optimizer_versions(optimizer);
  try {
    if (before_optimizer_step) before_optimizer_step();
    optimizer.step();
  } catch (const c10::Error& e) {
    // Redoing a step that updated some parameters would update them twice.
    if (is_out_of_memory(e) && optimizer_versions(optimizer) != before)
      fail(ErrorKind::budget, "GPU memory", "room for the optimizer step",
           "out of memory after it had updated some parameters, so it cannot be redone",
           "run the same command again to resume from the last checkpoint (with a larger {gpu_memory}, or "
           "{grad_checkpoint}, if this recurs)");
    throw;
  }
}

}  // namespace

torch::Tensor as_channels_last(const torch::Tensor& t) {
  if (t.dim() != 4) return t;
  if (t.stride(1) == 1) return t.contiguous(torch::MemoryFormat::ChannelsLast);
  // NCHW strides (also what contiguous(ChannelsLast) leaves a single-channel tensor with): copy.
  return torch::empty(t.sizes(), t.options().memory_format(torch::MemoryFormat::ChannelsLast)).copy_(t);
}

void to_channels_last(Model& model) {
  torch::NoGradGuard no_grad;
  for (auto& p : model.parameters())
    if (p.dim() == 4) p.set_data(as_channels_last(p.data()));
}

TrainStep::TrainStep(Model& model, torch::optim::Optimizer& optimizer, LossScaler& scaler, StepOptions options)
    : model_(model), optimizer_(optimizer), scaler_(scaler), options_(std::move(options)) {}

std::vector<torch::Tensor> TrainStep::trainable() const {
  std::vector<torch::Tensor> out;
  for (auto& p : model_.parameters())
    if (p.requires_grad()) out.push_back(p);
  return out;
}

// Mixup/cutmix mix the whole batch (not each micro-batch), so a smaller micro-batch after an
// out-of-memory error trains on what the larger one would have. Undefined tensors: no mixing.
std::pair<torch::Tensor, torch::Tensor> TrainStep::mixed_batch(std::size_t b, const torch::Tensor& images,
                                                               const torch::Tensor& labels) {
  if (!mix || images.size(0) == 0) return {};
  torch::Tensor x = prepare_batch(images, options_);
  torch::Tensor y = mix(x, labels.to(options_.device), b);
  return {options_.channels_last ? as_channels_last(x) : x, y};
}

// A micro-batch's mean loss: against its labels, or a mixed batch's soft targets (multi-label:
// binary cross-entropy; smoothing is in the targets already).
torch::Tensor TrainStep::loss_of(const torch::Tensor& logits, const torch::Tensor& y, bool mixed,
                                 bool multi_label) const {
  if (!mixed) return classification_loss(logits, y, options_.label_smoothing, options_.class_weights);
  return multi_label ? torch::binary_cross_entropy_with_logits(logits, y) : soft_target_cross_entropy(logits, y);
}

StepResult TrainStep::attempt(const std::vector<std::pair<torch::Tensor, torch::Tensor>>& batches,
                              std::int64_t global_samples) {
  std::int64_t local = 0;
  for (auto& [images, labels] : batches) local += images.size(0);
  const std::int64_t total = global_samples > 0 ? global_samples : local;
  if (zero_gradients)
    zero_gradients(trainable());
  else
    optimizer_.zero_grad(/*set_to_none=*/true);
  auto loss_sum = torch::zeros({}, torch::TensorOptions().device(options_.device));
  auto correct = torch::zeros({}, torch::TensorOptions().device(options_.device));  // top-1, summed like the loss
  bool class_indices = true;
  const std::int64_t micro = options_.micro_batch;
  for (std::size_t b = 0; b < batches.size(); ++b) {
    const auto& [images, labels] = batches[b];
    const std::int64_t n = images.size(0);
    const auto [mixed_x, mixed_y] = mixed_batch(b, images, labels);
    // With equal_forwards every rank makes as many forwards (empty ones too): each makes the
    // same batch-norm collectives, also when the last batch of an epoch is shared out unevenly.
    const std::int64_t chunks = (std::max(n, options_.equal_forwards) + micro - 1) / micro;
    for (std::int64_t c = 0; c < chunks; ++c) {
      const std::int64_t start = std::min(c * micro, n), end = std::min(start + micro, n);
      if (before_micro_step) before_micro_step(micro_steps_);
      ++micro_steps_;
      const bool mixed = mixed_x.defined();
      auto x = mixed ? mixed_x.slice(0, start, end) : prepare_batch(images.slice(0, start, end), options_);
      auto y = mixed ? mixed_y.slice(0, start, end) : labels.slice(0, start, end).to(options_.device, true);
      torch::Tensor loss, logits;
      {
        AutocastGuard autocast(options_.device.type(), options_.amp);
        logits = model_.forward(x).to(torch::kFloat32);
        // An empty chunk's mean is 0/0: its backward only has to reach the collectives.
        loss = end == start ? logits.sum() : loss_of(logits, y, mixed, labels.dim() == 2);
      }
      if (end == start) {
        scaler_.scale(loss).backward();
        continue;
      }
      class_indices = class_indices && !mixed && y.dim() == 1;  // mixed targets have no one right answer
      if (class_indices) correct += logits.detach().argmax(1).eq(y).sum();
      // Mean over the micro-batch, weighted by its share: the sum is the whole step's mean.
      double share = static_cast<double>(end - start) / static_cast<double>(total);
      scaler_.scale(loss * share).backward();
      loss_sum += loss.detach() * static_cast<double>(end - start);
    }
  }
  StepResult result;
  result.samples = total;
  auto params = trainable();
  if (reduce_gradients) reduce_gradients(params, {loss_sum, correct});
  bool finite = scaler_.unscale(params);
  if (finite) optimizer_step(optimizer_, params, options_.clip_grad_norm, before_optimizer_step);
  scaler_.update();
  result.skipped = !finite;
  const torch::Tensor figures = torch::stack({loss_sum, correct}).cpu();  // one copy from the device
  result.loss = figures[0].item<double>() / static_cast<double>(total);
  if (class_indices) result.correct = std::llround(figures[1].item<double>());
  return result;
}

StepResult TrainStep::run(const std::vector<std::pair<torch::Tensor, torch::Tensor>>& batches,
                          std::int64_t global_samples) {
  std::vector<torch::Tensor> buffers_before;
  {
    torch::NoGradGuard no_grad;
    for (auto& b : model_.buffers()) buffers_before.push_back(b.clone());
  }
  bool recovered = false;
  for (;;) {
    try {
      StepResult r = attempt(batches, global_samples);
      r.oom_recovered = recovered;
      return r;
    } catch (const c10::Error& e) {
      // cuBLAS/cuDNN workspace failures arrive as plain c10::Error: the same remedy applies.
      if (!is_out_of_memory(e)) throw;
      if (zero_gradients)
        zero_gradients(trainable());
      else
        optimizer_.zero_grad(/*set_to_none=*/true);
      {
        torch::NoGradGuard no_grad;
        auto buffers = model_.buffers();
        for (std::size_t i = 0; i < buffers.size(); ++i) buffers[i].copy_(buffers_before[i]);
      }
      empty_device_cache(options_.device);
      if (options_.micro_batch <= 1)
        fail(ErrorKind::budget, "GPU memory", "room for a micro-batch of 1", "out of memory",
             "use a smaller {image_size} or model, {grad_checkpoint}, {amp}, or a larger {gpu_memory}");
      // With --sync-bn every rank must make the same forwards: one rank cannot halve its
      // micro-batch alone (the others would wait in a batch-norm collective it never makes).
      if (options_.equal_forwards > 0)
        fail(ErrorKind::budget, "GPU memory", "room for a micro-batch of " + std::to_string(options_.micro_batch),
             "out of memory (with {sync_bn} a rank cannot halve its micro-batch alone)",
             "run the same command again with a smaller {batch_size} and a larger {accum} (the same global batch: "
             "it resumes from the last checkpoint), or {grad_checkpoint}");
      int smaller = options_.micro_batch / 2;
      if (!oom_noted_)
        note("out of GPU memory at micro-batch " + std::to_string(options_.micro_batch) + "; continuing with " +
             std::to_string(smaller) + " and twice the accumulation (same effective batch)");
      oom_noted_ = true;
      options_.micro_batch = smaller;
      recovered = true;
    }
  }
}

}  // namespace frugal
