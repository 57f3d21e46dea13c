// Optimizers and what is set on them: the parameter groups, the learning rate, frozen layers
// (src/train/optim.cpp).
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "frugal/models/models.h"
#include "frugal/training/train_config.h"

namespace frugal {

struct OptimizerOptions {
  OptimizerKind kind = OptimizerKind::adamw;
  double lr = 1e-3;
  double weight_decay = 0.05;
  double momentum = 0.9;  // SGD
  bool nesterov = true;   // SGD
  // --lr-backbone: the learning rate of every parameter outside the model's head (head_prefix())
  // is lr x this; 1: one rate for all.
  double backbone_lr_scale = 1.0;
};

// Parameters that require grad, in two groups: weights with weight decay, and norms and biases
// (1-D tensors) without. The names come back in optimizer order (for checkpoint state).
struct OptimizerSetup {
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::vector<std::pair<std::string, torch::Tensor>> params;
  std::vector<double> lr_scale;  // per parameter group: its learning rate's multiple of the schedule's
};
OptimizerSetup make_optimizer(Model& model, const OptimizerOptions& options);

// Every group's learning rate: lr, times the group's lr_scale.
void set_lr(OptimizerSetup& setup, double lr);

// Sets requires_grad(false) on every parameter whose name starts with one of the prefixes
// (matching whole name components: "layer1" freezes "layer1.0.conv1.weight", not "layer10.*").
// Returns the number of tensors frozen; a prefix that matches nothing -> Error(usage).
int freeze(Model& model, const std::vector<std::string>& prefixes);

}  // namespace frugal
