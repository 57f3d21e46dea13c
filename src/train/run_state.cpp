#include "train/run_state.h"

namespace frugal {
namespace {

// Checkpoint metadata keys (docs/formats.md).
constexpr const char* kLoaderEpoch = "epoch";
constexpr const char* kLoaderPosition = "position";
constexpr const char* kLr = "lr";
constexpr const char* kTotalSteps = "total_steps";
constexpr const char* kMicroBatch = "micro_batch";
constexpr const char* kAccum = "accum";
constexpr const char* kTimeBudget = "time_budget";
constexpr const char* kValAccuracy = "val_accuracy";
constexpr const char* kValMeanAp = "val_mean_ap";
// Trainer tensors (the loss scaler names its own: LossScaler::state).
constexpr const char* kRngCpu = "rng.cpu";
constexpr const char* kRngCuda = "rng.cuda";

}  // namespace

nlohmann::json RunIdentity::to_json() const {
  nlohmann::json j = config.to_json();
  j["classes"] = classes;
  j["train_images"] = train_images;
  j["world_size"] = world_size;
  return j;
}

void RunState::to_checkpoint(Checkpoint& ck) const {
  ck.epoch = epochs_done;
  ck.step = step;
  ck.loader = {{kLoaderEpoch, loader_epoch}, {kLoaderPosition, loader_position}};
  ck.schedule = {{kLr, lr}, {kTotalSteps, total_steps}, {kMicroBatch, micro_batch}, {kAccum, accum}};
  if (!time_budget.is_null()) ck.schedule[kTimeBudget] = time_budget;
  ck.metrics = metrics;
  if (val_accuracy) {
    ck.metric_value = val_accuracy;
    ck.metric_name = multi_label ? kValMeanAp : kValAccuracy;
  }
}

RunState RunState::from_checkpoint(const Checkpoint& ck, int micro_batch) {
  RunState s;
  s.step = ck.step;
  s.epochs_done = ck.epoch;
  s.loader_epoch = ck.loader.value(kLoaderEpoch, ck.epoch);
  s.loader_position = ck.loader.value(kLoaderPosition, std::int64_t{0});
  s.micro_batch = ck.schedule.value(kMicroBatch, micro_batch);
  if (ck.schedule.contains(kTimeBudget)) s.time_budget = ck.schedule[kTimeBudget];
  if (ck.metric_value) s.val_accuracy = ck.metric_value;
  return s;
}

void put_trainer_tensors(Checkpoint& ck, const LossScaler& scaler, const torch::Device& device) {
  for (auto& [k, v] : scaler.state()) ck.state.emplace_back(k, v);
  ck.state.emplace_back(kRngCpu, cpu_rng_state());
  if (auto rng = device_rng_state(device); rng.defined()) ck.state.emplace_back(kRngCuda, rng);
}

void load_trainer_tensors(const Checkpoint& ck, LossScaler& scaler, const torch::Device& device) {
  std::map<std::string, torch::Tensor> scaler_state;
  for (const auto& k : LossScaler::state_names())
    if (auto* t = ck.find_state(k)) scaler_state[k] = *t;
  scaler.load_state(scaler_state);
  if (auto* rng = ck.find_state(kRngCpu)) set_cpu_rng_state(*rng);
  // Dropout and stochastic depth on the GPU draw from its generator: without it resuming is exact
  // only on the CPU.
  if (auto* rng = ck.find_state(kRngCuda); rng && device.is_cuda()) set_device_rng_state(device, *rng);
}

}  // namespace frugal
