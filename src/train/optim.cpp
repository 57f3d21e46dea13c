// Optimizers with decay / no-decay groups, the learning-rate schedule, and freezing.
#include <cmath>

#include "frugal/util/error.h"
#include "frugal/train/optim.h"
#include "frugal/training/train_config.h"
#include "frugal/models/models.h"

namespace frugal {

namespace {

// LibTorch creates AdamW's moments (and SGD's momentum) on a parameter's first step, one
// parameter after another: an out-of-memory there leaves the earlier ones stepped. Created here,
// the first step allocates no state. Equal to the lazy state: AdamW starts from step 0 and zero
// moments; SGD (dampening 0) from 0 * momentum + gradient, which is the gradient its lazy start
// clones. Memory formats follow the parameters (channels-last stays channels-last).
void create_state(torch::optim::Optimizer& optimizer) {
  torch::NoGradGuard no_grad;
  auto& state = optimizer.state();
  for (auto& group : optimizer.param_groups())
    for (auto& p : group.params()) {
      void* key = p.unsafeGetTensorImpl();
      if (state.count(key)) continue;
      auto zeros = [&] { return torch::zeros_like(p, torch::MemoryFormat::Preserve); };
      if (auto* adamw = dynamic_cast<torch::optim::AdamWOptions*>(&group.options())) {
        auto s = std::make_unique<torch::optim::AdamWParamState>();
        s->step(0);
        s->exp_avg(zeros());
        s->exp_avg_sq(zeros());
        if (adamw->amsgrad()) s->max_exp_avg_sq(zeros());
        state[key] = std::move(s);
      } else if (auto* sgd = dynamic_cast<torch::optim::SGDOptions*>(&group.options());
                 sgd && sgd->momentum() != 0 && sgd->dampening() == 0) {
        auto s = std::make_unique<torch::optim::SGDParamState>();
        s->momentum_buffer(zeros());
        state[key] = std::move(s);
      }
    }
}

}  // namespace

OptimizerSetup make_optimizer(Model& model, const OptimizerOptions& o) {
  OptimizerSetup setup;
  std::vector<torch::Tensor> decay, no_decay;
  std::vector<std::pair<std::string, torch::Tensor>> decay_named, no_decay_named;
  for (auto& p : model.named_parameters()) {
    if (!p.value().requires_grad()) continue;
    // Biases and norm scales/shifts are 1-D; decaying them only fights the normalization.
    if (p.value().dim() <= 1) {
      no_decay.push_back(p.value());
      no_decay_named.emplace_back(p.key(), p.value());
    } else {
      decay.push_back(p.value());
      decay_named.emplace_back(p.key(), p.value());
    }
  }
  setup.params = decay_named;
  setup.params.insert(setup.params.end(), no_decay_named.begin(), no_decay_named.end());
  if (setup.params.empty())
    fail(ErrorKind::usage, "{freeze}", "some parameters left to train", "every parameter frozen",
         "freeze fewer prefixes");

  if (o.kind == OptimizerKind::adamw) {
    using torch::optim::AdamWOptions;
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(decay, std::make_unique<AdamWOptions>(AdamWOptions(o.lr).weight_decay(o.weight_decay)));
    groups.emplace_back(no_decay, std::make_unique<AdamWOptions>(AdamWOptions(o.lr).weight_decay(0.0)));
    setup.optimizer = std::make_unique<torch::optim::AdamW>(std::move(groups), AdamWOptions(o.lr));
  } else {
    using torch::optim::SGDOptions;
    auto opts = [&](double wd) {
      return std::make_unique<SGDOptions>(SGDOptions(o.lr).momentum(o.momentum).nesterov(o.nesterov).weight_decay(wd));
    };
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(decay, opts(o.weight_decay));
    groups.emplace_back(no_decay, opts(0.0));
    setup.optimizer = std::make_unique<torch::optim::SGD>(std::move(groups), SGDOptions(o.lr));
  }
  create_state(*setup.optimizer);
  return setup;
}

void set_lr(torch::optim::Optimizer& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) group.options().set_lr(lr);
}

int freeze(Model& model, const std::vector<std::string>& prefixes) {
  int frozen = 0;
  for (auto& prefix : prefixes) {
    int matched = 0;
    for (auto& p : model.named_parameters()) {
      const std::string& name = p.key();
      if (name == prefix || name.rfind(prefix + ".", 0) == 0) {
        p.value().set_requires_grad(false);
        ++matched;
      }
    }
    if (matched == 0)
      fail(ErrorKind::usage, "{freeze} " + prefix, "a prefix of the model's parameter names (e.g. 'conv1', 'layer1')",
           "no parameter under it", "list the names with a checkpoint viewer or see the torchvision model");
    frozen += matched;
  }
  return frozen;
}

}  // namespace frugal
