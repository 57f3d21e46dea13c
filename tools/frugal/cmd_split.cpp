// frugal split FILE [--size SIZE] [-o DIR] [--json] [--no-sync]
#include <chrono>
#include <iostream>

#include "cli.h"
#include "commands.h"
#include "frugal/util/input_path.h"
#include "frugal/util/progress.h"
#include "frugal/archive/split.h"
#include "frugal/util/terminal.h"
#include "frugal/util/units.h"

namespace frugal::cli {

int cmd_split(int argc, char** argv) {
  CLI::App app(
      "Cut FILE into parts of at most SIZE with a manifest of SHA-256 sums "
      "(FILE.part0000, ... and FILE.manifest.json).",
      "split");
  std::string file, size_text = "1000M", out_dir;
  bool json = false, no_sync = false;
  app.add_option("FILE", file, "the file to split")->required();
  app.add_option("--size", size_text, "largest part size, e.g. 1000M, 2G, 1.5GB (default 1000M)")->check(valid_size());
  app.add_option("-o,--out-dir", out_dir, "folder for the parts and manifest (default: FILE's folder)");
  app.add_flag("--json", json, "print a JSON report on stdout");
  app.add_flag("--no-sync", no_sync, "for benchmarks only: skip fsync (a crash may lose parts)");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  Progress::set_quiet(json);

  file = check_input(file, InputKind::file).string();
  SplitOptions options;
  options.part_size = parse_size(size_text);
  options.out_dir = out_dir;
  options.sync = !no_sync;
  auto start = std::chrono::steady_clock::now();
  SplitResult r = split_file(file, options);
  if (r.temporaries_removed)
    note("split: removed " + count_of(r.temporaries_removed, "abandoned temporary file") +
         " of an interrupted split of " + r.name);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  if (json) {
    nlohmann::json parts = nlohmann::json::array();
    for (const auto& p : r.parts) parts.push_back({{"file", p.file}, {"size", p.size}, {"sha256", p.sha256}});
    // json_text: file names on disk need not be UTF-8 (invalid bytes are shown as U+FFFD; the
    // manifest keeps them exactly).
    std::cout << json_text({{"manifest", r.manifest.string()},
                            {"name", r.name},
                            {"size", r.size},
                            {"sha256", r.sha256},
                            {"parts", parts},
                            {"temporaries_removed", r.temporaries_removed},
                            {"seconds", seconds}},
                           2)
              << std::endl;
  } else {
    note("split " + r.name + " (" + format_size(r.size) + ") into " + count_of(r.parts.size(), "part") + "; manifest " +
         r.manifest.string());
  }
  return 0;
}

}  // namespace frugal::cli
