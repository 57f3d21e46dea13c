// --grad-checkpoint must not change what is learned, in any precision: the recompute in backward
// runs under autocast too, and LibTorch's cast-weight cache is process-wide, so a recompute that
// leaves cached casts behind makes the next forward run on the previous step's weights.
#include <gtest/gtest.h>

#include <ATen/Context.h>
#include <ATen/autocast_mode.h>

#include "frugal/models/models.h"
#include "frugal/train/amp.h"
#include "frugal/train/optim.h"
#include "frugal/train/step.h"
#include "frugal/training/train_config.h"

namespace frugal {
namespace {

using Batches = std::vector<std::pair<torch::Tensor, torch::Tensor>>;

// A tiny Fashion-MNIST stand-in: 28x28 gray images whose brightest band depends on the label, so
// that the loss falls and the weights move every step.
Batches tiny_set(int steps, int batch) {
  torch::manual_seed(11);
  Batches out;
  for (int s = 0; s < steps; ++s) {
    auto labels = torch::randint(0, 4, {batch}, torch::kInt64);
    auto images = torch::randint(0, 96, {batch, 1, 28, 28}, torch::kInt64);
    for (int i = 0; i < batch; ++i) {
      auto row = labels[i].item<std::int64_t>() * 7;
      images[i].slice(1, row, row + 7).add_(150);
    }
    out.emplace_back(images.clamp(0, 255).to(torch::kUInt8), labels);
  }
  return out;
}

// Trains `cnn` as `frugal train --deterministic --seed 5` does (AdamW, channels-last, the step's
// normalisation) over the whole set, one optimizer step per batch; returns the weights.
std::vector<torch::Tensor> train_cnn(bool grad_checkpoint, AmpMode amp, const Batches& data) {
  at::globalContext().setDeterministicAlgorithms(true, false);
  torch::manual_seed(5);
  auto model = make_model("cnn", 4, 1);
  to_channels_last(*model);
  model->set_grad_checkpoint(grad_checkpoint);
  model->train();
  auto opt = make_optimizer(*model, OptimizerOptions{});
  LossScaler scaler({.enabled = false});
  StepOptions o;
  o.micro_batch = 16;
  o.amp = amp;
  o.channels_last = true;
  TrainStep step(*model, *opt.optimizer, scaler, o);
  for (auto& b : data) step.run({b});
  std::vector<torch::Tensor> weights;
  for (auto& p : model->parameters()) weights.push_back(p.detach().clone());
  for (auto& b : model->buffers()) weights.push_back(b.detach().clone());
  at::globalContext().setDeterministicAlgorithms(false, false);
  return weights;
}

double max_abs_diff(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i)
    m = std::max(m, (a[i].to(torch::kFloat64) - b[i].to(torch::kFloat64)).abs().max().item<double>());
  return m;
}

TEST(GradCheckpoint, Fp32WeightsAreBitwiseThoseOfPlainTraining) {
  auto data = tiny_set(6, 32);
  EXPECT_EQ(max_abs_diff(train_cnn(false, AmpMode::off, data), train_cnn(true, AmpMode::off, data)), 0.0);
}

TEST(GradCheckpoint, Bf16WeightsAreBitwiseThoseOfPlainTraining) {
  auto data = tiny_set(6, 32);
  auto plain = train_cnn(false, AmpMode::bf16, data);
  auto checkpointed = train_cnn(true, AmpMode::bf16, data);
  // Sanity: bf16 really trained differently from fp32, so the comparison is of a bf16 run.
  EXPECT_GT(max_abs_diff(plain, train_cnn(false, AmpMode::off, data)), 0.0);
  EXPECT_EQ(max_abs_diff(plain, checkpointed), 0.0);
}

// The recompute must leave autocast as it found it: off, nesting back at zero, and no cast
// weights cached (they would outlive the optimizer step that changes the weights).
TEST(GradCheckpoint, BackwardUnderBf16LeavesNoAutocastStateBehind) {
  torch::manual_seed(5);
  auto model = make_model("cnn", 4, 1);
  model->set_grad_checkpoint(true);
  model->train();
  auto x = torch::randn({4, 1, 28, 28});
  torch::Tensor loss;
  {
    AutocastGuard autocast(torch::kCPU, AmpMode::bf16);
    loss = model->forward(x).to(torch::kFloat32).sum();
  }
  loss.backward();
  EXPECT_FALSE(at::autocast::is_autocast_enabled(torch::kCPU));
  // Balanced: one increment brings the count to 1 (it was 0 before).
  EXPECT_EQ(at::autocast::increment_nesting(), 1);
  EXPECT_EQ(at::autocast::decrement_nesting(), 0);
  // A weight changed in place after backward (as optimizer.step() does) must be what the next
  // autocast forward computes with.
  {
    torch::NoGradGuard no_grad;
    model->named_parameters()["features.0.0.weight"].mul_(-1);
  }
  model->eval();
  torch::Tensor next, fresh;
  {
    AutocastGuard autocast(torch::kCPU, AmpMode::bf16);
    next = model->forward(x).to(torch::kFloat32);
  }
  at::autocast::clear_cache();
  {
    AutocastGuard autocast(torch::kCPU, AmpMode::bf16);
    fresh = model->forward(x).to(torch::kFloat32);
  }
  EXPECT_TRUE(torch::equal(next, fresh)) << "the forward after backward ran on stale cast weights";
}

}  // namespace
}  // namespace frugal
