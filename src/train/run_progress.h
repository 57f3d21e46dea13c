// Where a training run stands (internal to the session): the counters and the last validation
// every checkpoint records, and what train --json reports when the session ends.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>

#include <nlohmann/json.hpp>

#include "frugal/training/train_config.h"
#include "frugal/training/train_log.h"
#include "frugal/util/env.h"
#include "train/run_state.h"
#include "train/training_data.h"

namespace frugal {

// Where the run stands, as every checkpoint records it and the outcome reports it.
struct RunProgress {
  std::int64_t step = 0;                              // optimizer steps, earlier sessions included
  std::int64_t epochs_done = 0;                       // epochs completed, earlier sessions included
  double lr = 0;                                      // the last step's learning rate
  nlohmann::json metrics = nlohmann::json::object();  // the last validation's record (metrics.jsonl)
  std::optional<double> val_accuracy;                 // what keep-best ranks by

  // A checkpoint's state of the run: these, with the loader's epoch and position (the schedule,
  // micro-batch and the rest are the caller's to add).
  RunState state(std::int64_t epochs_done_now, std::int64_t loader_epoch, std::int64_t loader_position) const;
};

// One epoch's figures, from its start: the steps' mean loss, and the seconds of its steps and of
// the collectives among them (the metrics of a run of several ranks).
struct EpochTally {
  // A step's figures into the epoch's: its loss when finite, its top-1 count when it has one.
  void add(const StepResult& r);
  // The mean loss over the epoch's samples (those trained in this session when it resumed
  // mid-epoch), not the last step's, which varies with its batch; NaN before any.
  double mean_loss() const;
  // Top-1 over the same steps, in their forwards (training mode: dropout, batch statistics,
  // augmented images), so it runs below what the weights score on the same images; NaN when the
  // steps counted none (multi-label tags).
  double accuracy() const;

  std::int64_t step = 0;                            // steps into the epoch
  double loss_sum = 0;                              // over this session's steps of the epoch (finite losses)
  std::int64_t loss_samples = 0;                    // the samples of those steps
  std::int64_t correct = 0, correct_samples = 0;    // top-1 over this session's steps (class-index targets)
  double step_seconds = 0;                          // this epoch's steps, with their agreement
  double comm_at_start = 0, gradient_at_start = 0;  // the collectives' and gradients' seconds before it
  Env::SteadyTime agreed_from{};                    // the current step's agreement began (step_seconds counts from it)
  Env::SteadyTime step_ended{};                     // the last step ended (the training curve's clock)
};

// What the run reached, for train --json: `at`, the data's figures (TrainingData::describe) and,
// when `read_best` (rank 0), best.safetensors read back (its header only) for the best validation:
// it may come from an earlier session of the run. Status, resumable step and stop reason are the
// caller's.
SessionOutcome progress_outcome(const RunProgress& at, const TrainingData& data, const std::filesystem::path& run_dir,
                                bool read_best);

}  // namespace frugal
