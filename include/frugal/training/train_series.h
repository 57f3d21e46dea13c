// The training curve: a point every K steps with the loss (the mean over the steps since the last
// point), the learning rate, images/s, the loss scale and a time budget's planned steps. K =
// max(1, total_steps / 100): a run of N steps has min(N, 100) points or more, every step when it
// has fewer than 200. The session writes each point to the TensorBoard events at once
// (tags as TrainPoint::tags() names them) and to metrics.jsonl with the next epoch record
// (points_json(), docs/formats.md).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "frugal/util/env.h"

namespace frugal {

struct TrainPoint {
  std::int64_t step = 0;
  double time = 0;  // Unix seconds (the Env's clock)
  double loss = 0, lr = 0, images_per_s = 0, loss_scale = 1;
  std::int64_t planned_steps = -1;  // a time budget's plan (-1: no time budget, or not yet planned)
  // (tag, value) for TensorBoard and metrics.jsonl: train/loss, train/lr, train/images_per_s,
  // train/loss_scale, budget/planned_steps (only when planned).
  std::vector<std::pair<std::string, double>> tags() const;
};

class TrainSeries {
 public:
  explicit TrainSeries(Env& env = Env::real());
  // K for a run of `total_steps`.
  static std::int64_t every(std::int64_t total_steps);
  // One step done (`images` in it, all ranks'), from `started` to `ended`: the point when `step` is a
  // multiple of K, else nothing. A non-finite loss (a skipped fp16 step) is left out of the mean;
  // all of them: NaN. `loss_scale` is read only for a point (it may wait for the GPU). The steady
  // clock is never read here: the times are the caller's (a fake clock that ticks at each read
  // times the same run with or without the curve). The first point's images/s counts from the
  // first step's start.
  std::optional<TrainPoint> step(std::int64_t step, std::int64_t total_steps, double loss, std::int64_t images,
                                 double lr, const std::function<double()>& loss_scale, std::int64_t planned_steps,
                                 Env::SteadyTime started, Env::SteadyTime ended);

 private:
  Env& env_;
  std::optional<Env::SteadyTime> since_;
  double loss_sum_ = 0;
  std::int64_t losses_ = 0, images_ = 0;
};

// Points as metrics.jsonl holds them: {"step": [...], "time": [...], TAG: [...]} (one array per
// key, a value per point; budget/planned_steps null where there was no plan).
nlohmann::json points_json(const std::vector<TrainPoint>& points);

}  // namespace frugal
