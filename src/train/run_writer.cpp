// The run folder's writer (frugal/train/run_writer.h).
#include "frugal/train/run_writer.h"

#include "frugal/training/events.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"
#include "frugal/util/progress.h"
#include "frugal/util/units.h"

namespace frugal {
namespace fs = std::filesystem;

nlohmann::json run_config(nlohmann::json fields) {
  fields["format"] = "frugal-run-config";
  fields["version"] = 1;
  return fields;
}

fs::path budget_workspace(const fs::path& run, const std::string& workspace) {
  return workspace.empty() ? fs::absolute(run).parent_path() : fs::path(workspace);
}

RunWriter::RunWriter(fs::path run, bool writes, Env& env) : env_(env), run_(std::move(run)), writes_(writes) {
  claim_ = claim_run_folder(run_, writes_, "training into this run folder");
}

RunWriter::~RunWriter() = default;

void RunWriter::open(const CheckpointOptions& checkpoints, std::optional<DiskBudgetOptions> budget,
                     const std::string& workspace) {
  manager_ = std::make_unique<CheckpointManager>(run_, checkpoints, env_);
  if (!budget || !writes_) return;  // only the writer's disk is budgeted
  budget->own_folder = run_;
  budget_ = std::make_unique<DiskBudget>(budget_workspace(run_, workspace), *budget, env_);
  manager_->set_disk_budget(budget_.get());  // which lets the budget evict the manager's evictable()
}

void RunWriter::require_room_for_run(std::uint64_t weight_bytes, std::uint64_t state_bytes) {
  weight_bytes_ = weight_bytes;
  state_bytes_ = state_bytes;
  if (budget_) manager_->require_room_for_run(weight_bytes_, state_bytes_, kLogReserve);
}

void RunWriter::require_free_space() {
  if (writes_) manager_->require_free_space(weight_bytes_, state_bytes_, kLogReserve);
}

// The lock is still held, so no other training has begun to use the folders (only empty ones go;
// rmdir refuses anything else).
void RunWriter::abandon() const {
  if (!writing_) claim_.undo();
}

void RunWriter::begin_writing(const Start& start) {
  if (writing_) return;
  writing_ = true;
  if (!writes_) return;
  if (int n = manager_->remove_temporaries(); n && start.say_removed)
    note("removed " + std::to_string(n) + (n == 1 ? " leftover temporary file" : " leftover temporary files"));
  if (start.fresh) discard_previous_run();
  if (budget_) budget_->start_watcher();
  const std::string text = start.config.dump(2) + "\n";
  write_atomic(env_, run_ / kConfigFile, [&](WritableFile& f) { f.append(text); });
  writer_ = std::make_unique<CheckpointWriter>(*manager_);
  if (start.events) {
    try {
      events_ = std::make_unique<EventWriter>(run_, env_);
    } catch (const Error& e) {
      log_write_failed("the TensorBoard events", e);
    }
  }
  for (const auto& line : pending_) append_metrics(line);
  pending_.clear();
  for (const TrainPoint& p : points_) point_events(p);  // taken before writing began (a time budget's first steps)
  for (const auto& [step, planned] : plans_) event_scalar("budget/planned_steps", planned, step);
  plans_.clear();
}

// --fresh: the old run's checkpoints carry higher step numbers and would rank newest, and its
// metrics and events would read as this run's: dropped.
void RunWriter::discard_previous_run() {
  manager_->discard_previous();
  env_.remove_file(run_ / kMetricsFile);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(run_, ec))
    if (const auto name = e.path().filename().string();
        name.rfind("events.out.tfevents.", 0) == 0 && name.ends_with(".frugal"))  // never another writer's
      env_.remove_file(e.path());
}

bool RunWriter::may_write(std::uint64_t bytes, const char* what) {
  if (!budget_ || budget_->reserve(bytes)) return true;
  if (!room_warned_)
    warn(std::string("no room within the disk budget for ") + what +
         "; log records are dropped until there is. Free space (frugal du, frugal clean) or raise {disk_budget}");
  room_warned_ = true;
  return false;
}

