#include <ctime>
#include <regex>

#include "frugal/budget.h"
#include "frugal/units.h"

namespace frugal {
namespace {

constexpr double kEmaWeight = 0.3;  // weight of the newest sample; steps vary little, saves more

void update(double& avg, bool& known, double sample) {
  avg = known ? (1 - kEmaWeight) * avg + kEmaWeight * sample : sample;
  known = true;
}

double seconds_between(Env::SteadyTime a, Env::SteadyTime b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

Deadline Deadline::parse(std::string_view text, Env& env) {
  static const std::regex clock_re(R"(([01]?\d|2[0-3]):([0-5]\d))");
  std::string s(text);
  std::smatch m;
  auto now = env.steady_now();
  if (std::regex_match(s, m, clock_re)) {
    std::time_t wall = std::chrono::system_clock::to_time_t(env.wall_now());
    std::tm local{};
    localtime_r(&wall, &local);
    std::tm target = local;
    target.tm_hour = std::stoi(m[1]);
    target.tm_min = std::stoi(m[2]);
    target.tm_sec = 0;
    target.tm_isdst = -1;
    std::time_t t = std::mktime(&target);
    if (t <= wall) {  // already past today: the next occurrence is tomorrow
      target = local;
      target.tm_mday += 1;
      target.tm_hour = std::stoi(m[1]);
      target.tm_min = std::stoi(m[2]);
      target.tm_sec = 0;
      target.tm_isdst = -1;
      t = std::mktime(&target);
    }
    return Deadline(now + std::chrono::seconds(t - wall), env);
  }
  try {
    return Deadline(now + parse_duration(text), env);
  } catch (const Error&) {
    fail(ErrorKind::usage, "--deadline", "a duration (90s, 30m, 7h30m) or a time of day HH:MM", "\"" + s + "\"",
         "write e.g. --deadline 2h or --deadline 17:45");
  }
}

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

void Deadline::check_fits_one_step() const {
  double total = seconds_between(start_, end_);
  double need = step_ + save_;
  if (step_known_ && need + margin(need) > total)
    fail(ErrorKind::budget, "--deadline",
         "time for at least one step and a save (about " + format_duration(std::chrono::seconds(
                                                               static_cast<long long>(need + margin(need) + 0.999))) + ")",
         "a deadline " + format_duration(std::chrono::seconds(static_cast<long long>(total))) + " away",
         "give a later deadline or a smaller --batch-size / --image-size");
}

}  // namespace frugal
