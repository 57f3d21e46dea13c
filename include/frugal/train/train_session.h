// The run driver behind `frugal train`: one session of a training (CONTRIBUTING.md, "Words"),
// run by src/train/session.cpp's Session.
#pragma once

#include "frugal/training/train_config.h"
#include "frugal/util/env.h"

namespace frugal {

// Trains as configured. Every file the run writes and every clock it reads goes through `env`.
// Nothing is written before training really starts: a refused option, unusable data, a budget
// that does not fit (disk, memory, a deadline too short for one step) leave the run folder as they
// found it (a folder it had to create is removed again).
SessionOutcome train_session(const TrainConfig& config, Env& env = Env::real());

}  // namespace frugal