// A log record that cannot be written (disk full, an I/O error) is dropped with one warning, as
// when the budget has no room: the logs serve the run, they do not stop it. The checkpoints decide
// how the run ends (a disk that stays full skips them, and the final save's failure is exit 4).
void RunWriter::log_write_failed(const char* what, const Error& e) {
  if (!failure_warned_)
    warn(std::string("could not write ") + what + " (" + e.what() + "); log records are dropped, training goes on");
  failure_warned_ = true;
}

void RunWriter::append_metrics(const std::string& line) {
  if (!writes_) return;
  if (!may_write(line.size(), kMetricsFile)) return;
  try {
    auto file = env_.new_appendable_file(run_ / kMetricsFile);
    file->append(line);
    file->close();
  } catch (const Error& e) {
    log_write_failed(kMetricsFile, e);
  }
}

void RunWriter::append_metrics_when_writing(const std::string& line) {
  if (writing_)
    append_metrics(line);
  else
    pending_.push_back(line);
}

void RunWriter::event_scalar(const char* tag, double value, std::int64_t step) {
  if (!events_) return;
  try {
    events_->scalar(tag, static_cast<float>(value), step);
  } catch (const Error& e) {
    events_.reset();
    log_write_failed("the TensorBoard events", e);
  }
}

void RunWriter::point_events(const TrainPoint& p) {
  if (!events_ || !may_write(32 * 5, "the TensorBoard events")) return;
  for (const auto& [tag, value] : p.tags()) event_scalar(tag.c_str(), value, p.step);
}

void RunWriter::train_point(const TrainPoint& p) {
  if (!writes_) return;
  points_.push_back(p);
  point_events(p);
}

void RunWriter::plan_event(const nlohmann::json& record) {
  const nlohmann::json& plan = record.value("time_budget", nlohmann::json::object());
  if (!writes_ || !plan.contains("step") || !plan.contains("total_steps")) return;
  const auto step = plan["step"].get<std::int64_t>();
  const auto planned = plan["total_steps"].get<double>();
  if (!writing_) {
    plans_.emplace_back(step, planned);
  } else if (events_ && may_write(32, "the TensorBoard events")) {
    event_scalar("budget/planned_steps", planned, step);
  }
}

void RunWriter::append_epoch(nlohmann::json record) {
  record["version"] = kMetricsVersion;
  if (!points_.empty()) record["train_points"] = points_json(points_);
  points_.clear();
  append_metrics(record.dump() + "\n");
}

int RunWriter::session_end_code(const std::string& reason) {
  if (reason == "done") return 0;
  if (reason == "deadline") return 1;
  if (reason.rfind("signal", 0) == 0) return 2;
  if (reason == "disk full" || reason.rfind("no room", 0) == 0) return 3;
  if (reason == "undecodable validation images") return 4;
  return 5;
}

void RunWriter::end_session(std::int64_t step, const std::string& reason) {
  if (!writing_) return;
  event_scalar("session/end", session_end_code(reason), step);
  flush_events();
}

void RunWriter::flush_events() {
  if (!events_) return;
  try {
    events_->flush();
  } catch (const Error& e) {
    events_.reset();
    log_write_failed("the TensorBoard events", e);
  }
}

void RunWriter::note_save(const SaveResult& r) {
  if (r.status == SaveResult::Status::disk_full)
    no_room_ = "disk full";
  else if (r.status == SaveResult::Status::skipped_no_room || r.status == SaveResult::Status::weights_only)
    no_room_ = budget_ && budget_->options().limit ? "no room within {disk_budget}" : "no room on the disk";
}

std::string RunWriter::room_hint() const {
  return "free at least " + format_size(manager_->room_for_save(weight_bytes_, state_bytes_, kLogReserve)) +
         " on the disk of " + run_.string() + " (frugal du, frugal clean)" +
         (budget_ && budget_->options().limit ? " or raise {disk_budget}" : "");
}

void RunWriter::close() {
  writer_.reset();
  events_.reset();
  if (manager_) manager_->set_disk_budget(nullptr);
  budget_.reset();
  claim_.lock.reset();
}

void RunWriter::forget_after_fork() {
  (void)writer_.release();
  (void)budget_.release();
  (void)manager_.release();
}

}  // namespace frugal
