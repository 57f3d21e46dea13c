// frugal du [DIR] [--budget SIZE] [--json]
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

nlohmann::json usage_json(DiskUsage u) {
  return {{"data", u.data},           {"checkpoints", u.checkpoints},
          {"temporary", u.temporary}, {"partial", u.partial},
          {"other", u.other},         {"total", u.total()}};
}

// What du reports of a workspace.
struct DuReport {
  std::string dir;
  DiskUsage usage;
  std::optional<std::uint64_t> budget;
  std::string source = "none";  // where the budget came from
  std::uint64_t free = 0, available = 0;
  nlohmann::json runs = nlohmann::json::array();
  std::uint64_t reclaimable = 0;  // what retention would remove, in all runs
};

DuReport measure(const std::string& dir, const std::string& budget_text) {
  DuReport r;
  r.dir = dir;
  auto runs = find_run_folders(dir);
  if (!budget_text.empty()) {
    r.budget = parse_size(budget_text);
    r.source = "--budget";
  } else if (auto b = budget_from_runs(runs)) {
    r.budget = b->first;
    r.source = b->second.string();
  }
  r.usage = measure_usage(dir);
  r.free = free_space(dir);
  r.available = r.free;
  if (r.budget) r.available = std::min(r.free, r.usage.total() >= *r.budget ? 0 : *r.budget - r.usage.total());
  for (const auto& run : runs) {
    auto entries = list_checkpoints(run, /*verify=*/false);
    auto removable = checkpoints_to_delete(entries, retention_from_config(run));
    std::uint64_t reclaim = 0;
    for (const auto& p : removable) reclaim += allocated_size(p);
    r.reclaimable += reclaim;
    r.runs.push_back({{"path", run.string()}, {"checkpoints", entries.size()}, {"reclaimable", reclaim}});
  }
  return r;
}

void print_json(const DuReport& r) {
  // json_text: paths on disk need not be UTF-8 (invalid bytes are shown as U+FFFD).
  std::cout << json_text({{"workspace", r.dir},
                          {"usage", usage_json(r.usage)},
                          {"budget", r.budget ? nlohmann::json(*r.budget) : nlohmann::json(nullptr)},
                          {"budget_source", r.source},
                          {"free", r.free},
                          {"available", r.available},
                          {"over_budget", r.budget && r.usage.total() > *r.budget},
                          {"reclaimable", r.reclaimable},
                          {"runs", r.runs}},
                         2)
            << std::endl;
}

// The table is the command's result: stdout (CLI.md), paths escaped for the terminal.
void print_table(const DuReport& r) {
  DiskUsage usage = r.usage;  // a copy: DiskUsage's operator[] is not const
  std::FILE* out = stdout;
  std::fprintf(out, "%-12s %12s\n", "kind", "size");
  for (FileKind k : {FileKind::data, FileKind::checkpoint, FileKind::temporary, FileKind::partial, FileKind::other})
    std::fprintf(out, "%-12s %12s\n", to_string(k), format_size(usage[k]).c_str());
  std::fprintf(out, "%-12s %12s\n", "total", format_size(r.usage.total()).c_str());
  if (r.budget)
    std::fprintf(out, "budget       %12s (%s)%s\n", format_size(*r.budget).c_str(), printable(r.source).c_str(),
                 r.usage.total() > *r.budget ? "  OVER BUDGET" : "");
  std::fprintf(out, "free on disk %12s; room left %s\n", format_size(r.free).c_str(), format_size(r.available).c_str());
  if (r.reclaimable || r.usage.temporary)
    std::fprintf(out, "frugal clean %s would free at most %s (temporaries still being written are kept)\n",
                 printable(r.dir).c_str(), format_size(r.reclaimable + r.usage.temporary).c_str());
  if (r.usage.partial)
    std::fprintf(out, "partial: interrupted joins, never removed; frugal clean %s lists how to finish them\n",
                 printable(r.dir).c_str());
}

}  // namespace

int cmd_du(int argc, char** argv) {
  CLI::App app("Disk use of a workspace by kind (data, checkpoints, temporary, partial, other) against its budget",
               "du");
  std::string dir = ".", budget_text;
  bool json = false;
  app.add_option("DIR", dir, "workspace folder (default: the current one)");
  app.add_option("--budget", budget_text, "disk budget, e.g. 20G (default: the runs' disk_budget setting)");
  app.add_flag("--json", json, "one JSON document on stdout");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  Progress::set_quiet(json);
  check_input(dir, InputKind::folder);  // the answer every command gives a missing or mistyped path

  const DuReport report = measure(dir, budget_text);
  if (json)
    print_json(report);
  else
    print_table(report);
  return 0;
}

}  // namespace frugal::cli
