#include "train/horizon.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <utility>

#include "frugal/util/error.h"
#include "frugal/util/units.h"

namespace frugal {

namespace {

std::string duration_of(double seconds) { return format_duration(std::chrono::seconds(std::llround(seconds))); }

}  // namespace

Horizon::Horizon(const Options& o, Saved saved, std::function<double()> session_seconds, Tell tell)
    : o_(o),
      saved_(std::move(saved)),
      session_seconds_(std::move(session_seconds)),
      tell_(std::move(tell)),
      tail_(saved_.tail),
      total_(o.steps_per_epoch * o.epochs) {}

void Horizon::follow_budget(TimeBudget& plan, const Budget& budget, std::int64_t step, bool extending) {
  budget_ = &plan;
  given_ = budget;
  if (!saved_.time_budget.is_null()) {
    try {
      budget_->resume(saved_.time_budget);
    } catch (const Error& e) {  // metadata of a file the user may not have written: name it
      throw Error(e.kind(), saved_.file + ": " + e.what());
    }
    if (budget_->planned() && budget_->saved_budget() != budget.seconds)
      replan_for_new_budget(step, extending);
    else if (budget_->planned())
      tell_("time budget: continuing the plan (revision " + std::to_string(budget_->schedule().revision) +
                "): " + budget_->summary(o_.images_per_step),
            nullptr);
  }
  total_ = budget_->total_steps();
}

// A resume with another time budget re-plans before its first step, so that the plan said is the
// one trained. A finished run is continued to a larger budget only with --extend (a new tail: its
// schedule has annealed): without it, refused rather than "done" with the budget unused.
void Horizon::replan_for_new_budget(std::int64_t step, bool extending) {
  const std::int64_t planned = budget_->total_steps();
  if (extending) return extend_plan(step);
  if (step >= planned && given_.seconds > budget_->saved_budget())
    fail(ErrorKind::usage, saved_.file, "a run with steps left in its plan to continue to a larger time budget",
         "a finished run: it ended its schedule at step " + std::to_string(step) + " of its " +
             duration_of(budget_->saved_budget()) + " budget (" + given_.text + " given now)",
         "add {extend} to go on with it to " + given_.text +
             " (a new learning-rate tail), {fresh} to "
             "train this run anew for it, or give the budget it had to keep it as it is");
  update(step, false);
}

// --extend to a larger time budget: the plan re-made for it (on the checkpoint's costs) must leave
// room for more steps, or the extension is refused before anything changes (exit 4).
void Horizon::extend_plan(std::int64_t step) {
  update(step, false);
  if (total_ > step) return;
  fail(
      ErrorKind::budget, saved_.file,
      "a time budget that leaves room for more steps after the " + duration_of(budget_->spent(0)) + " the run has used",
      given_.text + ": no step fits at the run's measured costs (" + budget_->summary(o_.images_per_step) + ")",
      "give a larger {time_budget}");
}

void Horizon::start_tail(std::int64_t step, double from_lr, double saved_peak, double new_lr) {
  ScheduleTail t;
  t.start = step;
  t.from_lr = from_lr;
  std::string why;
  if (new_lr != saved_peak) {
    t.peak = new_lr;
    why = "{lr} given";
  } else if (from_lr >= 0.01 * saved_peak) {
    t.peak = from_lr;
    why = "the learning rate the run had reached";
  } else {
    t.peak = saved_peak / 10;
    why = "its schedule had ended: a tenth of its peak " + std::to_string(saved_peak) + "; {lr} sets another";
  }
  t.warmup = t.peak > t.from_lr ? std::llround(o_.warmup_fraction * static_cast<double>(total_ - t.start)) : 0;
  tail_ = t;
  const std::string span =
      budget_ ? "the time budget " + given_.text + ", re-planned as it goes" : std::to_string(o_.epochs) + " epochs";
  char line[200];
  std::snprintf(line, sizeof line, "learning rate %.3g -> %.3g over %lld steps, then a cosine to 0 (", t.from_lr,
                t.peak, static_cast<long long>(t.warmup));
  tell_("extending the run from step " + std::to_string(t.start) + " to " + std::to_string(total_) + " (" + span +
            "): " + line + why + ")",
        nullptr);
}

bool Horizon::more(std::int64_t step, std::int64_t epoch) const { return budget_ ? step < total_ : epoch < o_.epochs; }

// An extension's tail goes first: a time budget's own schedule had ended where the tail starts
// (the tail's cosine follows the re-planned last step).
double Horizon::lr(std::int64_t step) const {
  if (tail_) return tail_->lr(step, total_);
  if (budget_) return budget_->lr(o_.lr, step, o_.warmup_fraction);
  return cosine_lr(o_.lr, step, std::max<std::int64_t>(1, std::llround(o_.warmup_fraction * total_)), total_);
}

// A budget run's epochs: this one and those its steps left need (a run extended after a schedule
// that ended mid-epoch goes on in the loader's next epoch, so counting from step 0 undercounts).
std::int64_t Horizon::epochs_to_show(std::int64_t epoch, std::int64_t step) const {
  if (!budget_) return o_.epochs;
  const std::int64_t steps_left = std::max<std::int64_t>(0, total_ - step);
  return epoch + 1 + (steps_left + o_.steps_per_epoch - 1) / o_.steps_per_epoch;
}

bool Horizon::update(std::int64_t step, bool after_eval) {
  if (!budget_) return false;
  nlohmann::json record = budget_->update(step, session_seconds_(), after_eval);
  if (record.is_null()) return true;
  total_ = budget_->total_steps();
  const std::string summary = budget_->summary(o_.images_per_step);
  auto& r = record["time_budget"];
  r["summary"] = summary;
  const std::string event = r["event"].get<std::string>();
  // Every revision is a line of metrics.jsonl; the log tells those that move the end by 2% or more
  // (the plan is checked every 2% of the steps left, and follows timing noise in small steps).
  const bool small = event == "speed" && noted_total_ > 0 &&
                     std::abs(static_cast<double>(total_ - noted_total_)) < 0.02 * static_cast<double>(noted_total_);
  std::string line;
  if (!small) {
    line = event == "plan" ? summary : "time budget: re-planned (" + event + "): " + summary;
    noted_total_ = total_;
  }
  tell_(line, record);
  return true;
}

void Horizon::save_to(RunState& s) const {
  s.total_steps = total_;
  if (budget_) s.time_budget = budget_->to_json(session_seconds_());
  if (tail_) s.tail = tail_->to_json();
}

std::string Horizon::steps_said() const {
  if (!planned()) return "steps to fit the time budget (planned once the first are timed), each";
  return std::to_string(total_) + (total_ == 1 ? " step" : " steps");
}

}  // namespace frugal
