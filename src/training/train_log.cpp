#include "frugal/training/train_log.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>

#include "frugal/util/progress.h"
#include "frugal/util/terminal.h"
#include "frugal/util/units.h"

namespace frugal {

TrainLog::TrainLog(bool quiet, Env& env)
    : env_(env),
      quiet_(quiet || Progress::quiet()),
      tty_(stderr_redraws()),
      start_(env_.steady_now()),
      last_line_(start_) {}

double TrainLog::images_per_second() const {
  double s = std::chrono::duration<double>(env_.steady_now() - start_).count();
  return s > 0 ? static_cast<double>(images_) / s : 0.0;
}

void TrainLog::step(std::int64_t step, std::int64_t total, std::int64_t epoch, const StepResult& r, double lr) {
  if (first_step_ < 0) first_step_ = step - 1;
  images_ += r.samples;
  ema_loss_ = ema_loss_ < 0 ? r.loss : 0.95 * ema_loss_ + 0.05 * r.loss;
  if (quiet_) return;
  auto now = env_.steady_now();
  double since = std::chrono::duration<double>(now - last_line_).count();
  if (since < (tty_ ? 0.2 : 10.0) && step != total) return;
  last_line_ = now;
  double elapsed = std::chrono::duration<double>(now - start_).count();
  double per_step = elapsed / static_cast<double>(step - first_step_);
  auto eta = std::chrono::seconds(static_cast<std::int64_t>(per_step * static_cast<double>(total - step)));
  char line[256];
  std::snprintf(line, sizeof line, "epoch %lld step %lld/%lld loss %.4f lr %.2e %.0f img/s ETA %s%s",
                static_cast<long long>(epoch) + 1, static_cast<long long>(step), static_cast<long long>(total),
                ema_loss_, lr, images_per_second(), format_duration(eta).c_str(),
                r.skipped ? " (step skipped: inf/NaN)" : "");
  if (tty_) {
    int width = 30, filled = static_cast<int>(width * step / std::max<std::int64_t>(total, 1));
    std::string bar(filled, '#');
    bar.resize(width, '.');
    std::fprintf(stderr, "\r[%s] %s\033[K", bar.c_str(), line);
    bar_open_ = true;
  } else {
    std::fprintf(stderr, "%s\n", line);
  }
}

void TrainLog::epoch(std::int64_t epoch, std::int64_t epochs, const EvalResult& e) {
  if (quiet_) return;
  if (bar_open_) std::fputc('\n', stderr);
  bar_open_ = false;
  if (e.samples == 0) {  // --val-split 0
    std::fprintf(stderr, "epoch %lld/%lld: no validation, %.0f img/s\n", static_cast<long long>(epoch) + 1,
                 static_cast<long long>(epochs), images_per_second());
    return;
  }
  if (e.multi_label) {
    // A figure of no images (precision when nothing was predicted) is "n/a", not "nan%".
    auto pct = [](double v) {
      char b[16];
      std::snprintf(b, sizeof b, "%.2f%%", 100.0 * v);
      return std::isnan(v) ? std::string("n/a") : std::string(b);
    };
    std::fprintf(stderr,
                 "epoch %lld/%lld: val loss %.4f, val mean AP %s, F1 %s (precision %s, recall %s), all tags right %s "
                 "(%lld images), %.0f img/s\n",
                 static_cast<long long>(epoch) + 1, static_cast<long long>(epochs), e.loss, pct(e.mean_ap).c_str(),
                 pct(e.f1).c_str(), pct(e.precision).c_str(), pct(e.recall).c_str(), pct(e.accuracy).c_str(),
                 static_cast<long long>(e.samples), images_per_second());
    return;
  }
  std::fprintf(stderr, "epoch %lld/%lld: val loss %.4f, val accuracy %.2f%% (%lld images), %.0f img/s\n",
               static_cast<long long>(epoch) + 1, static_cast<long long>(epochs), e.loss, 100.0 * e.accuracy,
               static_cast<long long>(e.samples), images_per_second());
}

void TrainLog::done() {
  if (quiet_) return;
  if (bar_open_) std::fputc('\n', stderr);
  bar_open_ = false;
  auto secs = std::chrono::duration_cast<std::chrono::seconds>(env_.steady_now() - start_);
  std::fprintf(stderr, "done in %s\n", format_duration(secs).c_str());
}

namespace {

nlohmann::json value_or_null(double v) { return std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v); }
double at(const std::vector<double>& v, std::size_t i) { return i < v.size() ? v[i] : NAN; }

}  // namespace

nlohmann::json EvalResult::to_json(const std::vector<std::string>& classes) const {
  nlohmann::json per = nlohmann::json::object();
  if (!multi_label) {
    for (std::size_t i = 0; i < per_class.size() && i < classes.size(); ++i)
      per[classes[i]] = value_or_null(per_class[i]);
    return {{"accuracy", accuracy}, {"loss", loss}, {"samples", samples}, {"per_class", per}};
  }
  for (std::size_t i = 0; i < per_class.size() && i < classes.size(); ++i)
    per[classes[i]] = {{"ap", value_or_null(per_class[i])},
                       {"precision", value_or_null(at(class_precision, i))},
                       {"recall", value_or_null(at(class_recall, i))},
                       {"f1", value_or_null(at(class_f1, i))},
                       {"positives", i < positives.size() ? positives[i] : 0},
                       {"best_threshold", value_or_null(at(best_thresholds, i))}};
  return {{"multi_label", true},
          {"mean_ap", value_or_null(mean_ap)},
          {"f1", value_or_null(f1)},
          {"precision", value_or_null(precision)},
          {"recall", value_or_null(recall)},
          {"exact_match", value_or_null(accuracy)},
          {"loss", loss},
          {"samples", samples},
          {"per_class", per}};
}

}  // namespace frugal
