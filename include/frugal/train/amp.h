// Mixed precision: autocast for one device type, and dynamic loss scaling for fp16 (src/train/amp.cpp).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "frugal/training/train_config.h"

namespace frugal {

// Enables autocast for one device type while alive (off: does nothing).
class AutocastGuard {
 public:
  AutocastGuard(torch::DeviceType device, AmpMode mode);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  torch::DeviceType device_;
  bool active_ = false, was_enabled_ = false;
  at::ScalarType was_dtype_ = at::kFloat;
};

// Dynamic loss scaling for fp16 (torch.amp.GradScaler's algorithm, on the same ATen kernels):
// the loss is multiplied by `scale` before backward; unscale() divides the gradients and finds
// inf/NaN; a step with inf/NaN is skipped and the scale multiplied by backoff; after
// growth_interval clean steps it is multiplied by growth. Disabled: scale 1, but unscale() still
// reports non-finite gradients so such steps are skipped in every precision.
struct LossScalerOptions {
  bool enabled = true;
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  std::int64_t growth_interval = 2000;
};

class LossScaler {
 public:
  explicit LossScaler(LossScalerOptions options = {}, torch::Device device = torch::kCPU);
  torch::Tensor scale(const torch::Tensor& loss) const;
  // Divides the gradients by the scale in place; false when any is inf/NaN (skip the step).
  bool unscale(const std::vector<torch::Tensor>& params);
  // After each step (taken or skipped): adjusts the scale from what unscale() found.
  void update();
  // Another pipeline stage's unscale() found inf/NaN: this step is skipped here too, and update()
  // backs off as everywhere.
  void found_inf_elsewhere() { found_inf_.fill_(1.0); }
  double scale_value() const;
  bool enabled() const { return options_.enabled; }
  // "loss_scaler.scale" (F32) and "loss_scaler.growth_tracker" (I32) for checkpoints.
  std::map<std::string, torch::Tensor> state() const;
  void load_state(const std::map<std::string, torch::Tensor>& state);
  static const std::vector<std::string>& state_names();  // the keys of state()

 private:
  LossScalerOptions options_;
  torch::Tensor scale_, growth_tracker_, found_inf_;  // on the training device
};

}  // namespace frugal
