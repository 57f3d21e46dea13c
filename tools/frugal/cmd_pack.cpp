// frugal pack SRC -o OUT.zip [--split SIZE] [--root NAME] [--idx-set SET] [--class-names a,b,...]
#include <chrono>
#include <iostream>

#include "cli.h"
#include "commands.h"
#include "frugal/util/input_path.h"
#include "frugal/archive/pack.h"
#include "frugal/util/progress.h"
#include "frugal/util/terminal.h"
#include "frugal/util/units.h"

namespace frugal::cli {

namespace {

// "a,b,,c" -> {"a", "b", "", "c"}; "" -> {}.
std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  for (std::size_t pos = 0; !text.empty() && pos <= text.size();) {
    std::size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    parts.push_back(text.substr(pos, comma - pos));
    pos = comma + 1;
  }
  return parts;
}

void print_result(const PackResult& r, double seconds, bool json) {
  if (json) {
    nlohmann::json classes = nlohmann::json::object();
    for (const auto& [name, n] : r.classes) classes[name] = n;
    // json_text: folder and file names on disk need not be UTF-8.
    std::cout << json_text({{"output", r.output.string()},
                            {"source", r.source},
                            {"entries", r.entries},
                            {"stored", r.stored},
                            {"deflated", r.deflated},
                            {"bytes", r.bytes},
                            {"zip64", r.zip64},
                            {"parts", r.parts},
                            {"classes", classes},
                            {"unfinished_skipped", r.unfinished_skipped},
                            {"temporaries_removed", r.temporaries_removed},
                            {"seconds", seconds}},
                           2)
              << std::endl;
  } else {
    note("packed " + count_of(r.entries, "entry") + " (" + std::to_string(r.stored) + " stored, " +
         std::to_string(r.deflated) + " deflated) into " + r.output.string() + " (" + format_size(r.bytes) +
         (r.parts ? ", " + count_of(r.parts, "part") : "") + ")");
  }
}

}  // namespace

int cmd_pack(int argc, char** argv) {
  CLI::App app(
      "Build a dataset zip from a folder of class sub-folders, or from IDX image + label files "
      "(e.g. train-images-idx3-ubyte.gz, written as PNGs in one folder per class). Files are "
      "sorted and timestamps fixed, so the same input gives the same zip. Unfinished files "
      "(*.frugal-tmp-*, *.frugal-join) are never packed.",
      "pack");
  std::string src, out, split_text, root, idx_set, class_names, max_file_text;
  bool json = false;
  app.add_option("SRC", src, "a folder of class sub-folders, an IDX images file, or a folder of IDX files")->required();
  app.add_option("-o,--output", out, "the zip to write (with --split: the name of the split set)")->required();
  app.add_option("--split", split_text,
                 "write only parts of at most SIZE (OUT.zip.part0000, ...) and OUT.zip.manifest.json")
      ->check(valid_size());
  app.add_option("--root", root, "a folder name every entry starts with");
  app.add_option("--idx-set", idx_set, "IDX: which set of a folder to pack (train, t10k, ...)");
  app.add_option("--class-names", class_names, "IDX: comma-separated folder names for labels 0, 1, ...");
  app.add_option("--max-file-bytes", max_file_text,
                 "IDX: an images or labels file whose data (as its header declares) is larger is refused before it "
                 "is read (default 256M; EMNIST ByClass's 547 MB needs 1G). A folder's files are not capped: one "
                 "above 64 MiB is stored and copied in pieces")
      ->check(valid_size());
  app.add_flag("--json", json, "print a JSON report on stdout");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  Progress::set_quiet(json);

  check_input(src, InputKind::pack_source);
  PackOptions options;
  options.output = out;
  if (!split_text.empty()) options.split_size = parse_size(split_text);
  if (!max_file_text.empty()) options.max_file_bytes = parse_size(max_file_text);
  options.root = root;
  options.idx_set = idx_set;
  options.class_names = split_commas(class_names);
  auto start = std::chrono::steady_clock::now();
  PackResult r = pack(src, options);
  if (r.unfinished_skipped)
    note("pack: skipped " + count_of(r.unfinished_skipped, "unfinished file") + " in " + src +
         " (*.frugal-tmp-*, *.frugal-join: interrupted writes, not data)");
  if (r.temporaries_removed)
    note("pack: removed " + count_of(r.temporaries_removed, "abandoned temporary file") +
         " of an interrupted pack of " + out);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  print_result(r, seconds, json);
  return 0;
}

}  // namespace frugal::cli
