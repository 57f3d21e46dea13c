// The run behind `frugal train` (internal): one Session holds a run's session, and its loop reads
// as the algorithm: open the data (TrainingData), choose and build the model (ModelChoice), resume
// (Resume), plan (Horizon), then step, account and save until the plan ends, the deadline comes or
// a signal stops it. What it holds besides lives in those objects; the run folder is RunWriter's.
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "frugal/budget/watchdog.h"
#include "frugal/checkpoint/checkpoint.h"
#include "frugal/training/stop_policy.h"
#include "frugal/training/train_log.h"
#include "frugal/training/train_series.h"
#include "frugal/train/run_writer.h"
#include "frugal/train/step.h"
#include "frugal/training/train_config.h"
#include "frugal/util/env.h"
#include "train/comm.h"
#include "train/distributed.h"
#include "train/horizon.h"
#include "train/make_parallelism.h"
#include "train/model_choice.h"
#include "train/resume.h"
#include "train/run_progress.h"
#include "train/run_state.h"
#include "train/training_data.h"

namespace frugal {

// Everything one run holds; the loop below reads as the algorithm.
//
// The run folder is the session's alone and frugal's (run_: a RunWriter, made before anything in
// it is read): locked, and refused when it holds files frugal did not write.
// Nothing is written until training really starts (begin_writing(), after the first step of the
// session passed the deadline's check): options, data, model, memory, disk budget and free space,
// resume state and the first step are all checked first, so a run refused for any of them leaves
// the run folder as it was ("nothing was changed"), and a folder this run had to create is removed
// again.
class Session {
 public:
  Session(const TrainConfig& c, Env& env)
      : c_(c), env_(env), run_dir_(c.run), last_save_(env.steady_now()), session_start_(last_save_) {}
  ~Session() {
    if (c_.sync_bn) set_batch_norm_sync(nullptr);
  }
  SessionOutcome execute();

 private:
  using Batches = std::vector<std::pair<torch::Tensor, torch::Tensor>>;
  static double seconds_since(Env::SteadyTime t0, Env::SteadyTime t1) {
    return std::chrono::duration<double>(t1 - t0).count();
  }
  SessionOutcome train();
  void build_model();
  void prepare_resume();
  void start_watchdog();
  void start_together();
  void make_loaders();
  void say_plan() const;
  void set_mix();
  void weigh_classes();
  void grow_images(std::int64_t epoch);
  SessionOutcome finish();
  void begin_writing();
  // The epoch loop and its parts, in the order a step goes through them.
  struct NextStep {
    Batches batches;
    std::int64_t samples = 0, position = 0;  // the loader's position after them
  };
  bool train_epoch(std::int64_t epoch, std::int64_t& position);
  void start_epoch(std::int64_t epoch, std::int64_t position);
  bool plan_ends_here();
  NextStep next_batches(std::int64_t position);
  Comm::StepPlan agree_on_step(const NextStep& next);
  StepResult run_step(std::int64_t epoch, const NextStep& next, const Comm::StepPlan& plan);
  void choose_recipe(std::int64_t epoch, std::int64_t position, bool epoch_done);
  void account(std::int64_t epoch, const StepResult& r);
  bool cadence_due(std::int64_t step);
  bool save_due(const Comm::StepPlan& plan);
  bool end_of_epoch(std::int64_t epoch, std::int64_t position);
  bool validation_too_bad(std::int64_t epoch, std::int64_t position);
  std::pair<std::int64_t, std::int64_t> validation_bad_seen();
  void check_validation_up_front();
  void write_epoch_events(const EvalResult& e, double train_accuracy);  // accuracy NaN: not counted
  Checkpoint make_checkpoint(std::int64_t epochs_done, std::int64_t position, std::int64_t loader_epoch) const;
  void checkpoint(std::int64_t epochs_done, std::int64_t position, std::int64_t loader_epoch, bool wait);
  void save(const Checkpoint& ckpt, bool wait);
  void join_group();
  void average_buffers();
  void fits_one_step_together();
  bool rank0() const { return !comm_ || comm_->rank0(); }
  int world() const { return comm_ ? comm_->world() : 1; }
  int replicas() const { return parallel_ ? parallel_->replicas() : 1; }
  std::int64_t global_batch() const { return static_cast<std::int64_t>(c_.batch_size) * c_.accum * replicas(); }
  SessionOutcome stopped();
  SessionOutcome outcome(SessionOutcome::Status status, std::int64_t resumable_step) const;
  bool should_stop(bool eval_due);
  void start_horizon();
  EvalResult evaluate_epoch(double& secs);
  void add_multi_label_figures(const EvalResult& e);
  double session_seconds() const { return seconds_since(session_start_, env_.steady_now()); }

  // Constant after construction.
  TrainConfig c_;  // a copy: --decode auto and the epochs mode are resolved in it
  Env& env_;
  std::filesystem::path run_dir_;

  // Made before training and constant during it: the run's rooms and resources.
  RunIdentity identity_;  // built once the data and the world size are known
  TrainingData data_;     // the training and validation sets, their loaders
  TrainedModel m_;        // the model, its device and precision, optimizer and step options
  std::unique_ptr<TrainStep> step_;
  // The run folder: its claim (the folders made for it, its lock on rank 0), checkpoints, disk
  // budget, config.json, metrics.jsonl and events; made before anything in the folder is read.
  std::unique_ptr<RunWriter> run_;
  std::optional<StopPolicy> stop_;  // deadline, signals and the costs they are decided from; made first
  // Ends the process when a step does not return by the deadline or a signal plus the stop grace
  // (the CLI's sessions, on the real clock). After run_: destroyed before its manager, as it asks it.
  std::optional<Watchdog> watchdog_;
  std::unique_ptr<TrainLog> log_;
  std::optional<TrainSeries> series_;  // the training curve's points (training/train_series.h)
  std::optional<DistEnv> dist_env_;    // launched by torchrun as one of several ranks
  std::unique_ptr<Comm> comm_;         // the wire to the run's other processes (solo: none), once the device is known
  std::unique_ptr<Parallelism> parallel_;  // where the model lives over them (data parallel, pipeline stages)
  ResumePoint from_;                       // where this session started: the resumed step, loader position and plan
  std::int64_t steps_per_epoch_ = 0;
  int train_size_ = 0;  // --progressive: the training batches' image size now (0: the model's)

  // Per session: where the run stands and what the session has told and written.
  Env::SteadyTime last_save_;
  Env::SteadyTime session_start_;  // this session's time counts against a time budget
  RunProgress at_;                 // where the run stands: step, epochs, learning rate, the last validation
  std::int64_t session_steps_ = 0;
  std::optional<Horizon> horizon_;  // where the run ends: epochs or a time budget, and the learning rate
  std::string stop_reason_;
  std::string resume_hint_;  // what a rerun must change to continue (stopped()); "": nothing
  EpochTally epoch_;         // the current epoch's figures, and when the step's agreement began
};

}  // namespace frugal
