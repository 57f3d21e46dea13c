// frugal join MANIFEST [-o OUT] [--delete-parts] [--json] [--no-sync]
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

int cmd_join(int argc, char** argv) {
  CLI::App app(
      "Rebuild a file from the parts listed in MANIFEST, verifying each part's size and "
      "SHA-256 and the whole file's SHA-256 as read back from the output. An interrupted join "
      "continues where it stopped when run again; a finished one checks the output and says so. "
      "Two joins of one set, or into one output, never run at once: the second stops (exit 1) "
      "naming the first.",
      "join");
  std::string manifest, out;
  bool json = false, delete_parts = false, no_sync = false;
  app.add_option("MANIFEST", manifest, "the FILE.manifest.json written by 'frugal split'")->required();
  app.add_option("-o,--output", out, "output file (default: the original name, beside the manifest)");
  app.add_flag("--delete-parts", delete_parts,
               "remove each part once it is safely in the output, so the peak disk use stays near one copy");
  app.add_flag("--json", json, "print a JSON report on stdout");
  app.add_flag("--no-sync", no_sync, "for benchmarks only: skip fsync (a crash may lose data)");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  Progress::set_quiet(json);

  manifest = check_input(manifest, InputKind::manifest).string();
  JoinOptions options;
  options.output = out;
  options.delete_parts = delete_parts;
  options.sync = !no_sync;
  auto start = std::chrono::steady_clock::now();
  JoinResult r = join_parts(manifest, options);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  if (json) {
    // json_text: an output path on disk need not be UTF-8.
    std::cout << json_text({{"output", r.output.string()},
                            {"size", r.size},
                            {"sha256", r.sha256},
                            {"parts", r.parts},
                            {"parts_resumed", r.parts_resumed},
                            {"parts_deleted", r.parts_deleted},
                            {"already_joined", r.already_joined},
                            {"seconds", seconds}},
                           2)
              << std::endl;
  } else if (r.already_joined) {
    note("already joined: " + r.output.string() + " (" + format_size(r.size) + ", SHA-256 verified)" +
         (r.parts_deleted ? "; removed " + count_of(r.parts_deleted, "part") + " still there" : ""));
  } else {
    note("joined " + count_of(r.parts, "part") + " into " + r.output.string() + " (" + format_size(r.size) +
         ", SHA-256 verified)");
  }
  return 0;
}

}  // namespace frugal::cli
