#include "frugal/util/progress.h"
#include "frugal/util/settings_text.h"
#include "frugal/util/terminal.h"

#include <cstdio>

#include "frugal/util/units.h"

namespace frugal {
namespace {
std::atomic<bool> g_quiet{false};
thread_local std::vector<std::string>* t_capture = nullptr;  // NoteCapture's

std::string amount(std::uint64_t n, Progress::Unit unit) {
  return unit == Progress::Unit::bytes ? format_size(n) : std::to_string(n);
}
}  // namespace

void Progress::set_quiet(bool quiet) { g_quiet = quiet; }
bool Progress::quiet() { return g_quiet; }

void note(const std::string& line) {
  if (g_quiet) return;
  if (t_capture)
    t_capture->push_back(printable(spell_settings(line)));
  else
    std::fprintf(stderr, "%s\n", printable(spell_settings(line)).c_str());
}

NoteCapture::NoteCapture(std::vector<std::string>& lines) : previous_(t_capture) { t_capture = &lines; }
NoteCapture::~NoteCapture() { t_capture = previous_; }

void warn(const std::string& line) {
  std::fprintf(stderr, "frugal: warning: %s\n", printable(spell_settings(line)).c_str());
}

Progress::Progress(std::string label, std::uint64_t total, Unit unit, Env& env)
    : env_(env),
      label_(std::move(label)),
      total_(total),
      unit_(unit),
      start_(env_.steady_now()),
      last_draw_(start_),
      tty_(stderr_redraws()) {}

Progress::~Progress() {
  if (!finished_ && tty_ && !g_quiet) std::fprintf(stderr, "\n");
}

void Progress::advance(std::uint64_t n) {
  done_ += n;
  auto now = env_.steady_now();
  auto period = tty_ ? std::chrono::milliseconds(100) : std::chrono::milliseconds(5000);
  std::unique_lock lock(mu_, std::try_to_lock);
  if (!lock.owns_lock() || now - last_draw_ < period) return;
  last_draw_ = now;
  draw(false);
}

void Progress::finish() {
  std::lock_guard lock(mu_);
  if (finished_) return;
  finished_ = true;
  if (tty_) draw(true);
}

void Progress::draw(bool final) {
  if (g_quiet) return;
  double secs = std::chrono::duration<double>(env_.steady_now() - start_).count();
  std::uint64_t done = done_;
  double rate = secs > 0 ? static_cast<double>(done) / secs : 0;
  std::string line = printable(label_) + ": " + amount(done, unit_);
  if (total_ > 0) {
    int pct = static_cast<int>(100.0 * static_cast<double>(done) / static_cast<double>(total_));
    line += " / " + amount(total_, unit_) + " (" + std::to_string(pct) + "%)";
    if (rate > 0 && done < total_)
      line += ", ETA " +
              format_duration(std::chrono::seconds(static_cast<long long>(static_cast<double>(total_ - done) / rate)));
  }
  line += ", " + (unit_ == Unit::bytes ? format_size(static_cast<std::uint64_t>(rate)) + "/s"
                                       : std::to_string(static_cast<long long>(rate)) + "/s");
  if (tty_)
    std::fprintf(stderr, "\r\033[K%s%s", line.c_str(), final ? "\n" : "");
  else
    std::fprintf(stderr, "%s\n", line.c_str());
}

}  // namespace frugal
