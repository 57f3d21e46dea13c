// Mixed precision: choosing a precision, autocast, and dynamic loss scaling.
#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "frugal/util/error.h"
#include "frugal/train/amp.h"
#include "frugal/training/train_config.h"

namespace frugal {

AutocastGuard::AutocastGuard(torch::DeviceType device, AmpMode mode) : device_(device) {
  if (mode == AmpMode::off) return;
  active_ = true;
  was_enabled_ = at::autocast::is_autocast_enabled(device);
  was_dtype_ = at::autocast::get_autocast_dtype(device);
  at::autocast::set_autocast_enabled(device, true);
  at::autocast::set_autocast_dtype(device, mode == AmpMode::fp16 ? at::kHalf : at::kBFloat16);
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  if (!active_) return;
  // The cast-weight cache lives as long as the outermost autocast region.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  at::autocast::set_autocast_enabled(device_, was_enabled_);
  at::autocast::set_autocast_dtype(device_, was_dtype_);
}

LossScaler::LossScaler(LossScalerOptions options, torch::Device device) : options_(options) {
  auto f32 = torch::TensorOptions().dtype(torch::kFloat32).device(device);
  scale_ = torch::full({1}, options_.enabled ? options_.init_scale : 1.0, f32);
  growth_tracker_ = torch::zeros({1}, f32.dtype(torch::kInt32));
  found_inf_ = torch::zeros({1}, f32);
}

torch::Tensor LossScaler::scale(const torch::Tensor& loss) const {
  return options_.enabled ? loss * scale_.to(loss.dtype()) : loss;
}

bool LossScaler::unscale(const std::vector<torch::Tensor>& params) {
  found_inf_.zero_();
  std::vector<torch::Tensor> grads;
  for (auto& p : params)
    if (p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return true;
  auto inv_scale = scale_.to(torch::kFloat64).reciprocal().to(torch::kFloat32);
  // The kernel wants every gradient on found_inf's device and in one dtype family per call.
  at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf_, inv_scale);
  return found_inf_.item<float>() == 0.0f;
}

void LossScaler::update() {
  if (!options_.enabled) return;
  at::_amp_update_scale_(scale_, growth_tracker_, found_inf_, options_.growth_factor, options_.backoff_factor,
                         options_.growth_interval);
}

double LossScaler::scale_value() const { return scale_.item<float>(); }

namespace {
constexpr const char* kScaleKey = "loss_scaler.scale";
constexpr const char* kGrowthKey = "loss_scaler.growth_tracker";
}  // namespace

const std::vector<std::string>& LossScaler::state_names() {
  static const std::vector<std::string> names{kScaleKey, kGrowthKey};
  return names;
}

std::map<std::string, torch::Tensor> LossScaler::state() const {
  return {{kScaleKey, scale_.detach().cpu().clone()}, {kGrowthKey, growth_tracker_.detach().cpu().clone()}};
}

void LossScaler::load_state(const std::map<std::string, torch::Tensor>& state) {
  torch::NoGradGuard no_grad;
  if (auto it = state.find(kScaleKey); it != state.end()) scale_.copy_(it->second);
  if (auto it = state.find(kGrowthKey); it != state.end()) growth_tracker_.copy_(it->second);
}

}  // namespace frugal
