// --ema: the exponential moving average of the weights (train/weight_average.h).
#include "train/weight_average.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "frugal/util/error.h"

namespace frugal {

WeightAverage::WeightAverage(Model& model, double decay) : model_(model), decay_(decay) {
  torch::NoGradGuard no_grad;
  for (auto& p : model.named_parameters()) {
    names_.push_back(p.key());
    is_buffer_.push_back(false);
  }
  for (auto& b : model.named_buffers()) {
    names_.push_back(b.key());
    is_buffer_.push_back(true);
  }
  for (const torch::Tensor& t : model_tensors()) average_.push_back(t.detach().clone());
}

std::vector<torch::Tensor> WeightAverage::model_tensors() const {
  std::vector<torch::Tensor> out;
  for (auto& p : model_.parameters()) out.push_back(p.detach());
  for (auto& b : model_.buffers()) out.push_back(b.detach());
  return out;
}

double WeightAverage::decay_at(double decay, std::int64_t step) {
  const std::int64_t k = std::max<std::int64_t>(0, step - 1);  // timm: step - update_after_step - 1
  if (k <= 0) return 0.0;
  return std::max(std::min(1.0 - std::pow(1.0 + static_cast<double>(k), -2.0 / 3.0), decay), 0.0);
}

void WeightAverage::update(std::int64_t step) {
  torch::NoGradGuard no_grad;
  const std::vector<torch::Tensor> now = model_tensors();
  std::vector<torch::Tensor> ema, model;
  for (std::size_t i = 0; i < now.size(); ++i) {
    if (average_[i].is_floating_point()) {
      ema.push_back(average_[i]);
      model.push_back(now[i]);
    } else {
      average_[i].copy_(now[i]);
    }
  }
  if (!ema.empty()) torch::_foreach_lerp_(ema, model, 1.0 - decay_at(decay_, step));
}

void WeightAverage::swap() {
  torch::NoGradGuard no_grad;
  const std::vector<torch::Tensor> now = model_tensors();
  for (std::size_t i = 0; i < now.size(); ++i) {
    torch::Tensor kept = now[i].clone();
    now[i].copy_(average_[i]);
    average_[i].copy_(kept);
  }
}

void WeightAverage::reset() {
  torch::NoGradGuard no_grad;
  const std::vector<torch::Tensor> now = model_tensors();
  for (std::size_t i = 0; i < now.size(); ++i) average_[i].copy_(now[i]);
}

std::vector<torch::Tensor> WeightAverage::floating_buffers() const {
  std::vector<torch::Tensor> out;
  for (std::size_t i = 0; i < average_.size(); ++i)
    if (is_buffer_[i] && average_[i].is_floating_point()) out.push_back(average_[i]);
  return out;
}

void WeightAverage::put(Checkpoint& ck) const {
  torch::NoGradGuard no_grad;
  std::map<std::string, torch::Tensor> average;
  for (std::size_t i = 0; i < names_.size(); ++i) average[names_[i]] = average_[i].to(torch::kCPU).contiguous();
  NamedTensors trained = std::move(ck.weights);  // the model's, as TrainedModel::checkpoint put them
  ck.weights = to_named(average);
  for (auto& [name, t] : trained) ck.state.emplace_back(kTrainedPrefix + name, std::move(t));
}

bool WeightAverage::load(const Checkpoint& ck) {
  torch::NoGradGuard no_grad;
  std::vector<const torch::Tensor*> trained, average;
  for (const std::string& name : names_) {
    trained.push_back(ck.find_state(kTrainedPrefix + name));
    const torch::Tensor* a = nullptr;
    for (const auto& [n, t] : ck.weights)
      if (n == name) a = &t;
    average.push_back(a);
  }
  if (std::any_of(trained.begin(), trained.end(), [](const torch::Tensor* t) { return t == nullptr; })) return false;
  if (std::any_of(average.begin(), average.end(), [](const torch::Tensor* t) { return t == nullptr; })) return false;
  const std::vector<torch::Tensor> now = model_tensors();
  // A checkpoint's tensors are bytes a user may not have written: each must be the model's own.
  for (std::size_t i = 0; i < now.size(); ++i)
    for (const torch::Tensor* t : {trained[i], average[i]})
      if (t->sizes() != now[i].sizes() || t->scalar_type() != now[i].scalar_type())
        fail(ErrorKind::invalid, "the checkpoint's " + names_[i], "the model's shape and type", "another shape or type",
             "the checkpoint is damaged: remove it to resume from an older one");
  for (std::size_t i = 0; i < now.size(); ++i) {
    now[i].copy_(*trained[i]);
    average_[i].copy_(*average[i]);
  }
  return true;
}

}  // namespace frugal
