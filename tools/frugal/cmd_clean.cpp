// frugal clean [DIR] [--dry-run] [--json]
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "cli.h"
#include "commands.h"
#include "frugal/budget.h"
#include "frugal/checkpoint_files.h"
#include "frugal/error.h"
#include "frugal/fs.h"
#include "frugal/input_path.h"
#include "frugal/progress.h"
#include "frugal/run_folder.h"
#include "frugal/terminal.h"
#include "frugal/units.h"

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

}  // namespace

int cmd_clean(int argc, char** argv) {
  CLI::App app("Remove temporary files, orphaned partial writes and checkpoints retention no longer needs. A run "
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
  std::error_code ec;

  struct Item {
    fs::path path;
    std::string why;
    std::uint64_t bytes;
  };
  std::vector<Item> items;
  std::vector<std::string> kept;
  nlohmann::json skipped = nlohmann::json::array();

  // Run folders first, and all of them before anything is removed: a config.json that cannot be
  // read (a FIFO, a link out, "keep_last": "10") stops the command with nothing deleted. A run
  // folder is locked while its files are judged and removed; one a training holds is skipped.
  std::vector<FileLock> locks;
  std::vector<fs::path> busy;
  for (const auto& run : find_run_folders(dir)) {
    auto lock = FileLock::try_lock(run);
    if (!lock) {
      const std::string why = in_use_by(run);
      busy.push_back(run);
      skipped.push_back({{"path", run.string()}, {"reason", why}});
      if (!json) note(run.string() + ": " + why + "; skipped");
      continue;
    }
    locks.push_back(std::move(*lock));
    const RetentionPolicy policy = retention_from_config(run);
    auto entries = list_checkpoints(run, /*verify=*/true);
    for (const auto& e : entries)
      if (!e.valid) kept.push_back(e.path.string() + " (invalid, kept for inspection: " + e.problem + ")");
    for (const auto& p : checkpoints_to_delete(entries, policy)) {
      if (fs::is_symlink(fs::symlink_status(p, ec))) {
        kept.push_back(p.string() + " (a symbolic link, not a checkpoint frugal wrote)");
        continue;
      }
      items.push_back({p, "retention", allocated_size(p)});
    }
  }
  auto in_busy_run = [&](const fs::path& p) {
    for (const auto& run : busy)
      if (inside(p, run)) return true;
    return false;
  };
  for (const auto& tmp : find_temporary_files(dir)) {
    if (in_busy_run(tmp)) continue;
    switch (sweep_temp(tmp, kQuietFor, /*remove=*/false)) {
      case TempState::abandoned: items.push_back({tmp, "temporary", allocated_size(tmp)}); break;
      case TempState::owned: kept.push_back(tmp.string() + " (being written by a running frugal)"); break;
      case TempState::recent:
        kept.push_back(tmp.string() + " (modified in the last minute; may still be being written)");
        break;
      case TempState::absent: break;
    }
  }
  // Never swept: after `join --delete-parts` the partial output is the only copy of the parts
  // already removed, and a rerun of the join continues it.
  for (const auto& partial : find_partial_files(dir))
    kept.push_back(partial.string() + " (an interrupted join's output, " + format_size(allocated_size(partial)) +
                   "; " + resume_hint(partial) + ")");

  std::uint64_t freed = 0;
  nlohmann::json removed = nlohmann::json::array();
  for (const auto& it : items) {
    if (!dry_run) {
      if (it.why == "temporary") {
        // Checked again at removal, holding the owner's lock: a writer may have started since.
        if (!remove_if_abandoned(it.path, kQuietFor)) {
          kept.push_back(it.path.string() + " (in use again; not removed)");
          continue;
        }
      } else if (!fs::remove(it.path, ec) && ec) {
        kept.push_back(it.path.string() + " (could not remove: " + ec.message() + ")");
        continue;
      }
    }
    freed += it.bytes;
    removed.push_back({{"path", it.path.string()}, {"reason", it.why}, {"bytes", it.bytes}});
    if (!json) note(std::string(dry_run ? "would remove " : "removed ") + it.path.string() + " (" + it.why + ", " +
                    format_size(it.bytes) + ")");
  }
  locks.clear();
  if (json) {
    // json_text: paths on disk need not be UTF-8, and the report must reach the user after
    // removing (invalid bytes are shown as U+FFFD).
    std::cout << json_text({{"dry_run", dry_run}, {"removed", removed}, {"freed", freed}, {"kept", kept},
                            {"skipped", skipped}},
                           2)
              << std::endl;
    return 0;
  }
  for (const auto& k : kept) note("kept " + k);
  note(std::string(dry_run ? "would free " : "freed ") + format_size(freed));
  return 0;
}

}  // namespace frugal::cli
