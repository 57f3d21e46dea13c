// frugal verify ARCHIVE [--json] [--threads N] [--name-encoding ENC]
#include <cstdio>

#include "cli.h"
#include "commands.h"
#include "frugal/archive/archive.h"
#include "frugal/util/error.h"
#include "frugal/util/progress.h"
#include "frugal/util/terminal.h"
#include "frugal/util/units.h"

namespace frugal::cli {

int cmd_verify(int argc, char** argv) {
  CLI::App app("Check every part (manifest: size, SHA-256) and every entry (CRC-32, size), listing every bad item",
               "verify");
  std::string archive_path;
  bool json = false;
  unsigned threads = 0;
  ArchiveOptions options;
  app.add_option("ARCHIVE", archive_path, "zip, split manifest or first part, tar, folder, shard pattern, DATA:SUB/")
      ->required();
  app.add_flag("--json", json, "one JSON document on stdout");
  app.add_option("--threads", threads, "threads to use (default: one per core)")->check(integer_in(0, 4096));
  add_data_options(app, options);
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  Progress::set_quiet(json);

  const VerifyReport r = verify_archive(archive_path, options, threads);
  if (json) {
    print_json(nlohmann::json::parse(verify_report_json(r)));
  } else {
    for (const auto& b : r.bad) std::printf("BAD  %s: %s\n", printable(b.name).c_str(), printable(b.problem).c_str());
    std::printf("%s: %s, %s, %s checked; %s\n", printable(archive_path).c_str(),
                count_of(r.parts_checked, "part").c_str(), count_of(r.entries_checked, "entry").c_str(),
                format_size(r.bytes_checked).c_str(),
                r.ok() ? "all good" : (count_of(r.bad.size(), "bad item")).c_str());
    // Tar members and a folder's files carry no checksum: reading them whole proves less.
    if (r.entries_without_checksum)
      std::printf("%s without a checksum (tar members, files of a folder): read whole, damaged bytes cannot be told\n",
                  count_of(r.entries_without_checksum, "entry").c_str());
  }
  return r.ok() ? 0 : exit_code(ErrorKind::invalid);
}

}  // namespace frugal::cli
