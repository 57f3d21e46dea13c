// What a run is and where it stands (internal to the session): its identity, built once, and the
// trainer state a checkpoint carries beside the model's weights and the optimizer's state. Every
// key of that state is spelled here once (docs/formats.md, "Checkpoint"); their names and values
// are unchanged since version 1, so old runs resume.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "frugal/checkpoint/checkpoint.h"
#include "frugal/training/train_config.h"
#include "frugal/train/amp.h"

namespace frugal {

// The run's identity: its options, the classes and number of its training images and the number of
// processes (the global batch is batch_size x accum x world_size). A resume must find it unchanged
// (learning_changes); config.json and every checkpoint's "config" record it.
struct RunIdentity {
  TrainConfig config;
  std::vector<std::string> classes;
  std::int64_t train_images = 0;
  int world_size = 1;

  nlohmann::json to_json() const;
};

// Where a run stands: the counters, the loader's place and the schedule a checkpoint records, and
// a resumed session starts from.
struct RunState {
  std::int64_t step = 0;                              // optimizer steps done (all sessions)
  std::int64_t epochs_done = 0;                       // epochs completed
  std::int64_t loader_epoch = 0;                      // the loader's epoch and its position in it: where the next
  std::int64_t loader_position = 0;                   // batch comes from
  double lr = 0;                                      // the last step's learning rate
  std::int64_t total_steps = 0;                       // the schedule's end
  int micro_batch = 0;                                // as out-of-memory recovery left it
  int accum = 1;                                      // micro-batches per step at that micro-batch
  nlohmann::json time_budget;                         // the time budget's plan (TimeBudget::to_json); null: none
  nlohmann::json metrics = nlohmann::json::object();  // the last evaluation's
  std::optional<double> val_accuracy;                 // what keep-best ranks by (EvalResult::score())
  bool multi_label = false;                           // it is then the mean AP: named val_mean_ap
  nlohmann::json tail;                                // the schedule's tail after --extend (ScheduleTail); null: none

  // The metadata of a checkpoint (everything but the tensors).
  void to_checkpoint(Checkpoint& ck) const;
  // From a checkpoint a session resumes; `micro_batch` where an old one records none.
  static RunState from_checkpoint(const Checkpoint& ck, int micro_batch);
};

// The schedule of a run gone on with --extend, from `start` (the step it had reached) on: the
// learning rate goes linearly from `from_lr` (where the run was) to `peak` over `warmup` steps,
// then down a cosine to 0 at the run's new last step. Kept in the checkpoint's schedule ("tail"),
// so a later resume continues it.
struct ScheduleTail {
  std::int64_t start = 0, warmup = 0;
  double from_lr = 0, peak = 0;
  double lr(std::int64_t step, std::int64_t total_steps) const;
  nlohmann::json to_json() const;
  // nullopt for null; Error(invalid) naming `where` for anything but a tail's numbers.
  static std::optional<ScheduleTail> from_json(const nlohmann::json& j, const std::string& where);
};

// The trainer's tensors beside the optimizer's: the loss scaler's and the random generators' (the
// CUDA one only on a CUDA device: dropout there draws from it).
void put_trainer_tensors(Checkpoint& ck, const LossScaler& scaler, const torch::Device& device);
void load_trainer_tensors(const Checkpoint& ck, LossScaler& scaler, const torch::Device& device);

}  // namespace frugal
