// Training to a time budget (`frugal train --time-budget 20h --epochs auto`): how many optimizer
// steps fit in the time left, and a learning-rate schedule that can be re-planned between (and
// within) sessions without changing the part already travelled.
//
// Pure arithmetic on seconds and step counts: no clock, no LibTorch. The run measures the costs
// (through Env's clock) and feeds them in; tests feed a fake speed.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

namespace frugal {

// Linear warmup from 0 to base over `warmup` steps, then cosine to min_factor * base at `total`.
double cosine_lr(double base, std::int64_t step, std::int64_t warmup, std::int64_t total, double min_factor = 0.0);

// Measured costs, in seconds.
struct RunCosts {
  double step = 0;  // one optimizer step (all its micro-batches)
  double eval = 0;  // one evaluation of the validation set (after each epoch and at the end)
  double save = 0;  // one checkpoint save (after each evaluation)
};

struct PlanInputs {
  double budget = 0;  // seconds the whole run may take, all sessions together
  double spent = 0;   // seconds already used: earlier sessions and this one so far
  RunCosts costs;
  std::int64_t steps_per_epoch = 1;
  std::int64_t steps_done = 0;
};

// Seconds from `in.steps_done` to the end of a run of `total` steps: the steps, and an evaluation
// plus a save at each epoch end passed and at the end of the run (once when they coincide).
double seconds_to_finish(const PlanInputs& in, std::int64_t total);

// The largest total (>= steps_done) whose end, spent + seconds_to_finish, is within the budget.
std::int64_t steps_that_fit(const PlanInputs& in);

struct Plan {
  std::int64_t total_steps = 0;
  double epochs = 0;       // total_steps / steps_per_epoch
  double end_seconds = 0;  // predicted time used when the schedule ends (<= budget)
};

// Plans the whole run. Error(budget) (exit 4) when not even one epoch (with its evaluation and
// save) fits in what is left of the budget, saying how long a budget that would fit is.
Plan plan_run(const PlanInputs& in);

// Re-plans a run under way: as plan_run, but never below the steps already done (a budget spent
// ends the run where it is) and never a budget error.
Plan replan_run(const PlanInputs& in);

// Whether a plan of `total` steps should be revised: it differs from what fits by more than
// `slack` of the remaining steps (and by more than one step). Small differences are timing noise;
// revising on each would make the schedule follow jitter, and resumes would rarely be exact.
bool plan_is_off(const PlanInputs& in, std::int64_t total, double slack = 0.03);

// The learning rate as a function of progress p in [0, 1]: linear warm-up from 0 to `base` over
// [0, warmup], then cosine from `base` to `min_factor * base` at p = 1. Continuous in p.
double lr_at_progress(double base, double p, double warmup, double min_factor = 0.0);

// A schedule that can be revised. Steps [anchor_step, total_steps) cover progress
// [anchor_progress, 1] linearly; a fresh schedule has anchor 0 at progress 0 (then step s is at
// progress s / total). Revising at step s keeps the progress reached at s and maps the new
// remaining steps onto the remaining progress: what was travelled is unchanged, the rest stretches
// or shrinks, and the learning rate still reaches its minimum at the new end.
struct Schedule {
  std::int64_t anchor_step = 0;
  double anchor_progress = 0;
  std::int64_t total_steps = 1;  // >= anchor_step
  int revision = 0;              // 0: the first plan; +1 per revision

  // Progress at a (fractional) step position: 0 .. 1, clamped.
  double progress(double step) const;
  // Step `step` runs at the progress of its midpoint (its first step's learning rate is above 0,
  // its last one's just above the minimum).
  double lr(double base, std::int64_t step, double warmup, double min_factor = 0.0) const;
  // The schedule from `at_step` on ends at `new_total` (at_step when nothing is left to do).
  Schedule revised(std::int64_t at_step, std::int64_t new_total) const;

  // Checkpoint "schedule" metadata (docs/formats.md); doubles round-trip exactly through JSON.
  nlohmann::json to_json() const;
  // Error(invalid) for a missing or mistyped key or values out of range.
  static Schedule from_json(const nlohmann::json& j);
};

// A smoothed duration: the mean of the first `warm` samples, then an exponential average, so one
// slow step (a page fault, a busier neighbour) moves the plan little. A prior (from an earlier
// session) is used until this session has measured its own.
class CostMeter {
 public:
  explicit CostMeter(int warm = 8, double weight = 0.05) : warm_(warm), weight_(weight) {}
  // Averages over a time window instead of a number of samples: a sample of `seconds` weighs
  // 1 - exp(-seconds / window), so 0.03 s steps and 3 s steps are both averaged over ~`window` s
  // (a fixed weight follows the noise of short steps and reacts slowly to long ones).
  void set_window(double seconds) { window_ = seconds; }
  double window() const { return window_; }
  void set_prior(double seconds) { prior_ = seconds; }
  void add(double seconds);
  bool measured() const { return count_ > 0; }
  int count() const { return count_; }
  // This session's estimate, else the prior (0 when neither exists).
  double value() const { return count_ > 0 ? value_ : prior_; }

