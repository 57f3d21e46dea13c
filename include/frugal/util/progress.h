// Progress on long work, on stderr: a redrawn bar on a terminal, a plain line every few seconds
// otherwise (pipes, logs of notebook cells and CI: terminal.h's stderr_redraws()). Thread-safe;
// silent when quiet() is set (--json), except for warn().
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "frugal/util/env.h"

namespace frugal {

class Progress {
 public:
  enum class Unit { bytes, items };
  // Rates and ETA come from `env`'s steady clock.
  Progress(std::string label, std::uint64_t total, Unit unit = Unit::bytes, Env& env = Env::real());
  ~Progress();
  void advance(std::uint64_t n);
  void finish();
  static void set_quiet(bool quiet);
  static bool quiet();

 private:
  void draw(bool final);
  Env& env_;
  std::string label_;
  std::uint64_t total_;
  Unit unit_;
  std::atomic<std::uint64_t> done_{0};
  std::mutex mu_;
  Env::SteadyTime start_, last_draw_;
  bool tty_, finished_ = false;
};

// One line to stderr, unless quiet. Control characters in it (from names in data) are escaped
// (terminal.h's printable()), so a line is always one line and never drives the terminal.
void note(const std::string& line);
// While one lives, the lines note() is given on this thread are added to `lines` (escaped, as
// they would have been printed) instead of printed: a front end says them its own way (Python's
// Loader says each once per data). Other threads' notes, warn() and Progress print as before.
class NoteCapture {
 public:
  explicit NoteCapture(std::vector<std::string>& lines);
  ~NoteCapture();
  NoteCapture(const NoteCapture&) = delete;
  NoteCapture& operator=(const NoteCapture&) = delete;

 private:
  std::vector<std::string>* previous_;
};
// "frugal: warning: <line>" to stderr, escaped as note() does, and printed even when quiet: --json
// keeps stdout for its document, and a warning is for the person reading stderr either way.
void warn(const std::string& line);

}  // namespace frugal
