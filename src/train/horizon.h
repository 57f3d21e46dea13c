// Where a run ends (internal to the session): the one answer to "epochs or time budget?". A run of
// --epochs N ends after N epochs' steps on a cosine schedule; a run of --time-budget (epochs auto)
// ends where its plan (TimeBudget, owned by the StopPolicy) says, and the plan moves as the costs
// are measured. Either may go on with --extend on a new learning-rate tail (ScheduleTail), which
// then sets the learning rate. The session asks: more to train?, is this step the plan's last?,
// the learning rate at a step, the epochs the epoch line shows, whether the plan is made, the state
// a checkpoint records; plan updates tell their log line and metrics.jsonl record through `Tell`.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "frugal/budget/time_budget.h"
#include "train/run_state.h"

namespace frugal {

class Horizon {
 public:
  struct Options {
    std::int64_t steps_per_epoch = 1;
    std::int64_t epochs = 0;           // --epochs (a run of epochs)
    double lr = 0;                     // --lr: the schedule's peak
    double warmup_fraction = 0;        // --warmup
    std::int64_t images_per_step = 1;  // the global batch (the plan's summary)
  };
  // --time-budget as given: the whole run's seconds and the text the user wrote.
  struct Budget {
    double seconds = 0;
    std::string text;
  };
  // What the checkpoint resumed from holds of the schedule.
  struct Saved {
    nlohmann::json time_budget;  // TimeBudget::to_json; null: none
    std::optional<ScheduleTail> tail;
    std::string file;  // the checkpoint's path, named in messages
  };
  // A line for the log ("": none) and a record for metrics.jsonl (null: none).
  using Tell = std::function<void(const std::string& line, const nlohmann::json& record)>;

  // A run of `o.epochs` epochs, or (follow_budget) of a time budget; resumed from `saved`.
  // `session_seconds` reads the session's clock (this session's seconds so far): a budget's
  // plan and its checkpoint state only read it.
  Horizon(const Options& o, Saved saved, std::function<double()> session_seconds, Tell tell);

  // epochs auto: the steps are those `plan` fits in the budget; a resumed run continues the plan
  // its checkpoint holds, re-planned for another budget (`extending`: --extend's larger one). A
  // finished run given a larger budget without --extend is refused (usage), and an extension with
  // no room for one more step too (budget); the first plan of a fresh run waits for timed steps.
  void follow_budget(TimeBudget& plan, const Budget& budget, std::int64_t step, bool extending);
  // --extend from `step`: a tail from the learning rate the run had reached to `new_lr` (when it
  // differs from the run's `saved_peak`), else to where it was (a tenth of the peak when its
  // schedule had ended), then a cosine to 0 at the (re-planned) end. Said in one line.
  void start_tail(std::int64_t step, double from_lr, double saved_peak, double new_lr);

  // Whether another epoch starts: epochs left, or the budget's steps.
  bool more(std::int64_t step, std::int64_t epoch) const;
  // Whether there is anything to train from `step` (`epoch`): a plan not yet made counts.
  bool work_left(std::int64_t step, std::int64_t epoch) const { return !planned() || more(step, epoch); }
  // A budget's plan ended before `step` (mid-epoch too); a run of epochs ends with its last epoch.
  bool ended(std::int64_t step) const { return budget_ != nullptr && step >= total_; }
  // `step` is the plan's last (mid-epoch, for a budget).
  bool last(std::int64_t step) const { return budget_ != nullptr && step + 1 >= total_; }
  double lr(std::int64_t step) const;
  // The epoch line's total: --epochs, or for a budget this epoch and those its steps left need.
  std::int64_t epochs_to_show(std::int64_t epoch, std::int64_t step) const;
  // The plan is made: always for epochs; for a budget once the first steps are timed.
  bool planned() const { return budget_ == nullptr || budget_->planned(); }
  std::int64_t total_steps() const { return total_; }
  // The steps every rank runs: rank 0's plan.
  void agree(std::int64_t total_steps) { total_ = total_steps; }
  // Plans once the first steps are timed, re-plans when the budget or the speed changed (see
  // TimeBudget::update); each plan is told. Returns whether the plan can move (a budget's).
  bool update(std::int64_t step, bool after_eval);
  // The schedule's part of a checkpoint: total_steps, the budget's plan, the tail.
  void save_to(RunState& s) const;
  // "120 steps", or the words for steps still to be planned.
  std::string steps_said() const;

 private:
  void replan_for_new_budget(std::int64_t step, bool extending);
  void extend_plan(std::int64_t step);

  Options o_;
  Saved saved_;
  std::function<double()> session_seconds_;
  Tell tell_;
  TimeBudget* budget_ = nullptr;  // epochs auto: the StopPolicy's plan
  Budget given_;
  std::optional<ScheduleTail> tail_;  // after --extend (this session's or an earlier one's)
  std::int64_t total_ = 0;
  std::int64_t noted_total_ = 0;  // the planned steps the log last told
};

}  // namespace frugal
