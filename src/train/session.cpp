// The run behind `frugal train`: data, model, resume, the epoch loop, evaluation, checkpoints,
// metrics, and stopping resumable on a deadline or signal.
#include "train/session.h"

#include <cmath>

#include "frugal/budget/budget.h"
#include "frugal/checkpoint_files/run_folder.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"
#include "frugal/util/progress.h"
#include "frugal/util/units.h"
#include "frugal/training/global_batch.h"
#include "frugal/train/train_session.h"
#include "frugal/budget/time_budget.h"
#include "frugal/image/image.h"
#include "frugal/training/class_weights.h"
#include "frugal/training/recipe.h"
#include "frugal/util/terminal.h"
#include "train/batch_mix.h"
#include "train/device.h"

namespace frugal {
namespace fs = std::filesystem;
namespace {

// The weights' average (--ema) in the model for a scope: swapped in, and back out however the
// scope ends.
class AverageInPlace {
 public:
  explicit AverageInPlace(WeightAverage* average) : average_(average) {
    if (average_) average_->swap();
  }
  ~AverageInPlace() {
    if (average_) average_->swap();
  }
  AverageInPlace(const AverageInPlace&) = delete;
  AverageInPlace& operator=(const AverageInPlace&) = delete;

 private:
  WeightAverage* average_;
};

// The seed of the mixup/cutmix draw for the `batch`th batch of step `step` on `replica`: a stream
// of its own, so the loaders' sample seeds stay what they were.
std::uint64_t mix_draw_seed(std::uint64_t seed, std::int64_t step, int replica, std::size_t batch) {
  constexpr std::uint64_t kMixStream = 0x6d69787570ULL;  // "mixup"
  std::uint64_t s = mix_seed(mix_seed(seed, kMixStream), static_cast<std::uint64_t>(step));
  return mix_seed(mix_seed(s, static_cast<std::uint64_t>(replica)), batch);
}

}  // namespace

// The model (ModelChoice), placed on its device and ready to train. A pipeline's stage (which
// pieces go to this rank's device) is decided with the other ranks first.
void Session::build_model() {
  m_ = ModelChoice(c_, data_, dist_env_).make();
  if (c_.pipeline > 1) join_group();
  if (parallel_)
    parallel_->place(*m_.model, m_.device);
  else
    m_.model->to(m_.device);
  m_.prepare_to_train(c_);
}

// Read-only: builds the checkpoint manager and disk budget, refuses a budget that cannot keep the
// run resumable (exit 4 now, rather than a run that saves nothing a rerun can continue from), and
// finds and loads the checkpoint to resume from (Resume). begin_writing() makes the changes
// (temporaries removed, --fresh's discards).
void Session::prepare_resume() {
  CheckpointOptions co;
  co.retention.keep_best = c_.keep_best;
  co.retention.keep_last = c_.keep_last;
  co.delta = c_.delta;
  std::optional<DiskBudgetOptions> bo;
  if (c_.disk_budget) bo = disk_budget_options(c_, run_dir_);
  run_->open(co, bo, c_.workspace);  // the budget: rank 0's, the one that writes
  if (watchdog_) watchdog_->set_resumable_probe([m = &run_->manager()] { return m->resumable_step(); });
  const auto [weight_bytes, state_bytes] = m_.checkpoint_bytes();
  run_->require_room_for_run(weight_bytes, state_bytes);
  from_ = Resume(c_, run_dir_, identity_).load(run_->manager(), m_);
  at_ = from_.at;
}

// Training really starts: from here on the run folder changes.
// (Rank 0 writes the run folder; the others only train.)
void Session::begin_writing() {
  if (run_->writing()) return;
  RunWriter::Start start;
  if (rank0()) start.config = m_.config_json(identity_, data_.decided);
  start.fresh = c_.fresh;
  start.events = start.say_removed = true;
  run_->begin_writing(start);
}

Checkpoint Session::make_checkpoint(std::int64_t epochs_done, std::int64_t position, std::int64_t loader_epoch) const {
  RunState s = at_.state(epochs_done, loader_epoch, position);
  s.micro_batch = step_->micro_batch();
  s.accum = c_.accum * (c_.batch_size / std::max(1, step_->micro_batch()));
  horizon_->save_to(s);
  s.multi_label = m_.info.multi_label;
  return m_.checkpoint(s, identity_);
}

// Stopped resumable only when a rerun really continues: from this step when its checkpoint was
// saved, else from the last one saved; with none saved a rerun would start over, which is a
// budget failure.
SessionOutcome Session::stopped() {
  if (rank0()) run_->end_session(at_.step, stop_reason_);  // the report marks the cut
  const std::optional<std::int64_t> mine = rank0() ? run_->manager().resumable_step() : std::nullopt;
  const std::int64_t saved = comm_->from_rank0(mine.value_or(-1));  // rank 0 saved: every rank reports that
  const std::string at = "stopped (" + stop_reason_ + ") at step " + std::to_string(at_.step);
  if (saved == at_.step) {
    note(at + ", saved; " + (resume_hint_.empty() ? "run the same command again to continue" : resume_hint_));
    return outcome(SessionOutcome::Status::stopped_resumable, saved);
  }
  if (saved >= 0) {
    note(at + "; its checkpoint was not saved, so a rerun continues from step " + std::to_string(saved) +
         " (the last checkpoint saved) and redoes the steps after it; " +
         (run_->no_room().empty() ? std::string() : run_->room_hint() + ", then ") +
         "run the same command again to continue");
    return outcome(SessionOutcome::Status::stopped_resumable, saved);
  }
  fail(ErrorKind::budget, run_dir_.string(), "a resumable checkpoint saved before stopping",
       "none (" + at + ", no checkpoint fit)",
       "a rerun would start over at step 1; free space (frugal du, frugal clean) or raise {disk_budget}");
}

// What the run reached, for train --json (progress_outcome).
SessionOutcome Session::outcome(SessionOutcome::Status status, std::int64_t resumable_step) const {
  SessionOutcome o = progress_outcome(at_, data_, run_dir_, rank0());
  o.status = status;
  o.resumable_step = resumable_step;
  if (status != SessionOutcome::Status::done) o.stop_reason = stop_reason_;
  return o;
}

// Every rank calls this at the same step: the BatchNorm statistics are made equal first, then rank 0
// saves.
void Session::checkpoint(std::int64_t epochs_done, std::int64_t position, std::int64_t loader_epoch, bool wait) {
  average_buffers();
  parallel_->gather(*m_.model, m_.opt);  // a pipeline's stages into rank 0's copy
  if (rank0()) save(make_checkpoint(epochs_done, position, loader_epoch), wait);
}

// A background save costs the loop only its snapshot, but the save made when stopping is waited
// for: under a deadline the first save of a session is waited for too, so that the deadline
// plans with what a whole save takes (and later saves count as at least that).
void Session::save(const Checkpoint& ckpt, bool wait) {
  begin_writing();
  wait = wait || stop_->wants_whole_save();
  auto t0 = env_.steady_now();
  CheckpointWriter& writer = *run_->writer();
  run_->note_save(writer.wait());  // the previous save's result, which submit() would not tell
  writer.submit(ckpt);
  if (wait) {
    auto r = writer.wait();  // what a rerun resumes from is decided by stopped()
    if (!r.message.empty()) note(r.message);
    run_->note_save(r);
  }
  last_save_ = env_.steady_now();
  stop_->save_took(seconds_since(t0, last_save_), wait);
}

bool Session::should_stop(bool eval_due) {
  if (CheckpointWriter* w = run_->writer(); w && !w->busy()) run_->note_save(w->wait());  // a background save done
  if (!run_->no_room().empty()) {
    stop_reason_ = run_->no_room();
    return true;
  }
  if (auto why = stop_->before_step(eval_due)) {
    stop_reason_ = why->text;
    return true;
  }
  return false;
}

// Joins the ranks torchrun started (distributed.h); one process with --sync-bn normalises through
// the same code, its own batch being the whole batch.
void Session::join_group() {
  if (comm_) return;  // a pipeline joined before placing the model
  PipelineOptions pipeline;
  if (c_.pipeline > 1) {
    if (!dist_env_)
      fail(ErrorKind::usage, "{pipeline} " + std::to_string(c_.pipeline),
           std::to_string(c_.pipeline) + " processes, one per stage", "one process",
           "add {nproc} " + std::to_string(c_.pipeline) + ", or start the command with torchrun --nproc-per-node " +
               std::to_string(c_.pipeline));
    pipeline.stages = c_.pipeline;
    pipeline.micro_batches = c_.micro_batches;
    pipeline.split = c_.pipeline_split;
    pipeline.balance = c_.pipeline_balance;
    pipeline.sample = {std::max(1, (c_.batch_size + c_.micro_batches - 1) / c_.micro_batches), m_.info.channels,
                       m_.info.image_size, m_.info.image_size};
    pipeline.amp = m_.amp;
  }
  comm_ = Comm::join(dist_env_, m_.device, std::chrono::duration_cast<std::chrono::milliseconds>(c_.dist_timeout),
                     [this] { return stop_->signalled(); });
  parallel_ = make_parallelism(*comm_, pipeline);
  Comm* g = comm_.get();
  if (c_.sync_bn)
    set_batch_norm_sync([g](torch::Tensor& t) {
      std::vector<torch::Tensor> one{t};
      g->sum(one);
    });
  if (!g->grouped()) return;
  note(parallel_->describe() + ", a global batch of " + count_of(static_cast<std::uint64_t>(global_batch()), "image") +
       (c_.pipeline > 1 ? ", batch norm per micro-batch"
        : c_.sync_bn    ? ", batch norm over all ranks"
                        : ", batch norm per rank (averaged before evaluating and saving)"));
}

// BatchNorm running statistics differ between ranks that normalise by their own batches: before
// evaluating and saving they are averaged, so that every rank evaluates and rank 0 saves one model
// whose statistics come from all the data seen (an average of estimates over equal shares; a
// broadcast of rank 0's would throw the others' away). With --sync-bn they are equal already.
void Session::average_buffers() {
  if (!comm_->grouped()) return;  // one process's statistics are the mean already
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> floating;
  for (auto& b : m_.model->buffers())
    if (b.is_floating_point()) floating.push_back(b);
  if (m_.ema)  // the average's statistics too: every rank evaluates, and rank 0 saves, the same
    for (auto& b : m_.ema->floating_buffers()) floating.push_back(b);
  parallel_->average(floating);
}

// The first step's deadline check, decided together: a rank whose deadline cannot hold a step and
// a save says so, and every rank refuses (exit 4, nothing written yet) instead of the others
// waiting for it in vain (exit 1). Every rank takes part, with a deadline or not.
void Session::fits_one_step_together() {
  std::optional<Error> mine;
  try {
    stop_->check_fits_first_step();
  } catch (const Error& e) {
    mine = e;
  }
  const bool any = comm_->any(mine.has_value());
  if (mine) throw *mine;
  if (any)
    fail(ErrorKind::budget, "deadline", "time for at least one step and a save on every process",
         "a process whose deadline is too close (its own message says how much it needs)",
         "give a later deadline, or a smaller batch or image size; nothing was changed");
}

// An epoch starts: the loader at its position, this epoch's figures from zero.
void Session::start_epoch(std::int64_t epoch, std::int64_t position) {
  grow_images(epoch);
  stop_->restart_step_clock();  // this epoch's first step waits for the loader to start
  data_.train_loader->start(epoch, position);
  epoch_ = EpochTally{};
  epoch_.step = position == 0 ? 0 : at_.step - epoch * steps_per_epoch_;
  epoch_.comm_at_start = comm_->comm_seconds();
  epoch_.gradient_at_start = comm_->gradient_seconds();
}

// Whether the plan of a time budget ends before this step (mid-epoch too): then evaluate and save.
// With several ranks rank 0's plan decides, in the step's agreement.
bool Session::plan_ends_here() {
  horizon_->update(at_.step, false);
  return !comm_->grouped() && horizon_->ended(at_.step);
}

// The next step's batches: `accum` of them, fewer at the epoch's end, none after it.
Session::NextStep Session::next_batches(std::int64_t position) {
  NextStep next;
  next.position = position;
  for (int i = 0; i < c_.accum; ++i) {
    auto b = data_.train_loader->next();
    if (!b) break;
    next.batches.emplace_back(b->images, b->labels);
    next.samples += b->images.size(0);
    next.position = b->position;
  }
  return next;
}

bool Session::cadence_due(std::int64_t step) {
  const auto& every = c_.save_every;
  const double since_save = seconds_since(last_save_, env_.steady_now());
  return horizon_->planned() && ((every.steps > 0 && step % every.steps == 0) ||
                                 (every.every.count() > 0 && since_save >= static_cast<double>(every.every.count())));
}

// What every process agrees on before the step: a stop asked for anywhere (signal, deadline), the
// step's samples over all, rank 0's plan (steps, learning rate). A group decides rank 0's save
// cadence here; one process after the step (save_due).
Comm::StepPlan Session::agree_on_step(const NextStep& next) {
  using Plan = Comm::StepPlan;
  const bool last_of_epoch = epoch_.step + 1 >= steps_per_epoch_ || horizon_->last(at_.step);
  const bool stop = should_stop(last_of_epoch);
  at_.lr = horizon_->lr(at_.step);
  epoch_.agreed_from = env_.steady_now();
  Plan mine;
  mine.stop = !stop                                  ? Plan::Stop::none
              : stop_reason_.rfind("signal", 0) == 0 ? Plan::Stop::signal
                                                     : Plan::Stop::deadline;
  mine.samples = parallel_->reads_images() ? next.samples : 0;  // a later pipeline stage's are the first's
  mine.total_steps = horizon_->total_steps();
  mine.lr = at_.lr;
  mine.save_after = comm_->grouped() && cadence_due(at_.step + 1);
  const Plan plan = comm_->agree_on_step(mine);
  horizon_->agree(plan.total_steps);
  if (plan.stop != Plan::Stop::none && !stop)  // one deadline for all
    stop_reason_ = plan.stop == Plan::Stop::signal ? "signal on another rank" : "deadline";
  at_.lr = plan.lr;
  return plan;
}

StepResult Session::run_step(std::int64_t epoch, const NextStep& next, const Comm::StepPlan& plan) {
  set_lr(m_.opt, at_.lr);
  // Dropout on each rank draws from a generator seeded by (seed, rank, step): the checkpoint holds
  // rank 0's generator only, and ranks that drew for batches of other sizes would not resume as
  // they ran. So a resumed rank draws what it would have drawn, whatever the world size before.
  parallel_->seed_step(c_.seed, at_.step);
  StepResult r = step_->run(next.batches, plan.samples);
  const auto t1 = env_.steady_now();
  stop_->step_ended(t1);  // from the last step's end: the wait for its batches included
  epoch_.step_seconds += seconds_since(epoch_.agreed_from, t1);
  epoch_.step_ended = t1;
  // The first step of each session measures what one costs: a deadline that cannot hold it and
  // a save is refused now, before the run folder changes (exit 4, nothing was changed).
  if (session_steps_ == 0) fits_one_step_together();
  ++session_steps_;
  // A time budget too short for one epoch is refused at the first plan, a few steps in: until
  // then nothing is written either.
  if (horizon_->planned()) {
    choose_recipe(epoch, next.position, false);
    begin_writing();
  }
  return r;
}

// The step's figures: counters, the epoch's mean loss, the log and TensorBoard.
void Session::account(std::int64_t epoch, const StepResult& r) {
  ++at_.step;
  if (m_.ema) m_.ema->update(at_.step);
  epoch_.add(r);
  log_->step(at_.step, horizon_->total_steps(), epoch, r, at_.lr);
  const std::int64_t planned = c_.epochs_auto() && horizon_->planned() ? horizon_->total_steps() : -1;
  // Before a time budget's plan its total is a placeholder: the points are spaced for one epoch.
  const std::int64_t total = horizon_->planned() ? horizon_->total_steps() : steps_per_epoch_;
  auto scale = [this] { return m_.scaler->scale_value(); };
  if (auto p = series_->step(at_.step, total, r.loss, r.samples, at_.lr, scale, planned, epoch_.agreed_from,
                             epoch_.step_ended);
      p && rank0())
    run_->train_point(*p);
}

bool Session::save_due(const Comm::StepPlan& plan) {
  return comm_->grouped() ? plan.save_after : cadence_due(at_.step);
}

// Returns false when the run must stop (saved) before the epoch ends.
bool Session::train_epoch(std::int64_t epoch, std::int64_t& position) {
  start_epoch(epoch, position);
  for (;;) {
    if (plan_ends_here()) return true;
    const NextStep next = next_batches(position);
    if (next.batches.empty()) return true;  // every rank has as many batches (EpochPlan)
    const Comm::StepPlan plan = agree_on_step(next);
    if (horizon_->ended(at_.step)) return true;  // rank 0's plan ended here
    if (plan.stop != Comm::StepPlan::Stop::none) {
      checkpoint(epoch, position, epoch, true);
      return false;
    }
    const StepResult r = run_step(epoch, next, plan);
    position = next.position;
    account(epoch, r);
    if (save_due(plan)) checkpoint(epoch, position, epoch, false);
  }
}

// The epoch's evaluation, its seconds in `secs`; with nothing to validate on (--val-split 0) none:
// 0 samples, and the run's last validation accuracy stays unset, so best.safetensors is the newest.
EvalResult Session::evaluate_epoch(double& secs) {
  secs = 0;
  if (data_.val->size() == 0) return {};
  auto t0 = env_.steady_now();
  AverageInPlace average(m_.ema.get());  // with --ema the average is what is evaluated
  const Parallelism::Evaluation how = parallel_->for_evaluation(*m_.model, *data_.val_loader, m_.eval_options);
  EvalResult e =
      evaluate(how.model, how.batches, static_cast<int>(data_.classes.size()), m_.step_options, &m_.eval_options);
  secs = seconds_since(t0, env_.steady_now());
  stop_->eval_took(secs);
  at_.val_accuracy = e.score();
  if (e.multi_label && c_.tune_thresholds) {  // saved with this epoch's checkpoint (ModelInfo)
    m_.info.thresholds.clear();
    for (double t : e.best_thresholds)
      m_.info.thresholds.push_back(std::isnan(t) ? m_.info.threshold : static_cast<float>(t));
  }
  return e;
}

// metrics.jsonl's multi-label figures: val_accuracy is the share of images with every tag right,
// per_class each class's figures as eval --json gives them (AP, precision, recall, F1, ...).
void Session::add_multi_label_figures(const EvalResult& e) {
  const nlohmann::json j = e.to_json(data_.classes);
  for (const char* key : {"mean_ap", "f1", "precision", "recall"}) at_.metrics[std::string("val_") + key] = j[key];
  at_.metrics["threshold"] = c_.threshold;
  if (!m_.info.thresholds.empty()) at_.metrics["thresholds"] = m_.info.thresholds;
}

// The epoch's validation in the TensorBoard events, flushed.
void Session::write_epoch_events(const EvalResult& e, double train_accuracy) {
  if (std::isfinite(train_accuracy) && rank0() && run_->may_write(64, "the TensorBoard events"))
    run_->event_scalar("train/accuracy", train_accuracy, at_.step);
  if (e.samples > 0 && rank0() && run_->may_write(128, "the TensorBoard events")) {
    run_->event_scalar("val/loss", e.loss, at_.step);
    run_->event_scalar("val/accuracy", e.accuracy, at_.step);
    if (e.multi_label) {
      run_->event_scalar("val/mean_ap", e.mean_ap, at_.step);
      run_->event_scalar("val/f1", e.f1, at_.step);
    }
  }
  run_->flush_events();
}

// Validation's undecodable images and images seen since its loader's start(), every rank's summed.
std::pair<std::int64_t, std::int64_t> Session::validation_bad_seen() {
  return data_.validation_bad_seen([this](std::vector<torch::Tensor>& t) { comm_->sum(t); }, m_.device);
}

void Session::check_validation_up_front() {
  data_.check_validation_up_front(
      c_, env_, [this](std::vector<torch::Tensor>& t) { comm_->sum(t); }, m_.device);
}

// Undecodable validation images count against {max_bad_fraction} as training's do, over every
// rank's shard. Past it the epoch's training is kept: saved at the epoch's end, before its
// evaluation, so a rerun that leaves the files out (--exclude, named here) evaluates it again and
// goes on; nothing of the epoch is trained twice. Returns true when the run stopped so.
bool Session::validation_too_bad(std::int64_t epoch, std::int64_t position) {
  const auto [bad, seen] = validation_bad_seen();
  if (bad == 0 || static_cast<double>(bad) <= c_.max_bad_fraction * static_cast<double>(seen)) return false;
  const auto [names, excludes] = data_.bad_validation_files();
  warn(std::to_string(bad) + " of " + std::to_string(seen) + " validation images are undecodable, more than " +
       "{max_bad_fraction} " + std::to_string(c_.max_bad_fraction) + " allows: " + names);
  stop_reason_ = "undecodable validation images";
  resume_hint_ = "run the same command with" + excludes +
                 " to leave them out (or replace them), and it evaluates epoch " + std::to_string(epoch + 1) +
                 " again and continues";
  checkpoint(epoch, position, epoch, true);
  return true;
}

bool Session::end_of_epoch(std::int64_t epoch, std::int64_t position) {
  // An epoch shorter than the steps timed for the first plan is planned here, before writing. A
  // plan made at the loop's top (plan_ends_here) may end the epoch before a step began writing.
  if (!horizon_->planned()) horizon_->update(at_.step, true);
  if (horizon_->planned()) choose_recipe(epoch, position, true);
  begin_writing();
  const double step_comm = comm_->comm_seconds() - epoch_.comm_at_start;  // the steps' collectives
  average_buffers();  // every rank evaluates the same model, on its shard of the validation set
  double secs = 0;
  const EvalResult e = evaluate_epoch(secs);
  if (validation_too_bad(epoch, position)) return false;
  const bool validating = e.samples > 0;  // --val-split 0: no validation figures (best: the newest)
  at_.epochs_done = epoch + 1;
  nlohmann::json per = e.to_json(data_.classes)["per_class"];
  const double train_loss = epoch_.mean_loss(), train_accuracy = epoch_.accuracy();
  at_.metrics = {{"epoch", epoch + 1},
                 {"step", at_.step},
                 {"train_loss", train_loss},
                 {"val_loss", e.loss},
                 {"val_accuracy", e.accuracy},
                 {"val_samples", e.samples},
                 {"per_class", per},
                 {"lr", at_.lr},
                 {"micro_batch", step_->micro_batch()},
                 {"images_per_s", log_->images_per_second()},
                 {"eval_seconds", secs},
                 {"train_skipped", data_.train ? data_.train->skipped().counts : data_.skipped}};
  if (validating && e.multi_label) add_multi_label_figures(e);
  if (std::isfinite(train_accuracy)) at_.metrics["train_accuracy"] = train_accuracy;
  if (!validating)
    for (const char* key : {"val_loss", "val_accuracy", "val_samples", "per_class"}) at_.metrics.erase(key);
  if (comm_->grouped()) {
    // The share of the epoch's steps spent in collectives (waiting for the slowest rank included).
    at_.metrics["world_size"] = world();
    at_.metrics["step_seconds"] = epoch_.step_seconds;
    at_.metrics["comm_seconds"] = step_comm;
    at_.metrics["gradient_comm_seconds"] = comm_->gradient_seconds() - epoch_.gradient_at_start;
  }
  if (nlohmann::json figures = parallel_->epoch_figures(); !figures.is_null()) at_.metrics["pipeline"] = figures;
  log_->epoch(epoch, horizon_->epochs_to_show(epoch, at_.step), e);
  run_->append_epoch(at_.metrics);
  write_epoch_events(e, train_accuracy);
  checkpoint(epoch + 1, 0, epoch + 1, false);
  if (horizon_->update(at_.step, true))
    horizon_->agree(comm_->from_rank0(horizon_->total_steps()));  // the loop's end is rank 0's plan
  return true;
}

// Where the run ends (Horizon): after --epochs, or (epochs auto) where the steps planned to fit the
// time budget end (budget/time_budget.h; a resumed run continues the plan its checkpoint holds);
// with --extend, on a new learning-rate tail over the steps planned for the new epochs or budget.
void Session::start_horizon() {
  Horizon::Options ho;
  ho.steps_per_epoch = steps_per_epoch_;
  ho.epochs = c_.epochs;
  ho.lr = c_.lr;
  ho.warmup_fraction = c_.warmup_fraction;
  ho.images_per_step = global_batch();
  auto tell = [this](const std::string& line, const nlohmann::json& record) {
    if (!line.empty()) note(line);
    if (record.is_null()) return;
    run_->append_metrics_when_writing(record.dump() + "\n");
    if (rank0()) run_->plan_event(record);
  };
  horizon_.emplace(
      ho, from_.schedule, [this] { return session_seconds(); }, tell);
  if (c_.epochs_auto()) {
    TimeBudget::Options o;
    o.budget = static_cast<double>(c_.time_budget.seconds.count());
    o.steps_per_epoch = steps_per_epoch_;
    // An evaluation is a forward pass over the validation images: about a third of a step's work
    // per image, until one is timed.
    o.eval_in_steps = static_cast<double>(data_.val->size()) / static_cast<double>(global_batch()) / 3.0;
    horizon_->follow_budget(stop_->plan_for(o), {o.budget, c_.time_budget.text}, at_.step, from_.new_tail);
  }
  if (from_.extend_from) horizon_->start_tail(at_.step, from_.extend_from->lr, from_.saved_peak, c_.lr);
}

SessionOutcome Session::execute() {
  try {
    return train();
  } catch (...) {
    // Refused before training started: leave no folder behind that this run made.
    if (run_) run_->abandon();
    throw;
  }
}

SessionOutcome Session::train() {
  validate(c_);  // the rules between options, as the command line applies them
  stop_.emplace(env_, c_.deadline);
  start_watchdog();
  dist_env_ = dist_env();
  // The run folder is made, locked and refused when frugal did not make it (run_folder.h's
  // claim_run_folder); only rank 0 writes the run folder, so only rank 0 locks it.
  run_ = std::make_unique<RunWriter>(run_dir_, !dist_env_ || dist_env_->rank == 0, env_);
  stop_->check_time_left();
  if (c_.deterministic) at::globalContext().setDeterministicAlgorithms(true, false);
  if (dist_env_ && dist_env_->rank != 0) Progress::set_quiet(true);  // rank 0 speaks for the run
  data_ = TrainingData::open(c_, run_dir_, env_);
  build_model();
  weigh_classes();
  c_.decode = choose_decode(c_, m_.device, *data_.train);
  join_group();
  if (c_.recipe == "auto" && comm_->grouped()) {  // each process would plan alone
    note("recipe: default (auto chooses from one process's plan; with several processes, give {recipe})");
    apply_recipe(c_, "default");
  }
  identity_ = {c_, data_.classes, static_cast<std::int64_t>(data_.train->size()), replicas()};
  prepare_resume();
  start_together();
  stop_->check_time_left();
  make_loaders();
  start_horizon();
  if (horizon_->work_left(at_.step, from_.epoch))
    run_->require_free_space();  // a run with nothing left to train saves nothing
  if (comm_->grouped() && c_.sync_bn) m_.step_options.equal_forwards = c_.batch_size;
  step_ = parallel_->make_step(*m_.model, *m_.opt.optimizer, *m_.scaler, m_.step_options);
  set_mix();
  log_ = std::make_unique<TrainLog>(c_.json, env_);
  say_plan();
  check_validation_up_front();
  series_.emplace(env_);  // the first point's images/s counts from the first step's start

  for (std::int64_t epoch = from_.epoch; horizon_->more(at_.step, epoch); ++epoch) {
    std::int64_t position = epoch == from_.epoch ? from_.position : 0;
    if (!train_epoch(epoch, position)) return stopped();
    if (!end_of_epoch(epoch, position)) return stopped();
  }
  return finish();
}

// --progressive: this epoch's training image size (progressive_size, over the epochs planned so
// far: a time budget's plan may move the ramp); a new size makes new loaders, the batch kept.
void Session::grow_images(std::int64_t epoch) {
  if (c_.progressive <= 0) return;
  const std::int64_t epochs =
      c_.epochs_auto() ? (horizon_->total_steps() + steps_per_epoch_ - 1) / std::max<std::int64_t>(1, steps_per_epoch_)
                       : c_.epochs;
  const int size = progressive_size(c_.progressive, m_.info.image_size, epoch, epochs);
  if (size == (train_size_ > 0 ? train_size_ : m_.info.image_size)) return;
  train_size_ = size == m_.info.image_size ? 0 : size;
  note("epoch " + std::to_string(epoch + 1) + ": training images of " + std::to_string(size) + " px ({progressive} " +
       std::to_string(c_.progressive) + " to " + std::to_string(m_.info.image_size) + ")");
  make_loaders();
}

// --recipe auto with a time budget, once the plan is made (before anything is written): the recipe
// for the epochs it buys (training/recipe.h), said in one line and recorded in config.json. Its
// options take effect from the next step: the steps before it trained with the defaults, and no
// checkpoint holds them, so a resumed run and an uninterrupted one train alike from every
// checkpoint on. A new augmentation restarts the training loader where it stands.
void Session::choose_recipe(std::int64_t epoch, std::int64_t position, bool epoch_done) {
  if (c_.recipe != "auto") return;
  const double epochs = static_cast<double>(horizon_->total_steps()) / static_cast<double>(steps_per_epoch_);
  const std::string name = recipe_for_epochs(epochs);
  const AugmentOptions augment_before = c_.augment;
  if (c_.decode == DecodeChoice::gpu)  // its kernel crops, resizes and flips only: keep the augmentation
    for (const char* key : {"augment", "random_erasing"}) c_.given.emplace_back(key);
  std::vector<std::string> set = apply_recipe(c_, name);
  std::string without;
  // Checkpoints with the weights' average hold the weights twice (a third larger with AdamW's
  // state): a run sized to a disk budget would stop for room, so under one auto leaves it out.
  if (c_.ema > 0 && !m_.ema && c_.disk_budget) {
    c_.ema = 0;
    std::erase_if(set, [](const std::string& s) { return s.rfind("ema ", 0) == 0; });
    without =
        " (without its weight average, whose checkpoints are a third larger: {disk_budget} is set; give {ema} "
        "to have it)";
  }
  identity_.config = c_;
  std::string list;
  for (const std::string& s : set) list += (list.empty() ? "" : ", ") + s;
  char planned[32];
  std::snprintf(planned, sizeof planned, "%.1f", epochs);
  note("recipe: " + name + " (auto: the time budget buys " + planned + " epochs; {recipe} chooses another)" +
       (list.empty() ? std::string() : ": " + list) + without);
  m_.apply_recipe(c_);
  step_->set_label_smoothing(c_.label_smoothing);
  set_mix();
  if (c_.augment == augment_before) return;
  make_loaders();
  if (!epoch_done) data_.train_loader->start(epoch, position);
}

// --class-weights: each class's weight in the training loss, from the training set's counts or a
// file, said in one line.
void Session::weigh_classes() {
  if (c_.class_weights.empty() && !c_.balanced_sampler) return;
  if (m_.info.multi_label)
    fail(ErrorKind::usage, c_.balanced_sampler ? "{sampler} balanced" : "{class_weights} " + c_.class_weights,
         "data of one class per image", "tags (multi-label data)",
         "leave it out: an image with several tags has no one class to weigh");
  std::vector<std::int64_t> counts(data_.classes.size(), 0);
  for (std::size_t i = 0; i < data_.train->size(); ++i)
    if (const int label = data_.train->label(i); label >= 0) ++counts[static_cast<std::size_t>(label)];
  if (c_.balanced_sampler) {  // each class drawn alike: its images share one class's weight
    data_.sample_weights.assign(data_.train->size(), 0.0);
    for (std::size_t i = 0; i < data_.train->size(); ++i)
      if (const int label = data_.train->label(i); label >= 0)
        data_.sample_weights[i] = 1.0 / static_cast<double>(counts[static_cast<std::size_t>(label)]);
    note("sampler: balanced (each epoch draws " + count_of(data_.train->size(), "image") +
         " with replacement, every class alike)");
  }
  if (c_.class_weights.empty()) return;
  const std::vector<double> w = class_weights(c_.class_weights, data_.classes, counts);
  std::string line;
  for (std::size_t i = 0; i < w.size() && i < 8; ++i) {
    char v[32];
    std::snprintf(v, sizeof v, "%.3g", w[i]);
    line += (i ? ", " : "") + printable(data_.classes[i]) + " " + v;
  }
  if (w.size() > 8) line += ", ... (" + std::to_string(w.size()) + " classes)";
  note("class weights (" + std::string(c_.class_weights == "auto" ? "balanced" : c_.class_weights) + "): " + line);
  for (std::size_t i = 0; i < w.size(); ++i)
    if (counts[i] == 0 && c_.class_weights == "auto")
      warn("class " + printable(data_.classes[i]) + " has no training image: weight 0");
  m_.step_options.class_weights =
      torch::tensor(std::vector<float>(w.begin(), w.end()), torch::TensorOptions().dtype(torch::kFloat32))
          .to(m_.device);
}

// --mixup/--cutmix: the step mixes each batch with a draw of its own (train/batch_mix.h).
void Session::set_mix() {
  MixOptions o;
  o.mixup = c_.mixup;
  o.cutmix = c_.cutmix;
  o.label_smoothing = c_.label_smoothing;
  o.classes = static_cast<int>(data_.classes.size());
  o.multi_label = m_.info.multi_label;
  if (!o.enabled()) return;
  step_->mix = [this, o](torch::Tensor& x, const torch::Tensor& labels, std::size_t batch) {
    const std::uint64_t seed = mix_draw_seed(c_.seed, at_.step, parallel_->replica(), batch);
    return mix_batch(x, labels, draw_mix(o, x.size(2), x.size(3), seed), o);
  };
}

// The deadline and signals held against a step that never returns (a module's forward can loop
// forever): on the real clock only (a fake one's deadline means nothing to the watchdog's).
void Session::start_watchdog() {
  if (&env_ != &Env::real()) return;
  std::optional<Watchdog::Clock::time_point> end;
  if (const auto& d = stop_->deadline())
    end = Watchdog::Clock::now() +
          std::chrono::duration_cast<Watchdog::Clock::duration>(std::chrono::duration<double>(d->remaining_seconds()));
  watchdog_.emplace(end, c_.stop_grace, &stop_->signals());
}

// With several ranks, one start for all: rank 0's parameters and buffers, and every rank resumed
// the same step.
void Session::start_together() {
  if (!comm_->grouped()) return;
  std::vector<torch::Tensor> state;
  for (auto& p : m_.model->parameters()) state.push_back(p.data());
  for (auto& b : m_.model->buffers()) state.push_back(b);
  parallel_->equalize(state);
  if (std::int64_t step0 = comm_->from_rank0(at_.step); step0 != at_.step)
    fail(ErrorKind::invalid, run_dir_.string(), "the same run folder on every rank",
         "rank " + std::to_string(comm_->rank()) + " resumed at step " + std::to_string(at_.step) +
             ", rank 0 at step " + std::to_string(step0),
         "give every rank the same run folder (on several machines: a shared file system)");
}

// The loaders (TrainingData::make_loaders), and the steps they make.
void Session::make_loaders() {
  const int eval_size = c_.test_size > 0 ? c_.test_size : m_.info.image_size;
  data_.make_loaders(c_, eval_size, m_.device, {parallel_->replica(), replicas(), parallel_->reads_images()},
                     train_size_ > 0 ? train_size_ : m_.info.image_size);
  steps_per_epoch_ = (data_.train_loader->batches_per_epoch() + c_.accum - 1) / c_.accum;
}

void Session::say_plan() const {
  note("training " + c_.model + " on " + count_of(data_.train->size(), "image") + " (" +
       count_of(data_.classes.size(), "class") + "), validating on " + std::to_string(data_.val->size()) + "; " +
       horizon_->steps_said() + " of " + count_of(static_cast<std::uint64_t>(global_batch()), "image") +
       (replicas() > 1
            ? " (" + std::to_string(replicas()) + " ranks x " + std::to_string(c_.batch_size * c_.accum) + ")"
            : ""));
}

// After the last epoch: the final save waited for. The final weights must be somewhere: in the
// last checkpoint, or (weights_only) in best. When they are not, the run stops resumable from the
// last checkpoint saved (exit 75), or is a budget failure when none was.
SessionOutcome Session::finish() {
  begin_writing();  // a resumed run that had nothing left to train still records its config
  bool saved = true;
  if (rank0()) {
    auto r = run_->writer()->wait();
    if (!r.message.empty()) note(r.message);
    saved = r.status != SaveResult::Status::skipped_no_room && r.status != SaveResult::Status::disk_full;
    if (!saved) run_->note_save(r);
  }
  saved = comm_->from_rank0(saved ? 1 : 0) != 0;  // every rank ends as rank 0's save did
  if (!saved) {
    stop_reason_ = rank0() ? run_->no_room() : "no room on rank 0";
    return stopped();
  }
  log_->done();
  if (rank0()) run_->end_session(at_.step, "done");
  return outcome(SessionOutcome::Status::done, at_.step);
}

SessionOutcome train_session(const TrainConfig& config, Env& env) { return Session(config, env).execute(); }

}  // namespace frugal
