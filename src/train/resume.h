// Where a training session starts (internal to the session): from step 0, or from the run's latest
// checkpoint, which must learn what the run was learning (a damaged checkpoint is bad input, exit
// 3; a change of what is learned a usage error, exit 2, listing it) and is loaded into the model;
// with --extend, on a new learning-rate tail.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "frugal/checkpoint/checkpoint.h"
#include "frugal/training/train_config.h"
#include "train/horizon.h"
#include "train/model_choice.h"
#include "train/run_progress.h"
#include "train/run_state.h"

namespace frugal {

struct ResumePoint {
  RunProgress at;
  std::int64_t epoch = 0, position = 0;  // the loader's epoch and position the session starts at
  Horizon::Saved schedule;               // the resumed checkpoint's plan and tail, and its path
  bool new_tail = false;                 // --extend starts a tail in this session
  std::optional<RunState> extend_from;   // --extend: where the run was, for Horizon::start_tail
  double saved_peak = 0;                 // --extend: the run's --lr
};

class Resume {
 public:
  Resume(TrainConfig& c, const std::filesystem::path& run_dir, RunIdentity& identity)
      : c_(c), run_dir_(run_dir), identity_(identity) {}
  // Read-only: the checkpoint `manager` resumes from (none with --fresh), refused when it would
  // change what is learned, loaded into `m` (weights, optimizer and trainer state, micro-batch).
  // `--recipe auto` takes the recipe the run chose (in c and the identity, and m's options).
  ResumePoint load(CheckpointManager& manager, TrainedModel& m);

 private:
  void check_learns_the_same(const ModelInfo& info);
  bool check_extension(std::vector<std::string>& changes) const;
  bool check_budget_extension(std::vector<std::string>& changes) const;
  std::string where() const;  // the checkpoint, for messages
  ResumePoint from_checkpoint(TrainedModel& m);
  void take_saved_recipe(TrainedModel& m);

  TrainConfig& c_;
  const std::filesystem::path& run_dir_;
  RunIdentity& identity_;
  std::optional<CheckpointManager::Resume> resume_;
  bool new_tail_ = false;
};

}  // namespace frugal
