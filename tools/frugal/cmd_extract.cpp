// frugal extract ARCHIVE [PATTERN...] [-C DIR] [--limit N] [--max-bytes SIZE] [--disk-budget SIZE]
#include "cli.h"
#include "commands.h"
#include "frugal/archive.h"
#include "frugal/progress.h"
#include "frugal/units.h"

namespace frugal::cli {

int cmd_extract(int argc, char** argv) {
  CLI::App app("Extract entries matching glob patterns (all when none); checks names and budgets before writing", "extract");
  std::string archive_path, max_bytes, disk_budget;
  std::string dir = ".";
  std::optional<std::uint64_t> limit;
  ArchiveOptions options;
  ExtractOptions x;
  app.add_option("ARCHIVE", archive_path, "zip file, split manifest or first part")->required();
  app.add_option("PATTERN", x.patterns, "fnmatch-style globs on entry names ('*' also matches '/')");
  app.add_option("-C,--dir", dir, "folder to extract into (created if missing)");
  app.add_option("--limit", limit, "extract at most N files")->check(at_least(0));
  app.add_option("--max-bytes", max_bytes, "refuse when the selected entries declare more than SIZE")->check(valid_size());
  app.add_option("--disk-budget", disk_budget, "refuse when the files would take more than SIZE of disk")->check(valid_size());
  app.add_option("--name-encoding", options.name_encoding, "encoding of names that are not UTF-8 (cp437, gbk, ...)");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;

  x.dir = dir;
  x.limit = limit;
  if (!max_bytes.empty()) x.max_bytes = parse_size(max_bytes);
  if (!disk_budget.empty()) x.disk_budget = parse_size(disk_budget);
  auto archive = Archive::open(archive_path, options);
  const ExtractResult r = extract(*archive, x);
  note("extracted " + count_of(r.files, "file") + ", " + count_of(r.dirs, "folder") + ", " +
       format_size(r.bytes) + " into " + dir);
  return 0;
}

}  // namespace frugal::cli
