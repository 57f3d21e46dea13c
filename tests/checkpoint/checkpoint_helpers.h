// Small checkpoints for tests.
#pragma once

#include <optional>

#include "frugal/checkpoint/checkpoint.h"
#include "frugal/util/error.h"

namespace frugal::testing {

// A checkpoint of a few small tensors, deterministic in `seed`.
inline Checkpoint small_checkpoint(std::int64_t step, std::optional<double> metric = std::nullopt, int seed = 1) {
  torch::manual_seed(seed);
  Checkpoint c;
  c.model = {"cnn", {"zero", "one", "two"}, 28, 1, {0.1307f}, {0.3081f}};
  c.weights = {{"conv1.weight", torch::randn({8, 1, 3, 3})},
               {"conv1.bias", torch::randn({8})},
               {"fc.weight", torch::randn({3, 32})},
               {"bn.num_batches_tracked", torch::tensor(step, torch::kInt64)}};
  c.state = {{"optim.fc.weight.exp_avg", torch::randn({3, 32})},
             {"rng.cpu", torch::randint(0, 255, {64}, torch::kUInt8)}};
  c.epoch = step / 10;
  c.step = step;
  c.loader = {{"epoch", c.epoch}, {"batch", step % 10}};
  c.schedule = {{"lr", 0.01}};
  c.config = {{"model", "cnn"}, {"keep_last", 2}};
  if (metric) {
    c.metric_value = metric;
    c.metric_name = "val_accuracy";
    c.metrics = {{"val_accuracy", *metric}};
  }
  return c;
}

// The kind of the frugal::Error that `f` throws; nullopt when it throws nothing (any other
// exception goes through and fails the test).
template <class F>
std::optional<ErrorKind> error_kind(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.kind();
  }
  return std::nullopt;
}

inline bool same_tensors(const NamedTensors& a, const NamedTensors& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].first != b[i].first || a[i].second.scalar_type() != b[i].second.scalar_type() ||
        !torch::equal(a[i].second, b[i].second))
      return false;
  return true;
}

}  // namespace frugal::testing
