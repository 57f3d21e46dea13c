// Everything that writes a run folder, one object for `frugal train`'s session and for
// frugal.Checkpointer alike: the claim (checkpoint_files/run_folder.h), the checkpoint manager and
// its background writer, the disk budget, config.json, metrics.jsonl, the TensorBoard events, the
// warnings when logs find no room, and the rule that nothing is written before training really
// starts (begin_writing()): a run refused before then leaves its folder as it was.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "frugal/budget/budget.h"
#include "frugal/checkpoint/checkpoint.h"
#include "frugal/checkpoint_files/run_folder.h"
#include "frugal/training/train_series.h"
#include "frugal/util/env.h"
#include "frugal/util/error.h"

namespace frugal {

class EventWriter;

// config.json: `fields` stamped with the format and version by which a folder is known as a run
// folder (run_folder.h).
nlohmann::json run_config(nlohmann::json fields);

// The folder {disk_budget} counts: `workspace` when given, else the run folder's parent.
std::filesystem::path budget_workspace(const std::filesystem::path& run, const std::string& workspace);

class RunWriter {
 public:
  // Room kept for what is written besides checkpoints (config.json, metrics.jsonl, events).
  static constexpr std::uint64_t kLogReserve = 1ull << 20;

  // Claims `run`: made, refused when frugal did not make it, and locked when `writes` (rank 0; the
  // other ranks of a training read its checkpoints and never write).
  RunWriter(std::filesystem::path run, bool writes, Env& env = Env::real());
  ~RunWriter();
  RunWriter(const RunWriter&) = delete;
  RunWriter& operator=(const RunWriter&) = delete;

  // The checkpoint manager; with `budget` (its limit) and `writes`, the disk budget over
  // budget_workspace(run, workspace), which may evict what the manager says it may.
  void open(const CheckpointOptions& checkpoints, std::optional<DiskBudgetOptions> budget,
            const std::string& workspace);
  CheckpointManager& manager() { return *manager_; }
  const std::filesystem::path& run() const { return run_; }
  bool writes() const { return writes_; }
  bool writing() const { return writing_; }

  // Before writing: Error(budget) when the disk budget cannot keep the run resumable with
  // checkpoints of these sizes (remembered for require_free_space() and room_hint()).
  void require_room_for_run(std::uint64_t weight_bytes, std::uint64_t state_bytes);
  // Before writing, budget or not: Error(budget) when the disk cannot take the next checkpoint.
  void require_free_space();
  // Refused before writing began: removes the folders the claim made that are still empty.
  void abandon() const;

  // Training really starts: interrupted writes' temporaries removed, with `fresh` the earlier
  // run's checkpoints, metrics and events too; config.json written; the background writer, the
  // budget's watcher and (with `events`) the TensorBoard events started; held records appended.
  // Once only; a writer that writes nothing only notes that training started.
  struct Start {
    nlohmann::json config;
    bool fresh = false, events = false;
    bool say_removed = false;  // note the temporaries removed (the CLI's log)
  };
  void begin_writing(const Start& start);
  CheckpointWriter* writer() { return writer_.get(); }  // null until writing (and when not writes)

  // Logs ask the disk budget too; without room a record is dropped (one warning), not the run.
  bool may_write(std::uint64_t bytes, const char* what);
  // One whole line of metrics.jsonl or nothing (a failed append is cut back: env.h).
  void append_metrics(const std::string& line);
  // As append_metrics, but held until begin_writing() when writing has not begun.
  void append_metrics_when_writing(const std::string& line);
  void event_scalar(const char* tag, double value, std::int64_t step);
  void flush_events();
  // A point of the training curve (TrainSeries): its scalars in the TensorBoard events now (once
  // writing began: those before, then), and in metrics.jsonl with the next epoch record (append_epoch).
  void train_point(const TrainPoint& p);
  // An epoch's record as a line of metrics.jsonl, stamped with its version (kMetricsVersion) and
  // carrying the training curve's points held since the last record ("train_points").
  static constexpr int kMetricsVersion = 2;
  void append_epoch(nlohmann::json record);
  // A time budget's plan or revision (its metrics.jsonl record): budget/planned_steps at the step it
  // was made, in the events now (once writing began: those before, then). A plan made after the
  // last training point still shows.
  void plan_event(const nlohmann::json& record);
  // How the session ended, once writing began: the TensorBoard scalar "session/end" at `step`, its
  // value the reason's code (session_end_code()), flushed. A session killed writes none (the report
  // calls it killed when a later session begins).
  void end_session(std::int64_t step, const std::string& reason);
  // "session/end"'s value (docs/formats.md; src/report/curves.cpp reads it): 0 done, 1 deadline,
  // 2 a signal ("signal ..."), 3 no room (a full disk, the disk budget), 4 undecodable validation
  // images, 5 any other reason.
  static int session_end_code(const std::string& reason);

  // A save that found no room (the disk full, or nothing left within the budget): why, kept. The
  // session ends at the next step, resumable from the last checkpoint saved: training on would
  // only redo steps that no save can keep, and each rerun would train them again.
  void note_save(const SaveResult& r);
  const std::string& no_room() const { return no_room_; }
  // What a user frees (or raises) so that the next save fits.
  std::string room_hint() const;

  // Lets the run folder go (the budget's watcher, the lock); wait for the writer first.
  void close();
  // In a forked child: the writer's and the watcher's threads are the parent's, never joined here.
  void forget_after_fork();

 private:
  void log_write_failed(const char* what, const Error& e);
  void point_events(const TrainPoint& p);
  void discard_previous_run();

  Env& env_;
  std::filesystem::path run_;
  bool writes_;
  RunFolderClaim claim_;  // the folders made for the run, its lock (a writer's), held until close()
  std::unique_ptr<CheckpointManager> manager_;
  std::unique_ptr<DiskBudget> budget_;
  std::unique_ptr<CheckpointWriter> writer_;  // after budget_ and manager_: stops before them
  std::unique_ptr<EventWriter> events_;
  std::uint64_t weight_bytes_ = 0, state_bytes_ = 0;    // what a checkpoint holds, as measured
  std::vector<std::string> pending_;                    // records made before writing began
  std::vector<TrainPoint> points_;                      // the curve's points since the last epoch record
  std::vector<std::pair<std::int64_t, double>> plans_;  // (step, planned steps) made before writing began
  std::string no_room_;
  bool writing_ = false, room_warned_ = false, failure_warned_ = false;
};

}  // namespace frugal
