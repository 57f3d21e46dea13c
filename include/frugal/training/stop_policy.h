// When a training session stops: one meter of what a step, an evaluation and a save cost, which
// the deadline, the time budget and the signals are all decided from.
//
// Torch-free: the session reports what happened (a step ended, an evaluation or a save took so
// long) and asks before each step; the clock is Env's, so tests run it on a fake one.
#pragma once

#include <optional>
#include <string>

#include "frugal/budget/budget.h"
#include "frugal/budget/time_budget.h"
#include "frugal/util/env.h"

namespace frugal {

// Why a session stops before its next step.
struct StopReason {
  enum class Kind { signal, deadline } kind;
  std::string text;  // "signal SIGTERM", "deadline"
};

// What stops a session resumable, and the costs its stops and plans are made from:
//  - a step costs from the end of the one before (or from when the loop started to ask for batches)
//    to its own end: waiting for its batches, agreeing with the other ranks, the step, logging and a
//    background save's share. Between one decision and the next the run spends exactly that, so a
//    loader that is the bottleneck is counted (a step's computation alone would let the last step
//    the deadline allows end after it);
//  - an evaluation costs what it took;
//  - a save costs what it kept the loop waiting, and never less than the longest save waited for
//    whole in this session (the save made when stopping is always waited for).
// The deadline and the time budget get the same samples (each smooths them its own way: the
// deadline follows the newest, the plan averages over a window).
class StopPolicy {
 public:
  // Who catches SIGTERM, SIGINT, SIGHUP and SIGUSR1: this policy (a SignalGuard, one at a time: the
  // CLI), or the caller, who reports them with signal_arrived() (the Python front end, whose
  // handlers must run in Python so that a notebook's interrupt keeps working).
  enum class Signals { caught_here, from_caller };
  // Starts the deadline now: the session makes its policy first, so the deadline counts from the
  // command's start.
  StopPolicy(Env& env, const std::optional<DeadlineSpec>& deadline, Signals signals = Signals::caught_here);
  StopPolicy(const StopPolicy&) = delete;
  StopPolicy& operator=(const StopPolicy&) = delete;

  // The time budget the costs also feed (epochs auto); none until set.
  TimeBudget& plan_for(const TimeBudget::Options& options);
  TimeBudget* time_budget() { return time_budget_ ? &*time_budget_ : nullptr; }
  const TimeBudget* time_budget() const { return time_budget_ ? &*time_budget_ : nullptr; }
  const std::optional<Deadline>& deadline() const { return deadline_; }

  // The loop (re)starts asking for batches: the next step's cost counts from now. Called when an
  // epoch starts (after the evaluation and save of the one before, whose costs are their own).
  void restart_step_clock();
  // A step ended at `now` (Env's clock); returns its cost (see above). The session's first step is
  // checked against the deadline by check_fits_first_step().
  double step_ended(Env::SteadyTime now);
  void eval_took(double seconds);
  // `waited`: the save was waited for whole (stopping, or the first under a deadline).
  void save_took(double seconds, bool waited);
  // Whether the next save must be waited for whole: under a deadline the first save of a session
  // is, so that the deadline plans with what a whole save takes.
  bool wants_whole_save() const { return deadline_ && whole_save_ < 0; }

  // Before each step: a signal arrived, or one more step, a save (and the evaluation when
  // `eval_due`) would not end before the deadline with its margin.
  std::optional<StopReason> before_step(bool eval_due) const;
  bool signalled() const;
  // Signals::from_caller: `sig` arrived (the first one counts).
  void signal_arrived(int sig);
  // After the session's first step: Error(budget) when the whole deadline cannot hold one step
  // and a save (nothing has been written yet).
  void check_fits_first_step() const;
  // Before training: Error(budget) when the deadline has passed (resolving data and model took it).
  void check_time_left() const;

  // Signals::caught_here only (tests simulate a signal through it).
  SignalGuard& signals() { return *signals_; }

 private:
  Env& env_;
  std::optional<Deadline> deadline_;
  std::optional<TimeBudget> time_budget_;
  std::optional<SignalGuard> signals_;  // Signals::caught_here
  int caller_signal_ = 0;               // Signals::from_caller: the first signal reported
  Env::SteadyTime step_clock_;          // the last step's end, or the loop's (re)start
  double whole_save_ = -1;              // the longest save waited for whole in this session; -1: none yet
};

}  // namespace frugal
