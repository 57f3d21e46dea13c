// What a run tells the user while it trains, and the records it reports: a redrawn bar on a terminal (step, loss,
// images/s, ETA), a plain line every 10 s otherwise; one line per epoch either way.
#pragma once

#include <chrono>
#include <cstdint>

#include "frugal/util/env.h"
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace frugal {

// What one optimizer step did (TrainStep::run).
struct StepResult {
  double loss = 0;  // mean over the step's samples
  std::int64_t samples = 0;
  bool skipped = false;  // inf/NaN gradients: no optimizer step
  bool oom_recovered = false;
};

// What one evaluation found (evaluate()).
struct EvalResult {
  double loss = 0, accuracy = 0;  // mean cross-entropy; top-1 in [0, 1]
  std::int64_t samples = 0;
  // Accuracy per class index (NaN when a class has no samples): the model's outputs, or with a
  // ClassMatch the data's classes (in the data's order).
  std::vector<double> per_class;
  nlohmann::json to_json(const std::vector<std::string>& classes) const;  // eval --json shape
};

class TrainLog {
 public:
  // Time (throughput, ETA, "done in") is read only from `env`'s steady clock.
  explicit TrainLog(bool quiet, Env& env = Env::real());
  void step(std::int64_t step, std::int64_t total, std::int64_t epoch, const StepResult& r, double lr);
  void epoch(std::int64_t epoch, std::int64_t epochs, const EvalResult& e);
  void done();
  double images_per_second() const;

 private:
  Env& env_;
  bool quiet_, tty_;
  Env::SteadyTime start_, last_line_;
  std::int64_t images_ = 0, first_step_ = -1;
  double ema_loss_ = -1;
  bool bar_open_ = false;
};

}  // namespace frugal
