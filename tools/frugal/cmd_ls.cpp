// frugal ls ARCHIVE [--json] [--name-encoding ENC]
#include <cstdio>
#include <iostream>

#include "cli.h"
#include "commands.h"
#include "frugal/archive/archive.h"
#include "frugal/util/hash.h"
#include "frugal/util/progress.h"
#include "frugal/util/terminal.h"
#include "frugal/util/units.h"

namespace frugal::cli {

int cmd_ls(int argc, char** argv) {
  CLI::App app(
      "List the entries of data: a zip, a split set, a zip -s set, a tar, a folder, a WebDataset shard "
      "pattern, DATA:SUB/ (a folder inside) or DATA:INNER.zip (an archive stored inside)",
      "ls");
  std::string archive_path;
  bool json = false;
  ArchiveOptions options;
  app.add_option("ARCHIVE", archive_path, "zip, split manifest or first part, tar, folder, shard pattern, DATA:SUB/")
      ->required();
  app.add_flag("--json", json, "one JSON document on stdout");
  add_data_options(app, options);
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  Progress::set_quiet(json);

  auto archive = Archive::open(archive_path, options);
  const auto& entries = archive->entries();
  if (json) {
    // One entry at a time: a million entries cost their index, not a second copy as a JSON tree.
    std::fputs("{\n  \"entries\": [", stdout);
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const ZipEntry& e = entries[i];
      nlohmann::json j = {{"name", e.name},
                          {"size", e.size},
                          {"compressed_size", e.compressed_size},
                          {"method", method_name(e.method)},
                          {"crc32", e.has_crc32 ? nlohmann::json(hex32(e.crc32)) : nlohmann::json(nullptr)}};
      if (!e.name_is_utf8) j["raw_name_hex"] = to_hex(e.raw_name.data(), e.raw_name.size());
      if (auto p = entry_problem(*archive, i); !p.empty()) j["problem"] = p;
      std::fputs(i == 0 ? "\n    " : ",\n    ", stdout);
      std::fputs(json_text(j).c_str(), stdout);
    }
    std::fputs(entries.empty() ? "]\n}\n" : "\n  ]\n}\n", stdout);
    return std::fflush(stdout) == 0 ? 0 : 1;
  }
  std::printf("%14s %14s  %-8s %-8s  %s\n", "size", "compressed", "method", "crc32", "name");
  std::uint64_t total = 0, bad = 0;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const ZipEntry& e = entries[i];
    const std::string problem = entry_problem(*archive, i);
    std::printf("%14llu %14llu  %-8s %-8s  %s%s\n", static_cast<unsigned long long>(e.size),
                static_cast<unsigned long long>(e.compressed_size), method_name(e.method).c_str(),
                e.has_crc32 ? hex32(e.crc32).c_str() : "-", printable(e.name).c_str(),
                problem.empty() ? "" : ("   [" + printable(problem) + "]").c_str());
    total += e.size;
    bad += !problem.empty();
  }
  std::printf("%s, %s", count_of(entries.size(), "entry").c_str(), format_size(total).c_str());
  if (bad) std::printf("; %llu that extract would refuse (marked [...])", static_cast<unsigned long long>(bad));
  std::printf("\n");
  return 0;
}

}  // namespace frugal::cli
