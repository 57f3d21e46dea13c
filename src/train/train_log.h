// What a run tells the user while it trains (internal): a redrawn bar on a terminal (step, loss,
// images/s, ETA), a plain line every 10 s otherwise; one line per epoch either way.
#pragma once

#include <chrono>
#include <cstdint>

#include "frugal/env.h"
#include "frugal/train.h"

namespace frugal {

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
