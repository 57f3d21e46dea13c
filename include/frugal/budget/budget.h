// Budgets a long run must live within: disk space (DiskBudget), wall-clock time (Deadline) and
// the user's patience (SignalGuard: stop cleanly on SIGTERM/SIGINT/SIGHUP/SIGUSR1).
//
// Torch-free (frugal_budget links only frugal_util); `frugal du` and `frugal clean` use it too.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "frugal/util/env.h"

namespace frugal {

// ---------------------------------------------------------------------------------------------
// Disk

enum class FileKind {
  data,        // *.zip, *.z01.., split parts (*.partNNNN, NAME_aa, NAME.000), *.manifest.json
  checkpoint,  // *.safetensors inside a run folder (run_folder.h's is_run_folder)
  temporary,   // *.frugal-tmp-* (atomic writes in progress or interrupted)
  partial,     // *.frugal-join: an interrupted join's output; after `join --delete-parts` the only
               // copy of the parts already removed. Counted, never removed: a rerun continues it.
  other,
};

const char* to_string(FileKind kind);

// `in_run_folder`: the file's folder is a run folder (see docs/formats.md, "Run folder").
FileKind classify_file(const std::filesystem::path& path, bool in_run_folder);

// Bytes by kind, as the file system allocates them (st_blocks x 512), not as files declare them:
// 10,000 files of 1 KiB take 40 MiB on a 4 KiB-block file system, and that is what fills a disk.
struct DiskUsage {
  std::uint64_t data = 0, checkpoints = 0, temporary = 0, partial = 0, other = 0;
  std::uint64_t total() const { return data + checkpoints + temporary + partial + other; }
  std::uint64_t& operator[](FileKind kind);
};

// Walks `workspace` (symlinks counted as `other` by their own size, never followed; unreadable
// folders skipped with a note).
DiskUsage measure_usage(const std::filesystem::path& workspace);

// Bytes the file system holding `path` allocates for a new file of `bytes` bytes: rounded up to
// its block size (statvfs f_bsize; 4096 when unknown).
std::uint64_t allocated_bytes(const std::filesystem::path& path, std::uint64_t bytes);
// What an existing file occupies (st_blocks x 512); 0 when it is absent.
std::uint64_t allocated_size(const std::filesystem::path& file);

// Temporaries (*.frugal-tmp-*) under `workspace`, whoever owns them: remove only the ones
// remove_if_abandoned() (fs.h) proves abandoned.
std::vector<std::filesystem::path> find_temporary_files(const std::filesystem::path& workspace);
// Partial join outputs (*.frugal-join) under `workspace`: kept, counted, listed with how to resume.
std::vector<std::filesystem::path> find_partial_files(const std::filesystem::path& workspace);

struct DiskBudgetOptions {
  std::optional<std::uint64_t> limit;       // --disk-budget; none = only the free space counts
  std::uint64_t warn_below = 512ull << 20;  // warn when less than this is left...
  double warn_below_fraction = 0.10;        // ...or less than this fraction of the limit
  std::chrono::seconds watch_interval{30};
  // The folder whose abandoned temporaries make_room() may remove (the run's own folder); the
  // rest of the workspace belongs to other runs and commands. Empty: none.
  std::filesystem::path own_folder;
  // Files outside the workspace that count against `limit` too: the tars {cache_decompressed}
  // made of this run's data, wherever the cache folder is. One inside the workspace counts once.
  std::vector<std::filesystem::path> counted;
};

// Room for new files in a workspace: the smaller of (limit - usage) and the file system's free
// space. make_room() frees space in a fixed order that never loses the last good checkpoint:
//   1. abandoned temporaries directly in options.own_folder (their writer is dead: fs.h's lock;
//      never the one being written now, never another live process's, never a partial join),
//   2. files that the evictable callback lists (checkpoints retention no longer needs), oldest
//      first, one at a time until there is room.
// When that is not enough it returns false and removes nothing more: the trainer then stops at the
// next step, resumable (75) when a rerun continues from a checkpoint saved earlier, else exit 4.
class DiskBudget {
 public:
  DiskBudget(std::filesystem::path workspace, DiskBudgetOptions options, Env& env = Env::real());
  ~DiskBudget();  // stops the watcher
  DiskBudget(const DiskBudget&) = delete;
  DiskBudget& operator=(const DiskBudget&) = delete;

  // Bytes that may still be written (re-measures usage when a limit is set).
  std::uint64_t available();
  // What counts against the limit now: the workspace's usage and options.counted outside it.
  std::uint64_t used() const;
  // Throws Error(budget) naming the budget, the usage and the need when `bytes` cannot fit even
  // after make_room(); use before starting work that would otherwise fail half-way.
  void require(std::uint64_t bytes, const std::string& what);
  bool make_room(std::uint64_t bytes);
  // For small appends (metrics, events): true when `bytes` fit, counted against the room last
  // measured (re-measured only when that runs out), so a log line does not walk the workspace.
  bool reserve(std::uint64_t bytes);

