// frugal clean [DIR] [--dry-run] [--json]
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "cli.h"
#include "commands.h"
#include "frugal/budget/budget.h"
#include "frugal/checkpoint_files/checkpoint_files.h"
#include "frugal/util/error.h"
#include "frugal/util/fs.h"
#include "frugal/util/input_path.h"
#include "frugal/util/progress.h"
#include "frugal/checkpoint_files/run_folder.h"
#include "frugal/util/terminal.h"
#include "frugal/util/units.h"

namespace fs = std::filesystem;

namespace frugal::cli {
namespace {

// A temporary is removed only when its owner's lock can be taken (fs.h: the writer is dead). It
// must also have gone quiet for a minute, for writers that hold no lock (other programs, older
// frugal versions): every write updates the modification time.
constexpr auto kQuietFor = std::chrono::seconds(60);

// How to continue an interrupted join whose partial output is `partial` ("OUT.frugal-join").
std::string resume_hint(const fs::path& partial) {
  const std::string out = partial.string().substr(0, partial.string().size() - std::string(".frugal-join").size());
  std::error_code ec;
  if (fs::exists(out + ".manifest.json", ec)) return "resume: frugal join " + out + ".manifest.json";
  return "resume: frugal join MANIFEST -o " + out + " (the manifest it was joined from)";
}

// "in use by frugal train --run runs/a (pid 1234)" from FileLock::holder's "pid 1234: frugal ...".
std::string in_use_by(const fs::path& folder) {
  const std::string who = FileLock::holder(folder);
  const auto colon = who.find(": ");
  if (who.empty()) return "in use by another process";
  if (colon == std::string::npos) return "in use (" + who + ")";
  return "in use by " + who.substr(colon + 2) + " (" + who.substr(0, colon) + ")";
}

bool inside(const fs::path& path, const fs::path& folder) {
  const auto rel = path.lexically_relative(folder);
  return !rel.empty() && *rel.begin() != "..";
}

struct Item {
  fs::path path;
  std::string why;
  std::uint64_t bytes;
};

// What clean found: what it would remove, what it keeps (and why), the run folders it skips.
struct Findings {
  std::vector<Item> items;
  std::vector<std::string> kept;
  nlohmann::json skipped = nlohmann::json::array();
  std::vector<FileLock> locks;  // of the run folders judged, held until the removals are done
  std::vector<fs::path> busy;   // run folders a training holds
};

// The checkpoints of `run` (locked) that retention no longer needs.
void judge_checkpoints(const fs::path& run, Findings& f) {
  std::error_code ec;
  const RetentionPolicy policy = retention_from_config(run);
  auto entries = list_checkpoints(run, /*verify=*/true);
  for (const auto& e : entries)
    if (!e.valid) f.kept.push_back(e.path.string() + " (invalid, kept for inspection: " + e.problem + ")");
  for (const auto& p : checkpoints_to_delete(entries, policy)) {
    if (fs::is_symlink(fs::symlink_status(p, ec))) {
      f.kept.push_back(p.string() + " (a symbolic link, not a checkpoint frugal wrote)");
      continue;
    }
    f.items.push_back({p, "retention", allocated_size(p)});
  }
}

// Run folders first, and all of them before anything is removed: a config.json that cannot be
// read (a FIFO, a link out, "keep_last": "10") stops the command with nothing deleted. A run
// folder is locked while its files are judged and removed; one a training holds is skipped.
void judge_run_folders(const std::string& dir, bool json, Findings& f) {
  for (const auto& run : find_run_folders(dir)) {
    auto lock = FileLock::try_lock(run);
    if (!lock) {
      const std::string why = in_use_by(run);
      f.busy.push_back(run);
      f.skipped.push_back({{"path", run.string()}, {"reason", why}});
      if (!json) note(run.string() + ": " + why + "; skipped");
      continue;
    }
    f.locks.push_back(std::move(*lock));
    judge_checkpoints(run, f);
  }
}

// Temporaries outside the run folders a training holds, and interrupted joins' outputs.
void judge_temporaries(const std::string& dir, Findings& f) {
  auto in_busy_run = [&](const fs::path& p) {
    for (const auto& run : f.busy)
      if (inside(p, run)) return true;
    return false;
  };
  for (const auto& tmp : find_temporary_files(dir)) {
    if (in_busy_run(tmp)) continue;
    switch (sweep_temp(tmp, kQuietFor, /*remove=*/false)) {
      case TempState::abandoned:
        f.items.push_back({tmp, "temporary", allocated_size(tmp)});
        break;
      case TempState::owned:
        f.kept.push_back(tmp.string() + " (being written by a running frugal)");
        break;
      case TempState::recent:
        f.kept.push_back(tmp.string() + " (modified in the last minute; may still be being written)");
        break;
      case TempState::absent:
        break;
    }
  }
  // Never swept: after `join --delete-parts` the partial output is the only copy of the parts
  // already removed, and a rerun of the join continues it.
  for (const auto& partial : find_partial_files(dir))
    f.kept.push_back(partial.string() + " (an interrupted join's output, " + format_size(allocated_size(partial)) +
                     "; " + resume_hint(partial) + ")");
}

struct Removed {
  std::uint64_t freed = 0;
  nlohmann::json list = nlohmann::json::array();
};

// Removes (or with `dry_run` only lists) the items found; what cannot go joins `f.kept`.
Removed remove_items(Findings& f, bool dry_run, bool json) {
  std::error_code ec;
  Removed removed;
  for (const auto& it : f.items) {
    if (!dry_run) {
      if (it.why == "temporary") {
        // Checked again at removal, holding the owner's lock: a writer may have started since.
        if (!remove_if_abandoned(it.path, kQuietFor)) {
          f.kept.push_back(it.path.string() + " (in use again; not removed)");
          continue;
        }
      } else if (!fs::remove(it.path, ec) && ec) {
        f.kept.push_back(it.path.string() + " (could not remove: " + ec.message() + ")");
        continue;
      }
    }
    removed.freed += it.bytes;
    removed.list.push_back({{"path", it.path.string()}, {"reason", it.why}, {"bytes", it.bytes}});
    if (!json)
      note(std::string(dry_run ? "would remove " : "removed ") + it.path.string() + " (" + it.why + ", " +
           format_size(it.bytes) + ")");
  }
  return removed;
}

}  // namespace

int cmd_clean(int argc, char** argv) {
  CLI::App app(
      "Remove temporary files, orphaned partial writes and checkpoints retention no longer needs. A run "
      "folder a running training holds is skipped; every config.json is read before anything is removed.",
      "clean");
  std::string dir = ".";
  bool dry_run = false, json = false;
  app.add_option("DIR", dir, "workspace or run folder (default: the current one)");
  app.add_flag("--dry-run,-n", dry_run, "list what would be removed, remove nothing");
  app.add_flag("--json", json, "one JSON document on stdout");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  Progress::set_quiet(json);
  check_input(dir, InputKind::folder);  // the answer every command gives a missing or mistyped path
  Findings f;
  judge_run_folders(dir, json, f);
  judge_temporaries(dir, f);
  const Removed removed = remove_items(f, dry_run, json);
  f.locks.clear();
  if (json) {
    // json_text: paths on disk need not be UTF-8, and the report must reach the user after
    // removing (invalid bytes are shown as U+FFFD).
    std::cout << json_text({{"dry_run", dry_run},
                            {"removed", removed.list},
                            {"freed", removed.freed},
                            {"kept", f.kept},
                            {"skipped", f.skipped}},
                           2)
              << std::endl;
    return 0;
  }
  for (const auto& k : f.kept) note("kept " + k);
  note(std::string(dry_run ? "would free " : "freed ") + format_size(removed.freed));
  return 0;
}

}  // namespace frugal::cli