 private:
  int warm_;
  double weight_, window_ = 0, prior_ = 0, value_ = 0;
  int count_ = 0;
};

}  // namespace frugal

namespace frugal {

// The time budget of one run as a session sees it: the revisable schedule, the measured costs and
// the time spent, restored from the checkpoint on resume and saved with each checkpoint. The caller
// reads the clock (Env) and reports durations; this class decides. Session by session:
//  - a fresh run starts on a provisional schedule so long that its first steps run at a learning
//    rate near 0, and plans once `measure_steps` steps have been timed (a session's first step is
//    not timed: it pays for allocations and caches), or at the first epoch's end if sooner;
//  - a resumed run continues the saved schedule; a changed budget re-plans at once (on the saved
//    costs), and the speed measured in this session re-plans when the plan is off by more than
//    the slack;
//  - after each evaluation and save, and every 2% of the steps left, the plan is checked again;
//    in the budget's last stretch (the step-time window: 2% of it, 5 s at least), before each step.
class TimeBudget {
 public:
  struct Options {
    double budget = 0;  // seconds, the whole run
    std::int64_t steps_per_epoch = 1;
    int measure_steps = 5;
    double slack = 0.05;  // see plan_is_off
    // An evaluation's cost in step times, used until one is timed (or known from an earlier
    // session): about a third of the validation images' share of a step (forward only).
    double eval_in_steps = 0;
  };

  explicit TimeBudget(Options options);

  // Priors for costs not yet measured in any session (the eval and save costs before the first
  // epoch ends): used by the first plan only until measured.
  void set_prior_costs(const RunCosts& costs);
  // From a checkpoint's "time_budget" object (to_json below); Error(invalid) when mistyped.
  void resume(const nlohmann::json& state);

  // Seconds this session has run so far (read by the caller from its clock) are added to what
  // earlier sessions spent.
  double spent(double session_seconds) const { return spent_before_ + session_seconds; }

  double lr(double base, std::int64_t step, double warmup, double min_factor = 0.0) const {
    return schedule_.lr(base, step, warmup, min_factor);
  }
  std::int64_t total_steps() const { return schedule_.total_steps; }
  bool planned() const { return planned_; }
  // The budget (seconds) the resumed checkpoint's plan was made for; -1 when not resumed.
  double saved_budget() const { return saved_budget_; }
  const Schedule& schedule() const { return schedule_; }
  RunCosts costs() const;

  void record_step(double seconds);  // the session's first call is not timed (see above)
  void record_eval(double seconds) { eval_.add(seconds); }
  void record_save(double seconds) { save_.add(seconds); }

  // Called before each step and after each evaluation + save with the steps done and the
  // session's seconds. Returns the plan record for metrics.jsonl when the plan was made or revised
  // ({"time_budget": {...}}), else null. The first plan throws Error(budget) when not even one
  // epoch fits.
  nlohmann::json update(std::int64_t steps_done, double session_seconds, bool after_eval = false);

  // What the next session needs ("time_budget" of the checkpoint's "schedule" metadata). The save
  // about to be paid for is counted as spent.
  nlohmann::json to_json(double session_seconds) const;

  // "planned 41,200 steps = 9.3 epochs in 5h58m at 1,930 img/s; schedule ends at 5h56m"
  std::string summary(std::int64_t images_per_step) const;

 private:
  PlanInputs inputs(std::int64_t steps_done, double session_seconds) const;
  nlohmann::json revise(std::int64_t steps_done, double session_seconds, const std::string& reason, bool first);

  Options o_;
  Schedule schedule_;
  bool planned_ = false, step_seen_ = false, speed_checked_ = false;
  double spent_before_ = 0, planned_end_ = 0;
  double saved_budget_ = -1;     // the budget the resumed checkpoint was planned for (-1: fresh)
  std::int64_t last_check_ = 0;  // the step of the last plan check
  CostMeter step_, eval_, save_;
  RunCosts prior_;
};

}  // namespace frugal