  // Files that may be deleted to make room, in deletion order (the checkpoint manager's
  // CheckpointManager::evictable()). Called under no lock of ours; must be thread-safe.
  void set_evictable(std::function<std::vector<std::filesystem::path>()> evictable);
  // Temporaries being written right now, which make_room() must not remove.
  void set_in_progress(std::function<std::vector<std::filesystem::path>()> in_progress);

  // A thread that re-checks every watch_interval and notes a warning (once per crossing) when
  // little room is left. Optional; the trainer starts it.
  void start_watcher();
  void stop_watcher();
  bool low_space_warned() const { return warned_.load(); }

  const std::filesystem::path& workspace() const { return workspace_; }
  const DiskBudgetOptions& options() const { return options_; }

 private:
  void check_once();
  std::filesystem::path workspace_;
  DiskBudgetOptions options_;
  Env& env_;
  std::function<std::vector<std::filesystem::path>()> evictable_, in_progress_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::atomic<bool> warned_{false};
  std::atomic<std::uint64_t> known_room_{0};  // room at the last measure, less reserve()d bytes
  std::thread watcher_;
};

// ---------------------------------------------------------------------------------------------
// Time

// A deadline as the user wrote it, parsed but not yet started: "90s", "30m", "7h30m" (counted
// from when the run starts) or "HH:MM" (its next occurrence, local time). `text` is kept as given
// (a run's config.json records it).
struct DeadlineSpec {
  std::string text;
  std::optional<std::chrono::seconds> after;  // a duration; none: a time of day
  int hour = 0, minute = 0;
  // Throws Error(usage) naming the text and the accepted forms.
  static DeadlineSpec parse(std::string_view text);
};

// When to stop so that the run ends saved before a wall-clock limit. Step, evaluation and save
// times are measured (exponential moving averages, first sample taken as is) and the run stops
// before a step when that step plus a save (plus an evaluation when one is due) would not fit
// with a safety margin.
class Deadline {
 public:
  // "90s", "30m", "7h30m" (from now) or "HH:MM" (its next occurrence, local time).
  // Throws Error(usage) for other text.
  static Deadline parse(std::string_view text, Env& env = Env::real());
  // The spec's end, counted from env's clocks now.
  static Deadline start(const DeadlineSpec& spec, Env& env = Env::real());
  Deadline(Env::SteadyTime end, Env& env = Env::real());

  double remaining_seconds() const;
  bool expired() const { return remaining_seconds() <= 0; }

  void record_step(double seconds);
  void record_eval(double seconds);
  void record_save(double seconds);
  double step_seconds() const { return step_; }
  double eval_seconds() const { return eval_; }
  double save_seconds() const { return save_; }

  // Before each step: would one more step plus (an eval if due) plus a final save still end
  // before the deadline (with margin)? Until a step is measured this is true while time remains.
  bool should_stop_before_next_step(bool eval_due = false) const;

  // After the first measured step (and, if known, save): throws Error(budget) (exit 4) when the
  // whole budget, counted from the start, cannot hold one step plus one save.
  void check_fits_one_step() const;
  // Before any step: throws Error(budget) when the deadline has passed, or when the whole budget
  // is no longer than the margin of one step (margin(0)): surely too short, known at no cost.
  void check_time_left() const;

  // Added to every estimate: 10% of the estimate plus one second.
  static double margin(double estimate) { return estimate * 0.10 + 1.0; }

 private:
  Env* env_;
  Env::SteadyTime start_, end_;
  double step_ = 0, eval_ = 0, save_ = 0;
  bool step_known_ = false, eval_known_ = false, save_known_ = false;
};

// Installs handlers for SIGTERM, SIGINT, SIGHUP and SIGUSR1 while alive (one guard at a time).
// The first signal sets a flag: the trainer finishes the current step, saves and exits 75. A
// second signal ends the process at once: _exit(75) when a checkpoint exists (set_resumable),
// else _exit(1) saying nothing was saved; that is safe because every file frugal writes is
// published by an atomic rename, so nothing torn is ever visible. (A step that never ends is the
// Watchdog's, watchdog.h.)
class SignalGuard {
 public:
  SignalGuard();
  ~SignalGuard();  // restores the previous handlers
  SignalGuard(const SignalGuard&) = delete;
  SignalGuard& operator=(const SignalGuard&) = delete;

  bool stop_requested() const;
  int signal_number() const;  // 0 when none arrived
  static const char* signal_name(int sig);

  // For tests: behave as if `sig` had arrived, without raising it.
  void simulate(int sig);

  // Whether a checkpoint a rerun resumes from exists (the Watchdog keeps it current; false at
  // first): a second signal exits 75 when it does, else 1.
  static void set_resumable(bool resumable);

  // For a rank torchrun started, called before its session. torchrun stops the ranks still running
  // (SIGTERM) as soon as one exits, and a stopped run's ranks all exit 75 at about the same time:
  // a rank still closing its session (threads, process group) would be killed by that signal, and
  // rank 0 killed before it records its exit code makes `--nproc` exit 1 instead of 75. So once a
  // guard has come and gone (the session is over: saved, its outcome decided) these signals are
  // ignored until the process exits; before the first guard they act as they did (the default:
  // the process ends). torchrun kills a rank that does not exit 30 s after the signal.
  static void ignore_after_session();
};

}  // namespace frugal
