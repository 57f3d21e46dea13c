// Where a training session starts (train/resume.h).
#include "train/resume.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "frugal/training/global_batch.h"
#include "frugal/training/recipe.h"
#include "frugal/util/error.h"
#include "frugal/util/progress.h"
#include "frugal/util/units.h"

namespace frugal {

std::string Resume::where() const { return (run_dir_ / resume_->file.filename()).string(); }

ResumePoint Resume::load(CheckpointManager& manager, TrainedModel& m) {
  if (c_.extend && c_.fresh)
    fail(ErrorKind::usage, "{extend} with {fresh}", "one of them", "both",
         "{extend} goes on with the run's checkpoints; {fresh} discards them");
  if (c_.fresh) return {};
  resume_ = manager.load_latest();
  if (!resume_ && c_.extend)
    fail(ErrorKind::usage, run_dir_.string(), "a run to {extend}: a checkpoint in the run folder", "none",
         "leave out {extend} to start this run, or name the run folder of the run to go on with");
  if (!resume_) return {};
  take_saved_recipe(m);
  check_learns_the_same(m.info);
  return from_checkpoint(m);
}

ResumePoint Resume::from_checkpoint(TrainedModel& m) {
  const Checkpoint& ck = resume_->ckpt;
  load_weights(*m.model, ck.weight_map(), false);
  load_optimizer_state(*m.opt.optimizer, m.param_names(), ck);
  load_trainer_tensors(ck, *m.scaler, m.device);
  // With --ema the checkpoint's weights are the average (loaded above) and the trained ones are
  // trainer state; a checkpoint without them starts the average from its weights.
  if (m.ema && !m.ema->load(ck)) m.ema->reset();
  const RunState saved = RunState::from_checkpoint(ck, c_.batch_size);
  ResumePoint p;
  p.at.step = saved.step;
  p.epoch = saved.loader_epoch;
  p.position = saved.loader_position;
  m.step_options.micro_batch = saved.micro_batch;
  p.schedule.file = where();
  p.schedule.time_budget = saved.time_budget;
  p.schedule.tail = ScheduleTail::from_json(saved.tail, p.schedule.file);
  p.new_tail = new_tail_;
  if (new_tail_) {
    p.extend_from = saved;
    p.saved_peak = ck.config.contains("lr") && ck.config["lr"].is_number() ? ck.config["lr"].get<double>() : c_.lr;
  }
  p.at.val_accuracy = saved.val_accuracy;
  p.at.epochs_done = p.epoch;
  // The checkpoint's last validation stays the run's until this session validates: the next
  // checkpoint carries it on, and the outcome reports it.
  if (ck.metrics.is_object()) p.at.metrics = ck.metrics;
  note("resuming from " + resume_->file.filename().string() + " (epoch " + std::to_string(p.epoch + 1) + ", step " +
       std::to_string(p.at.step) + ")");
  resume_->ckpt = Checkpoint{};  // the tensors are in the model now
  return p;
}

// `--recipe auto` goes on with what the run chose when its plan was made (config "recipe"); a run
// from before recipes trained with the default one.
void Resume::take_saved_recipe(TrainedModel& m) {
  if (c_.recipe != "auto") return;
  const nlohmann::json& saved = resume_->ckpt.config;
  if (frugal::take_saved_recipe(c_, saved)) {
    note("recipe: " + c_.recipe + " (the run's own, chosen when it started)");
  } else if (!saved.contains("recipe")) {
    apply_recipe(c_, "default");  // before recipes; "auto" never planned or damaged: the check below says so
  } else {
    return;
  }
  identity_.config = c_;
  m.apply_recipe(c_);
}

// A resume must learn what the run was learning: a damaged checkpoint is bad input (exit 3), a
// change of what is learned (options, model, module file) a usage error (exit 2) listing it.
void Resume::check_learns_the_same(const ModelInfo& info) {
  const Checkpoint& ck = resume_->ckpt;
  const nlohmann::json now = identity_.to_json();
  // A checkpoint whose batch size, accumulation or world size is no integer (or whose product
  // overflows) is damaged or crafted: bad input (exit 3), not a change of options the user made.
  if (ck.config.contains("batch_size") && !global_batch_of(ck.config)) {
    auto shown = [&](const char* k) {
      return ck.config.contains(k) ? ck.config[k].dump().substr(0, 40) : std::string("absent");
    };
    fail(ErrorKind::invalid, where(),
         "the checkpoint's effective batch (batch_size x accum x world_size) as integers whose product fits",
         "batch_size " + shown("batch_size") + ", accum " + shown("accum") + ", world_size " + shown("world_size"),
         "the checkpoint is damaged: remove it to resume from an older one, or add {fresh} to start this run over");
  }
  std::vector<std::string> changes = learning_changes(ck.config, now);
  new_tail_ = c_.extend && check_extension(changes);
  if (!changes.empty()) {
    std::string list;
    for (auto& c : changes) list += (list.empty() ? "" : "; ") + c;
    fail(ErrorKind::usage, where(), "the options this run was started with", list,
         "run the original command to resume, or add {fresh} to start this run over with the new options");
  }
  // A crafted or damaged config may hold anything under "data": only a string is shown.
  if (ck.config.contains("data") && ck.config["data"] != now["data"])
    note("the training data is now read from " + c_.data + " (was " +
         (ck.config["data"].is_string() ? ck.config["data"].get<std::string>() : ck.config["data"].dump()) +
         "); same classes and image count, so the run resumes");
  if (ck.model.module_sha256 != info.module_sha256)
    fail(
        ErrorKind::usage, where(),
        "the model this run was trained with (" +
            (ck.model.module_sha256.empty()
                 ? ck.model.name
                 : "TorchScript module sha256 " + ck.model.module_sha256.substr(0, 12) + "...") +
            ")",
        info.module_sha256.empty() ? c_.model : "TorchScript module sha256 " + info.module_sha256.substr(0, 12) + "...",
        "give the module file the run was trained with, or add {fresh} to start this run over with this one");
}

// --extend: a larger --epochs (and --lr, the new tail's peak) are what it may change; what else
// changed is left in `changes` to be refused as for any resume. The same command again, once the
// extension's first checkpoint is saved, resumes it (its epochs are the run's now): returns
// whether a new tail starts here.
bool Resume::check_extension(std::vector<std::string>& changes) const {
  const Checkpoint& ck = resume_->ckpt;
  const bool was_auto = ck.config.contains("epochs") && !ck.config["epochs"].is_number_integer();
  if (c_.epochs_auto() != was_auto)
    fail(ErrorKind::usage, where(),
         was_auto ? "{extend} with a larger {time_budget}" : "{extend} with a larger {epochs}",
         was_auto ? "{epochs} given to a run planned by {time_budget}" : "{time_budget} given to a run of epochs",
         was_auto ? "keep {epochs} auto and give a larger {time_budget}" : "give a larger {epochs}");
  if (was_auto) return check_budget_extension(changes);
  const std::int64_t had = ck.config.value("epochs", std::int64_t{0});
  if (c_.epochs == had && ck.schedule.contains("tail")) return false;  // an extension under way
  if (c_.epochs <= had)
    fail(ErrorKind::usage, where(), "more epochs than the run's " + std::to_string(had) + " to {extend} it to",
         "{epochs} " + std::to_string(c_.epochs), "give a larger {epochs}, e.g. {epochs} " + std::to_string(had + 5));
  std::erase_if(changes, [](const std::string& c) { return c.starts_with("epochs: ") || c.starts_with("lr: "); });
  return true;
}

// --extend of a run planned by --time-budget: the budget (the whole run's, all sessions together)
// must be larger than the one its checkpoint was planned for; the same budget again, once the
// extension has saved, resumes it.
bool Resume::check_budget_extension(std::vector<std::string>& changes) const {
  const Checkpoint& ck = resume_->ckpt;
  const auto& plan = ck.schedule.contains("time_budget") ? ck.schedule["time_budget"] : nlohmann::json();
  if (!plan.is_object() || !plan.contains("budget_seconds") || !plan["budget_seconds"].is_number())
    fail(ErrorKind::invalid, where(), "the time budget the run was planned for", "none in the checkpoint",
         "the checkpoint is damaged: remove it to resume from an older one");
  const double had = plan["budget_seconds"].get<double>();
  const double now = static_cast<double>(c_.time_budget.seconds.count());
  if (now == had && ck.schedule.contains("tail")) return false;  // an extension under way
  if (now <= had)
    fail(ErrorKind::usage, where(),
         "a time budget larger than the run's " + format_duration(std::chrono::seconds(std::llround(had))) +
             " to {extend} it to (the whole run's, every session together)",
         "{time_budget} " + c_.time_budget.text,
         "give a larger {time_budget}, e.g. " + format_duration(std::chrono::seconds(std::llround(had * 1.5))));
  std::erase_if(changes, [](const std::string& c) { return c.starts_with("lr: "); });
  return true;
}

}  // namespace frugal
