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
  // Groups: decayed, then not decayed (biases and norm scales/shifts are 1-D: decaying them only
  // fights the normalization); with a backbone rate, each of them for the head, then the backbone.
  const bool split = o.backbone_lr_scale != 1.0;
  const std::string head = model.head_prefix();
  struct Group {
    std::vector<torch::Tensor> params;
    std::vector<std::pair<std::string, torch::Tensor>> named;
    double weight_decay, scale;
  };
  std::vector<Group> groups = {{{}, {}, o.weight_decay, 1.0}, {{}, {}, 0.0, 1.0}};
  if (split) {
    groups.push_back({{}, {}, o.weight_decay, o.backbone_lr_scale});
    groups.push_back({{}, {}, 0.0, o.backbone_lr_scale});
  }
  for (auto& p : model.named_parameters()) {
    if (!p.value().requires_grad()) continue;
    const bool backbone = split && !(p.key() == head || p.key().rfind(head + ".", 0) == 0);
    Group& g = groups[(backbone ? 2 : 0) + (p.value().dim() <= 1 ? 1 : 0)];
    g.params.push_back(p.value());
    g.named.emplace_back(p.key(), p.value());
  }
  for (const Group& g : groups) setup.params.insert(setup.params.end(), g.named.begin(), g.named.end());
  if (setup.params.empty())
    fail(ErrorKind::usage, "{freeze}", "some parameters left to train", "every parameter frozen",
         "freeze fewer prefixes");

  std::vector<torch::optim::OptimizerParamGroup> param_groups;
  for (const Group& g : groups) {
    if (g.params.empty()) continue;  // e.g. a head of 2-D weights only, or all of it frozen
    const double lr = o.lr * g.scale;
    setup.lr_scale.push_back(g.scale);
    if (o.kind == OptimizerKind::adamw)
      param_groups.emplace_back(g.params, std::make_unique<torch::optim::AdamWOptions>(
                                              torch::optim::AdamWOptions(lr).weight_decay(g.weight_decay)));
    else
      param_groups.emplace_back(
          g.params,
          std::make_unique<torch::optim::SGDOptions>(
              torch::optim::SGDOptions(lr).momentum(o.momentum).nesterov(o.nesterov).weight_decay(g.weight_decay)));
  }
  if (o.kind == OptimizerKind::adamw)
    setup.optimizer = std::make_unique<torch::optim::AdamW>(std::move(param_groups), torch::optim::AdamWOptions(o.lr));
  else
    setup.optimizer = std::make_unique<torch::optim::SGD>(std::move(param_groups), torch::optim::SGDOptions(o.lr));
  create_state(*setup.optimizer);
  return setup;
}

void set_lr(OptimizerSetup& setup, double lr) {
  auto& groups = setup.optimizer->param_groups();
  for (std::size_t i = 0; i < groups.size(); ++i)
    groups[i].options().set_lr(lr * (i < setup.lr_scale.size() ? setup.lr_scale[i] : 1.0));
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
