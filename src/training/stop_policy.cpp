#include "frugal/training/stop_policy.h"

#include <algorithm>
#include <chrono>

namespace frugal {
namespace {

double seconds_between(Env::SteadyTime a, Env::SteadyTime b) { return std::chrono::duration<double>(b - a).count(); }

}  // namespace

StopPolicy::StopPolicy(Env& env, const std::optional<DeadlineSpec>& deadline, Signals signals)
    : env_(env), step_clock_(env.steady_now()) {
  if (deadline) deadline_ = Deadline::start(*deadline, env_);
  if (signals == Signals::caught_here) signals_.emplace();
}

bool StopPolicy::signalled() const { return signals_ ? signals_->stop_requested() : caller_signal_ != 0; }

void StopPolicy::signal_arrived(int sig) {
  if (caller_signal_ == 0) caller_signal_ = sig;
}

TimeBudget& StopPolicy::plan_for(const TimeBudget::Options& options) { return time_budget_.emplace(options); }

void StopPolicy::restart_step_clock() { step_clock_ = env_.steady_now(); }

double StopPolicy::step_ended(Env::SteadyTime now) {
  const double cost = seconds_between(step_clock_, now);
  step_clock_ = now;
  if (deadline_) deadline_->record_step(cost);
  if (time_budget_) time_budget_->record_step(cost);
  return cost;
}

void StopPolicy::eval_took(double seconds) {
  if (deadline_) deadline_->record_eval(seconds);
  if (time_budget_) time_budget_->record_eval(seconds);
}

void StopPolicy::save_took(double seconds, bool waited) {
  if (waited) whole_save_ = std::max(whole_save_, seconds);
  const double cost = std::max(seconds, whole_save_);
  if (deadline_) deadline_->record_save(cost);
  if (time_budget_) time_budget_->record_save(cost);
}

std::optional<StopReason> StopPolicy::before_step(bool eval_due) const {
  if (signalled())
    return StopReason{
        StopReason::Kind::signal,
        std::string("signal ") + SignalGuard::signal_name(signals_ ? signals_->signal_number() : caller_signal_)};
  if (deadline_ && deadline_->should_stop_before_next_step(eval_due))
    return StopReason{StopReason::Kind::deadline, "deadline"};
  return std::nullopt;
}

void StopPolicy::check_fits_first_step() const {
  if (deadline_) deadline_->check_fits_one_step();
}

void StopPolicy::check_time_left() const {
  if (deadline_) deadline_->check_time_left();
}

}  // namespace frugal
