// frugal du [DIR] [--budget SIZE] [--json]
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

nlohmann::json usage_json(DiskUsage u) {
  return {{"data", u.data}, {"checkpoints", u.checkpoints}, {"temporary", u.temporary}, {"partial", u.partial},
          {"other", u.other}, {"total", u.total()}};
}

}  // namespace

int cmd_du(int argc, char** argv) {
  CLI::App app("Disk use of a workspace by kind (data, checkpoints, temporary, partial, other) against its budget", "du");
  std::string dir = ".", budget_text;
  bool json = false;
  app.add_option("DIR", dir, "workspace folder (default: the current one)");
  app.add_option("--budget", budget_text, "disk budget, e.g. 20G (default: the runs' disk_budget setting)");
  app.add_flag("--json", json, "one JSON document on stdout");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  Progress::set_quiet(json);
  check_input(dir, InputKind::folder);  // the answer every command gives a missing or mistyped path

  auto runs = find_run_folders(dir);
  std::optional<std::uint64_t> budget;
  std::string source = "none";
  if (!budget_text.empty()) {
    budget = parse_size(budget_text);
    source = "--budget";
  } else if (auto b = budget_from_runs(runs)) {
    budget = b->first;
    source = b->second.string();
  }
  DiskUsage usage = measure_usage(dir);
  std::uint64_t free = free_space(dir);
  std::uint64_t available = free;
  if (budget) available = std::min(free, usage.total() >= *budget ? 0 : *budget - usage.total());

  nlohmann::json run_list = nlohmann::json::array();
  std::uint64_t reclaimable_total = 0;
  for (const auto& run : runs) {
    auto entries = list_checkpoints(run, /*verify=*/false);
    auto removable = checkpoints_to_delete(entries, retention_from_config(run));
    std::uint64_t reclaim = 0;
    for (const auto& p : removable) reclaim += allocated_size(p);
    reclaimable_total += reclaim;
    run_list.push_back({{"path", run.string()}, {"checkpoints", entries.size()}, {"reclaimable", reclaim}});
  }

  if (json) {
    // json_text: paths on disk need not be UTF-8 (invalid bytes are shown as U+FFFD).
    std::cout << json_text({{"workspace", dir},
                            {"usage", usage_json(usage)},
                            {"budget", budget ? nlohmann::json(*budget) : nlohmann::json(nullptr)},
                            {"budget_source", source},
                            {"free", free},
                            {"available", available},
                            {"over_budget", budget && usage.total() > *budget},
                            {"reclaimable", reclaimable_total},
                            {"runs", run_list}},
                           2)
              << std::endl;
    return 0;
  }
  // The table is the command's result: stdout (CLI.md), paths escaped for the terminal.
  std::FILE* out = stdout;
  std::fprintf(out, "%-12s %12s\n", "kind", "size");
  for (FileKind k : {FileKind::data, FileKind::checkpoint, FileKind::temporary, FileKind::partial, FileKind::other})
    std::fprintf(out, "%-12s %12s\n", to_string(k), format_size(usage[k]).c_str());
  std::fprintf(out, "%-12s %12s\n", "total", format_size(usage.total()).c_str());
  if (budget)
    std::fprintf(out, "budget       %12s (%s)%s\n", format_size(*budget).c_str(), printable(source).c_str(),
                 usage.total() > *budget ? "  OVER BUDGET" : "");
  std::fprintf(out, "free on disk %12s; room left %s\n", format_size(free).c_str(), format_size(available).c_str());
  if (reclaimable_total || usage.temporary)
    std::fprintf(out, "frugal clean %s would free at most %s (temporaries still being written are kept)\n",
                 printable(dir).c_str(), format_size(reclaimable_total + usage.temporary).c_str());
  if (usage.partial)
    std::fprintf(out, "partial: interrupted joins, never removed; frugal clean %s lists how to finish them\n",
                 printable(dir).c_str());
  return 0;
}

}  // namespace frugal::cli
