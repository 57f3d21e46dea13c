#include "train/run_state.h"

#include <algorithm>
#include <cmath>

#include "frugal/util/error.h"

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
constexpr const char* kTail = "tail";
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
  if (!tail.is_null()) ck.schedule[kTail] = tail;
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
  if (ck.schedule.contains(kTail)) s.tail = ck.schedule[kTail];
  if (ck.schedule.contains(kLr) && ck.schedule[kLr].is_number()) s.lr = ck.schedule[kLr].get<double>();
  if (ck.metric_value) s.val_accuracy = ck.metric_value;
  return s;
}

double ScheduleTail::lr(std::int64_t step, std::int64_t total_steps) const {
  const std::int64_t s = std::max<std::int64_t>(0, step - start);
  if (s < warmup) return from_lr + (peak - from_lr) * static_cast<double>(s) / static_cast<double>(warmup);
  const double span = static_cast<double>(std::max<std::int64_t>(1, total_steps - start - warmup));
  const double p = std::min(1.0, static_cast<double>(s - warmup) / span);
  return peak * 0.5 * (1.0 + std::cos(std::acos(-1.0) * p));
}

nlohmann::json ScheduleTail::to_json() const {
  return {{"start", start}, {"warmup", warmup}, {"from_lr", from_lr}, {"peak", peak}};
}

std::optional<ScheduleTail> ScheduleTail::from_json(const nlohmann::json& j, const std::string& where) {
  if (j.is_null()) return std::nullopt;
  auto integer = [&](const char* k) {
    return j.contains(k) && j[k].is_number_integer() && j[k].get<std::int64_t>() >= 0;
  };
  auto rate = [&](const char* k) {
    return j.contains(k) && j[k].is_number() && std::isfinite(j[k].get<double>()) && j[k].get<double>() >= 0;
  };
  if (!j.is_object() || !integer("start") || !integer("warmup") || !rate("from_lr") || !rate("peak"))
    fail(ErrorKind::invalid, where, "a schedule tail {start, warmup, from_lr, peak} in metadata \"schedule\"",
         j.dump().substr(0, 80), "the checkpoint is damaged: remove it to resume from an older one");
  return ScheduleTail{j["start"].get<std::int64_t>(), j["warmup"].get<std::int64_t>(), j["from_lr"].get<double>(),
                      j["peak"].get<double>()};
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
