// frugal clean [DIR] [--dry-run] [--json]
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "cli.h"
#include "commands.h"
#include "frugal/budget.h"
#include "frugal/error.h"
#include "frugal/progress.h"
#include "frugal/run_folder.h"
#include "frugal/units.h"

namespace fs = std::filesystem;

namespace frugal::cli {
namespace {

// A temporary touched this recently may belong to a write in progress (a running `frugal train`);
// every write updates the modification time, so an orphan is one that has gone quiet.
constexpr auto kQuietFor = std::chrono::seconds(60);

bool recently_modified(const fs::path& p) {
  std::error_code ec;
  auto t = fs::last_write_time(p, ec);
  return !ec && fs::file_time_type::clock::now() - t < kQuietFor;
}

}  // namespace

int cmd_clean(int argc, char** argv) {
  CLI::App app("Remove temporary files, orphaned partial writes and checkpoints retention no longer needs", "clean");
  std::string dir = ".";
  bool dry_run = false, json = false;
  app.add_option("DIR", dir, "workspace or run folder (default: the current one)");
  app.add_flag("--dry-run,-n", dry_run, "list what would be removed, remove nothing");
  app.add_flag("--json", json, "one JSON document on stdout");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  Progress::set_quiet(json);
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    fail(ErrorKind::usage, dir, "a folder", fs::exists(dir, ec) ? "a file" : "nothing", "give a workspace folder");

  struct Item {
    fs::path path;
    std::string why;
    std::uint64_t bytes;
  };
  std::vector<Item> items;
  std::vector<std::string> kept;
  for (const auto& tmp : find_temporary_files(dir)) {
    if (recently_modified(tmp)) {
      kept.push_back(tmp.string() + " (modified in the last minute; may still be being written)");
      continue;
    }
    items.push_back({tmp, "temporary", fs::file_size(tmp, ec)});
  }
  for (const auto& run : find_run_folders(dir)) {
    auto entries = list_checkpoints(run, /*verify=*/true);
    for (const auto& e : entries)
      if (!e.valid) kept.push_back(e.path.string() + " (invalid, kept for inspection: " + e.problem + ")");
    for (const auto& p : checkpoints_to_delete(entries, retention_from_config(run)))
      items.push_back({p, "retention", fs::file_size(p, ec)});
  }

  std::uint64_t freed = 0;
  nlohmann::json removed = nlohmann::json::array();
  for (const auto& it : items) {
    if (!dry_run) {
      if (!fs::remove(it.path, ec) && ec) {
        kept.push_back(it.path.string() + " (could not remove: " + ec.message() + ")");
        continue;
      }
    }
    freed += it.bytes;
    removed.push_back({{"path", it.path.string()}, {"reason", it.why}, {"bytes", it.bytes}});
    if (!json) note(std::string(dry_run ? "would remove " : "removed ") + it.path.string() + " (" + it.why + ", " +
                    format_size(it.bytes) + ")");
  }
  for (const auto& k : kept) note("kept " + k);
  if (json) {
    print_json({{"dry_run", dry_run}, {"removed", removed}, {"freed", freed}, {"kept", kept}});
    return 0;
  }
  note(std::string(dry_run ? "would free " : "freed ") + format_size(freed));
  return 0;
}

}  // namespace frugal::cli
