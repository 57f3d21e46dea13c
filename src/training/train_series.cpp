// The training curve's points (frugal/training/train_series.h).
#include "frugal/training/train_series.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace frugal {

std::vector<std::pair<std::string, double>> TrainPoint::tags() const {
  std::vector<std::pair<std::string, double>> out{
      {"train/loss", loss}, {"train/lr", lr}, {"train/images_per_s", images_per_s}, {"train/loss_scale", loss_scale}};
  if (planned_steps >= 0) out.emplace_back("budget/planned_steps", static_cast<double>(planned_steps));
  return out;
}

TrainSeries::TrainSeries(Env& env) : env_(env) {}

std::int64_t TrainSeries::every(std::int64_t total_steps) { return std::max<std::int64_t>(1, total_steps / 100); }

std::optional<TrainPoint> TrainSeries::step(std::int64_t step, std::int64_t total_steps, double loss,
                                            std::int64_t images, double lr, const std::function<double()>& loss_scale,
                                            std::int64_t planned_steps, Env::SteadyTime started,
                                            Env::SteadyTime ended) {
  if (!since_) since_ = started;
  if (std::isfinite(loss)) {
    loss_sum_ += loss;
    ++losses_;
  }
  images_ += images;
  if (step % every(total_steps) != 0) return std::nullopt;
  const double seconds = std::chrono::duration<double>(ended - *since_).count();
  TrainPoint p;
  p.step = step;
  p.time = std::chrono::duration<double>(env_.wall_now().time_since_epoch()).count();
  p.loss = losses_ > 0 ? loss_sum_ / static_cast<double>(losses_) : NAN;
  p.lr = lr;
  p.images_per_s = seconds > 0 ? static_cast<double>(images_) / seconds : 0.0;
  p.loss_scale = loss_scale ? loss_scale() : 1.0;
  p.planned_steps = planned_steps;
  since_ = ended;
  loss_sum_ = 0;
  losses_ = images_ = 0;
  return p;
}

nlohmann::json points_json(const std::vector<TrainPoint>& points) {
  nlohmann::json out = {{"step", nlohmann::json::array()}, {"time", nlohmann::json::array()}};
  for (const char* tag : {"train/loss", "train/lr", "train/images_per_s", "train/loss_scale", "budget/planned_steps"})
    out[tag] = nlohmann::json::array();
  auto value = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  for (const TrainPoint& p : points) {
    out["step"].push_back(p.step);
    out["time"].push_back(p.time);
    out["train/loss"].push_back(value(p.loss));
    out["train/lr"].push_back(value(p.lr));
    out["train/images_per_s"].push_back(value(p.images_per_s));
    out["train/loss_scale"].push_back(value(p.loss_scale));
    out["budget/planned_steps"].push_back(p.planned_steps >= 0 ? nlohmann::json(p.planned_steps)
                                                               : nlohmann::json(nullptr));
  }
  return out;
}

}  // namespace frugal
