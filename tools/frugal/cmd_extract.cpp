// frugal extract ARCHIVE [PATTERN...] [-C DIR] [--limit N] [--max-bytes SIZE] [--disk-budget SIZE]
//                [--overwrite | --skip-existing]
#include "cli.h"
#include "commands.h"
#include "frugal/archive/archive.h"
#include "frugal/util/progress.h"
#include "frugal/util/units.h"

namespace frugal::cli {

int cmd_extract(int argc, char** argv) {
  CLI::App app(
      "Extract entries matching glob patterns (all when none); checks names, files already there and "
      "budgets before writing. A file already there with the entry's size and CRC-32 counts as extracted "
      "(a rerun after an interruption completes it); any other file there refuses the extraction (exit 2) "
      "unless --overwrite or --skip-existing is given. The archive itself is never replaced.",
      "extract");
  std::string archive_path, max_bytes, disk_budget;
  std::string dir = ".";
  std::optional<std::uint64_t> limit;
  ArchiveOptions options;
  ExtractOptions x;
  app.add_option("ARCHIVE", archive_path, "zip, split manifest or first part, tar, shard pattern, DATA:SUB/")
      ->required();
  app.add_option("PATTERN", x.patterns, "fnmatch-style globs on entry names ('*' also matches '/')");
  app.add_option("-C,--dir", dir, "folder to extract into (created if missing)");
  app.add_option("--limit", limit, "extract at most N files")->check(at_least(0));
  app.add_option("--max-bytes", max_bytes, "refuse when the selected entries declare more than SIZE")
      ->check(valid_size());
  app.add_option("--disk-budget", disk_budget, "refuse when the files would take more than SIZE of disk")
      ->check(valid_size());
  add_data_options(app, options);
  bool overwrite = false, skip_existing = false;
  auto* o = app.add_flag("--overwrite", overwrite, "replace files already there (never the archive being read)");
  app.add_flag("--skip-existing", skip_existing, "keep files already there and extract the rest")->excludes(o);
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  x.existing = overwrite ? ExistingFiles::overwrite : skip_existing ? ExistingFiles::skip : ExistingFiles::refuse;

  x.dir = dir;
  x.limit = limit;
  if (!max_bytes.empty()) x.max_bytes = parse_size(max_bytes);
  if (!disk_budget.empty()) x.disk_budget = parse_size(disk_budget);
  auto archive = Archive::open(archive_path, options);
  const ExtractResult r = extract(*archive, x);
  if (r.temporaries_removed)
    note("extract: removed " + count_of(r.temporaries_removed, "abandoned temporary file") +
         " of an interrupted extract in " + dir);
  std::string more;
  if (r.already_there) more += "; " + std::to_string(r.already_there) + " already there (same size and CRC-32)";
  if (r.kept) more += "; " + count_of(r.kept, "existing file") + " kept (--skip-existing)";
  if (r.replaced) more += "; " + std::to_string(r.replaced) + " replaced (--overwrite)";
  note("extracted " + count_of(r.files, "file") + ", " + count_of(r.dirs, "folder") + ", " + format_size(r.bytes) +
       " into " + dir + more);
  return 0;
}

}  // namespace frugal::cli
