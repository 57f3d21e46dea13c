#include "frugal/budget/time_budget.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "frugal/util/error.h"
#include "frugal/util/units.h"

namespace frugal {
namespace {

std::string duration_text(double seconds) {
  return format_duration(std::chrono::seconds(static_cast<long long>(std::ceil(std::max(0.0, seconds)))));
}

}  // namespace

double seconds_to_finish(const PlanInputs& in, std::int64_t total) {
  const std::int64_t done = in.steps_done, per = std::max<std::int64_t>(1, in.steps_per_epoch);
  if (total <= done) return 0;
  // Epoch ends passed after `done`, plus the end of the run when it is not one of them.
  const std::int64_t evals = total / per - done / per + (total % per != 0 ? 1 : 0);
  return static_cast<double>(total - done) * in.costs.step +
         static_cast<double>(evals) * (in.costs.eval + in.costs.save);
}

std::int64_t steps_that_fit(const PlanInputs& in) {
  const double left = in.budget - in.spent;
  if (!(in.costs.step > 0) || !std::isfinite(in.costs.step))
    fail(ErrorKind::invalid, "the time-budget plan", "a measured step time above 0",
         std::to_string(in.costs.step) + " s", "");
  if (left <= 0) return in.steps_done;
  // seconds_to_finish grows with the total: the largest total that fits lies in [lo, hi).
  std::int64_t lo = in.steps_done;
  const double most = std::min(left / in.costs.step + 1, 1e15);
  std::int64_t hi = in.steps_done + static_cast<std::int64_t>(most) + 1;
  while (hi - lo > 1) {
    std::int64_t mid = lo + (hi - lo) / 2;
    if (seconds_to_finish(in, mid) <= left)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

namespace {

Plan plan_for(const PlanInputs& in, std::int64_t total) {
  Plan p;
  p.total_steps = total;
  p.epochs = static_cast<double>(total) / static_cast<double>(std::max<std::int64_t>(1, in.steps_per_epoch));
  p.end_seconds = in.spent + seconds_to_finish(in, total);
  return p;
}

}  // namespace

Plan plan_run(const PlanInputs& in) {
  const std::int64_t total = steps_that_fit(in);
  if (total < in.steps_per_epoch) {
    PlanInputs one = in;
    one.steps_done = 0;
    const double need = seconds_to_finish(one, in.steps_per_epoch);
    // The time already spent (start-up, the steps timed) is part of what a budget must hold.
    char step[32];
    std::snprintf(step, sizeof step, "%.3g", in.costs.step);
    fail(ErrorKind::budget, "the time budget",
         "time for one epoch with its evaluation and save: " + duration_text(need) + " (" +
             std::to_string(in.steps_per_epoch) + " steps of " + step + " s), after " + duration_text(in.spent) +
             " already spent",
         "a budget of " + duration_text(in.budget),
         "give a budget of at least " + duration_text(need + in.spent) +
             ", or make an epoch shorter (fewer or smaller images)");
  }
  return plan_for(in, total);
}

Plan replan_run(const PlanInputs& in) { return plan_for(in, std::max(in.steps_done, steps_that_fit(in))); }

bool plan_is_off(const PlanInputs& in, std::int64_t total, double slack) {
  const std::int64_t fit = std::max(in.steps_done, steps_that_fit(in));
  const double allowed = std::max(1.0, slack * static_cast<double>(fit - in.steps_done));
  return std::abs(static_cast<double>(total - fit)) > allowed;
}

double lr_at_progress(double base, double p, double warmup, double min_factor) {
  p = std::clamp(p, 0.0, 1.0);
  if (warmup > 0 && p < warmup) return base * p / warmup;
  const double t = warmup >= 1 ? 1.0 : (p - warmup) / (1.0 - warmup);
  return base * (min_factor + (1.0 - min_factor) * 0.5 * (1.0 + std::cos(M_PI * t)));
}

double Schedule::progress(double step) const {
  if (total_steps <= anchor_step) return 1.0;
  const double p = anchor_progress + (1.0 - anchor_progress) * (step - static_cast<double>(anchor_step)) /
                                         static_cast<double>(total_steps - anchor_step);
  return std::clamp(p, 0.0, 1.0);
}

double Schedule::lr(double base, std::int64_t step, double warmup, double min_factor) const {
  return lr_at_progress(base, progress(static_cast<double>(step) + 0.5), warmup, min_factor);
}

Schedule Schedule::revised(std::int64_t at_step, std::int64_t new_total) const {
  Schedule r;
  r.anchor_step = at_step;
  r.anchor_progress = progress(static_cast<double>(at_step));
  r.total_steps = std::max(new_total, at_step);
  r.revision = revision + 1;
  return r;
}

nlohmann::json Schedule::to_json() const {
  return {{"anchor_step", anchor_step},
          {"anchor_progress", anchor_progress},
          {"total_steps", total_steps},
          {"revision", revision}};
}

Schedule Schedule::from_json(const nlohmann::json& j) {
  auto bad = [&](const std::string& found) -> Schedule {
    fail(ErrorKind::invalid, "the checkpoint's time-budget schedule",
         "anchor_step, anchor_progress (0..1), total_steps >= anchor_step, revision", found, "");
  };
  if (!j.is_object()) return bad(j.dump());
  for (const char* k : {"anchor_step", "total_steps", "revision"})
    if (!j.contains(k) || !j[k].is_number_integer()) return bad(std::string(k) + " missing or not an integer");
  if (!j.contains("anchor_progress") || !j["anchor_progress"].is_number()) return bad("anchor_progress not a number");
  Schedule s;
  s.anchor_step = j["anchor_step"].get<std::int64_t>();
  s.total_steps = j["total_steps"].get<std::int64_t>();
  s.revision = j["revision"].get<int>();
  s.anchor_progress = j["anchor_progress"].get<double>();
  if (s.anchor_step < 0 || s.total_steps < s.anchor_step || s.revision < 0 ||
      !(s.anchor_progress >= 0 && s.anchor_progress <= 1))
    return bad(j.dump());
  return s;
}

void CostMeter::add(double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds)) return;
  if (count_ < warm_)
    value_ = (value_ * count_ + seconds) / (count_ + 1);
  else {
    const double w = window_ > 0 ? 1 - std::exp(-seconds / window_) : weight_;
    value_ = (1 - w) * value_ + w * seconds;
  }
  ++count_;
}

namespace {

// The provisional schedule of a fresh run before its speed is known: long enough that the steps
// timed for the first plan run at a learning rate near 0, whatever the plan then is.
constexpr std::int64_t kProvisionalEpochs = 1000;

std::string with_commas(long long n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

nlohmann::json costs_json(const RunCosts& c) { return {{"step", c.step}, {"eval", c.eval}, {"save", c.save}}; }

double number_at(const nlohmann::json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number() || !(j[key].get<double>() >= 0) ||
      !std::isfinite(j[key].get<double>()))
    fail(ErrorKind::invalid, "the checkpoint's time budget", std::string(key) + " as a number >= 0",
         j.is_object() && j.contains(key) ? j[key].dump() : "nothing", "");
  return j[key].get<double>();
}

}  // namespace

TimeBudget::TimeBudget(Options options) : o_(options) {
  o_.steps_per_epoch = std::max<std::int64_t>(1, o_.steps_per_epoch);
  // The step time averaged over 2% of the budget (5 s to 5 min): on Fashion-MNIST with a 3 min
  // budget, 0.035 s steps averaged over 20 steps moved the plan between 9.4 and 12.3 epochs.
  step_.set_window(std::clamp(0.02 * o_.budget, 5.0, 300.0));
  schedule_.total_steps = o_.steps_per_epoch * kProvisionalEpochs;
}

void TimeBudget::set_prior_costs(const RunCosts& costs) {
  step_.set_prior(costs.step);
  eval_.set_prior(costs.eval);
  save_.set_prior(costs.save);
}

void TimeBudget::resume(const nlohmann::json& state) {
  if (!state.is_object() || !state.contains("schedule") || !state.contains("costs") || !state.contains("planned") ||
      !state["planned"].is_boolean())
    fail(ErrorKind::invalid, "the checkpoint's time budget", "schedule, costs and planned", state.dump(), "");
  saved_budget_ = number_at(state, "budget_seconds");
  spent_before_ = number_at(state, "spent_seconds");
  const auto& c = state["costs"];
  step_.set_prior(number_at(c, "step"));
  eval_.set_prior(number_at(c, "eval"));
  save_.set_prior(number_at(c, "save"));
  schedule_ = Schedule::from_json(state["schedule"]);
  if (state.contains("end_seconds")) planned_end_ = number_at(state, "end_seconds");
  planned_ = state["planned"].get<bool>();
}

RunCosts TimeBudget::costs() const {
  RunCosts c{step_.value(), eval_.value(), save_.value()};
  if (c.eval == 0 && !eval_.measured()) c.eval = o_.eval_in_steps * c.step;
  return c;
}

void TimeBudget::record_step(double seconds) {
  if (!step_seen_) {
    step_seen_ = true;
    return;
  }
  step_.add(seconds);
}

PlanInputs TimeBudget::inputs(std::int64_t steps_done, double session_seconds) const {
  PlanInputs in;
  in.budget = o_.budget;
  in.spent = spent(session_seconds);
  in.costs = costs();
  in.steps_per_epoch = o_.steps_per_epoch;
  in.steps_done = steps_done;
  return in;
}

nlohmann::json TimeBudget::revise(std::int64_t steps_done, double session_seconds, const std::string& reason,
                                  bool first) {
  const PlanInputs in = inputs(steps_done, session_seconds);
  const Plan p = first ? plan_run(in) : replan_run(in);
  schedule_ = schedule_.revised(steps_done, p.total_steps);
  planned_ = true;
  planned_end_ = p.end_seconds;
  return {{"time_budget",
           {{"event", reason},
            {"revision", schedule_.revision},
            {"step", steps_done},
            {"total_steps", p.total_steps},
            {"epochs", p.epochs},
            {"budget_seconds", o_.budget},
            {"spent_seconds", in.spent},
            {"end_seconds", p.end_seconds},
            {"costs", costs_json(in.costs)},
            {"anchor_progress", schedule_.anchor_progress}}}};
}

nlohmann::json TimeBudget::update(std::int64_t steps_done, double session_seconds, bool after_eval) {
  if (!planned_) {
    // An epoch shorter than the steps to time is planned at its end, on what was timed.
    const int enough = after_eval ? 1 : o_.measure_steps;
    if (step_.count() < enough) return nullptr;
    speed_checked_ = true;
    last_check_ = steps_done;
    return revise(steps_done, session_seconds, "plan", true);
  }
  if (saved_budget_ >= 0 && saved_budget_ != o_.budget) {
    const std::string reason = "budget changed from " + duration_text(saved_budget_);
    saved_budget_ = o_.budget;
    return revise(steps_done, session_seconds, reason, false);
  }
  // A resumed session re-plans once it has timed its own steps (another machine, a busier one),
  // any session after each evaluation and save (their costs are then known too), and between them
  // every 2% of the steps left (at least measure_steps apart): the first steps' speed is not the
  // steady one (they take batches decoded while the model was set up; a neighbour starts work), and
  // an error found only at an epoch's end can be too late to anneal in the time left.
  // In the budget's last stretch (the step-time average's window) the plan is checked before each
  // step: steps that slowed there (tests starting beside it) overran a 40 s budget by 2 steps when
  // checked every 5 and revised only when off by more than one.
  bool check = after_eval;
  if (!speed_checked_ && step_.count() >= o_.measure_steps) check = speed_checked_ = true;
  const std::int64_t every = std::max<std::int64_t>(o_.measure_steps, (schedule_.total_steps - steps_done) / 50);
  const bool last_stretch = o_.budget - spent(session_seconds) <= step_.window();
  if (speed_checked_ && (steps_done - last_check_ >= every || last_stretch)) check = true;
  if (!check) return nullptr;
  last_check_ = steps_done;
  // There a plan that runs over the budget by even one step is revised (ending a step early costs
  // little; the slack is for the noise of long stretches).
  const PlanInputs in = inputs(steps_done, session_seconds);
  const bool over = last_stretch && schedule_.total_steps > std::max(steps_done, steps_that_fit(in));
  if (!over && !plan_is_off(in, schedule_.total_steps, o_.slack)) return nullptr;
  return revise(steps_done, session_seconds, after_eval ? "evaluation" : "speed", false);
}

nlohmann::json TimeBudget::to_json(double session_seconds) const {
  return {{"budget_seconds", o_.budget},  {"spent_seconds", spent(session_seconds) + costs().save},
          {"costs", costs_json(costs())}, {"schedule", schedule_.to_json()},
          {"planned", planned_},          {"end_seconds", planned_end_}};
}

std::string TimeBudget::summary(std::int64_t images_per_step) const {
  const RunCosts c = costs();
  const double epochs = static_cast<double>(schedule_.total_steps) / static_cast<double>(o_.steps_per_epoch);
  char e[32];
  std::snprintf(e, sizeof e, "%.1f", epochs);
  const long long rate = c.step > 0 ? std::llround(static_cast<double>(images_per_step) / c.step) : 0;
  return "planned " + with_commas(schedule_.total_steps) + " steps = " + e + " epochs in " + duration_text(o_.budget) +
         " at " + with_commas(rate) + " img/s; schedule ends at " + duration_text(planned_end_) + " of the budget";
}

double cosine_lr(double base, std::int64_t step, std::int64_t warmup, std::int64_t total, double min_factor) {
  if (warmup > 0 && step < warmup) return base * static_cast<double>(step + 1) / static_cast<double>(warmup);
  if (total <= warmup) return base;
  double t = std::min(1.0, static_cast<double>(step - warmup) / static_cast<double>(total - warmup));
  double factor = min_factor + (1.0 - min_factor) * 0.5 * (1.0 + std::cos(M_PI * t));
  return base * factor;
}

}  // namespace frugal
