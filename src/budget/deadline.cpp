#include <cmath>
#include <ctime>
#include <optional>

#include "frugal/budget/budget.h"
#include "frugal/util/units.h"

namespace frugal {
namespace {

constexpr double kEmaWeight = 0.3;  // weight of the newest sample; steps vary little, saves more

void update(double& avg, bool& known, double sample) {
  avg = known ? (1 - kEmaWeight) * avg + kEmaWeight * sample : sample;
  known = true;
}

double seconds_between(Env::SteadyTime a, Env::SteadyTime b) { return std::chrono::duration<double>(b - a).count(); }

bool digit(char c) { return c >= '0' && c <= '9'; }

// "H:MM" or "HH:MM", hours 0-23 and minutes 00-59, as {hour, minute}; nullopt for anything else.
std::optional<std::pair<int, int>> clock_time(std::string_view t) {
  const auto colon = t.find(':');
  if (colon == std::string_view::npos || colon < 1 || colon > 2 || t.size() != colon + 3) return std::nullopt;
  for (std::size_t i = 0; i < t.size(); ++i)
    if (i != colon && !digit(t[i])) return std::nullopt;
  const int hour = colon == 1 ? t[0] - '0' : (t[0] - '0') * 10 + (t[1] - '0');
  const int minute = (t[colon + 1] - '0') * 10 + (t[colon + 2] - '0');
  if (hour > 23 || minute > 59) return std::nullopt;
  return std::pair{hour, minute};
}

}  // namespace

DeadlineSpec DeadlineSpec::parse(std::string_view text) {
  DeadlineSpec spec;
  spec.text = std::string(text);
  if (auto hm = clock_time(text)) {
    spec.hour = hm->first;
    spec.minute = hm->second;
    return spec;
  }
  try {
    spec.after = parse_duration(text);
  } catch (const Error&) {
    fail(ErrorKind::usage, "deadline", "a duration (90s, 30m, 7h30m) or a time of day HH:MM", "\"" + spec.text + "\"",
         "write e.g. 2h or 17:45");
  }
  return spec;
}

Deadline Deadline::start(const DeadlineSpec& spec, Env& env) {
  auto now = env.steady_now();
  if (spec.after) return Deadline(now + *spec.after, env);
  std::time_t wall = std::chrono::system_clock::to_time_t(env.wall_now());
  std::tm local{};
  localtime_r(&wall, &local);
  auto at = [&](int days_ahead) {
    std::tm target = local;
    target.tm_mday += days_ahead;
    target.tm_hour = spec.hour;
    target.tm_min = spec.minute;
    target.tm_sec = 0;
    target.tm_isdst = -1;
    return std::mktime(&target);
  };
  std::time_t t = at(0);
  if (t <= wall) t = at(1);  // already past today: the next occurrence is tomorrow
  return Deadline(now + std::chrono::seconds(t - wall), env);
}

Deadline Deadline::parse(std::string_view text, Env& env) { return start(DeadlineSpec::parse(text), env); }

Deadline::Deadline(Env::SteadyTime end, Env& env) : env_(&env), start_(env.steady_now()), end_(end) {}

double Deadline::remaining_seconds() const { return seconds_between(env_->steady_now(), end_); }

void Deadline::record_step(double seconds) { update(step_, step_known_, seconds); }
void Deadline::record_eval(double seconds) { update(eval_, eval_known_, seconds); }
void Deadline::record_save(double seconds) { update(save_, save_known_, seconds); }

bool Deadline::should_stop_before_next_step(bool eval_due) const {
  double left = remaining_seconds();
  if (left <= 0) return true;
  if (!step_known_) return false;
  double need = step_ + save_ + (eval_due ? eval_ : 0);
  return need + margin(need) > left;
}

void Deadline::check_time_left() const {
  const double left = remaining_seconds(), total = seconds_between(start_, end_);
  if (left > 0 && total > margin(0)) return;
  fail(ErrorKind::budget, "deadline",
       "time for at least one step and a save (more than " +
           format_duration(std::chrono::seconds(static_cast<long long>(margin(0)))) + ")",
       left <= 0 ? std::string("a deadline that passed before training could start")
                 : "a deadline " + format_duration(std::chrono::seconds(std::llround(total))) + " away",
       "give a later deadline; nothing was changed");
}

void Deadline::check_fits_one_step() const {
  double total = seconds_between(start_, end_);
  double need = step_ + save_;
  if (step_known_ && need + margin(need) > total)
    fail(ErrorKind::budget, "deadline",
         "time for at least one step and a save (about " +
             format_duration(std::chrono::seconds(static_cast<long long>(need + margin(need) + 0.999))) + ")",
         "a deadline " + format_duration(std::chrono::seconds(static_cast<long long>(total))) + " away",
         "give a later deadline, or a smaller batch or image size; nothing was changed");
}

}  // namespace frugal
