// Shared plumbing for the sub-commands: parsing with CLI11, --json output, option validators.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace frugal::cli {

// Parses argv (argv[0] is the command name). Returns -1 to go on, else the exit code to return
// (0 after --help, 2 after a usage error, with the message and a pointer to --help).
int parse(CLI::App& app, int argc, char** argv);

// An error message for the user of `command`: an option named in it that this command does not
// take (library advice such as "raise --max-bad-fraction", written for train, reaching eval) is
// said as a setting this command lacks instead of an option to type. A clause quoting a whole
// "frugal CMD ..." line is left alone. Before parse() has seen the command's options: unchanged.
std::string fit_advice(const std::string& what, const std::string& command);

// Prints one JSON document on stdout (terminal.h's json_text: names that are not UTF-8 do not
// break it).
void print_json(const nlohmann::json& doc);

// `frugal doctor --json`'s document for the disk of `workspace` (frugal-torch only: it asks LibTorch;
// the report page shows it).
nlohmann::json doctor_json(const std::string& workspace);

// A command's result (the ls table, the verify report, the eval table, predict's rows) goes to
// stdout whether or not it is a terminal, so `frugal ls x.zip | head` works; notes, warnings and
// progress go to stderr (CLI.md). Names from data in it go through printable() (terminal.h).

// The options of every command that reads DATA (ArchiveOptions or DatasetOptions): --data-root,
// --cache-decompressed and --name-encoding (docs/data.md).
template <class Options>
void add_data_options(CLI::App& app, Options& options) {
  app.add_option("--data-root", options.root,
                 "read only this folder inside the data, e.g. train/ (DATA:train/ says the same)");
  app.add_flag("--cache-decompressed", options.cache_decompressed,
               "a compressed tar (.tar.gz, .tgz, .tar.zst, .tar.xz, .tar.bz2) is decompressed once into the "
               "cache folder ($FRUGAL_CACHE_DIR, else ~/.cache/frugal) and read from there, reused while it "
               "is unchanged; it stops before the disk's last 5% (at most 1 GiB)");
  app.add_option("--name-encoding", options.name_encoding, "encoding of names that are not UTF-8 (cp437, gbk, ...)");
  app.add_option("--label-kind", options.label_kind, "CIFAR-100's labels: fine (default, 100 classes) or coarse (20)")
      ->check(CLI::IsMember({"fine", "coarse"}));
}

// The options that say where labels come from besides class folders (DatasetOptions; docs/data.md,
// "Labels"): --labels, --label-columns, --label-separator, --labels-header, --labels-are-classes,
// --images-dir, --class-names.
template <class Options>
void add_label_options(CLI::App& app, Options& options) {
  app.add_option("--labels", options.labels,
                 "a CSV or TSV of image ids and labels, inside the data or beside it (e.g. train.csv)");
  app.add_option("--label-columns", options.label_columns,
                 "ID,LABEL: the --labels columns, header names or 0-based indices (default the first two); "
                 "multi-label: ID,* (every column after ID) or ID,A,B,... (more than one), one 0/1 column per tag");
  app.add_option("--label-separator", options.label_separator,
                 "SEP: multi-label: each --labels label is a list of tags separated by SEP (e.g. ' ')");
  app.add_option("--labels-header", options.labels_header,
                 "yes|no|auto: whether the --labels file's first row is a header (no: columns by index only; "
                 "auto: refused when it looks like data)");
  app.add_flag("--labels-are-classes", options.labels_are_classes,
               "each whole --labels label is one class, even when the labels look like tag lists (which are refused "
               "without this or --label-separator)");
  app.add_option("--images-dir", options.images_dir,
                 "the folder inside the data that --labels ids are relative to (default the CSV's)");
  app.add_option("--class-names", options.class_names,
                 "names of integer classes: a JSON map {\"0\": \"name\"}, a JSON list, or one name a line");
}

// --exclude FILE|GLOB (DatasetOptions::exclude; docs/data.md): files never read, repeatable.
template <class Options>
void add_exclude_option(CLI::App& app, Options& options) {
  app.add_option("--exclude", options.exclude,
                 "FILE|GLOB: files never read, by their path inside the data or a glob ('*' within a folder, '**' "
                 "across them; without '/': a file name in any folder); repeatable")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

// Validators whose messages read "--top: expected an integer >= 1, found 0" (CLI11 adds the
// option's name; its own print ranges as "0.000000 to 1797693…", 300 digits). Each refuses text
// that is not a number of the kind, so CLI11's conversion never sees it.
CLI::Validator at_least(long long min);                              // an integer >= min
CLI::Validator integer_in(long long lo, long long hi);               // an integer in [lo, hi]
CLI::Validator number_at_least(double min, bool exclusive = false);  // a number >= min (> min)
CLI::Validator number_in(double lo, double hi);                      // a number in [lo, hi]
CLI::Validator probability();                                        // a number in (0, 1)
CLI::Validator one_of(std::vector<std::string> choices);             // "expected one of cpu, gpu, auto, found x"
CLI::Validator valid_size();      // what parse_size takes: 512K, 1000M, 1.5G, 5GiB, 5GB
CLI::Validator valid_duration();  // what parse_duration takes: 90s, 30m, 7h30m

// --max-file-bytes SIZE (read_limit.h; default 256M): images and .npy files larger than it are never
// read; `what` says what becomes of them in this command ("skipped and counted", "an error").
void add_max_file_bytes_option(CLI::App& app, std::uint64_t& bytes, const std::string& what);

// --allow-model-code: a TorchScript module (a run's, or --model FILE.pt) may run any op, not only
// the allowlist's (docs/models.md).
inline void add_model_code_option(CLI::App& app, bool& allow) {
  app.add_flag("--allow-model-code", allow,
               "a TorchScript module (the run's, or --model FILE.pt) may run any op it holds: this runs code from "
               "that file with your rights (docs/models.md)");
}

// The options of eval, predict and export for CKPT that is weights from elsewhere
// (ForeignModelOptions, checkpoint.h; docs/models.md): --model and --image-size.
template <class Options>
void add_foreign_model_options(CLI::App& app, Options& options) {
  app.add_option("--model", options.model,
                 "for CKPT that is weights from elsewhere (torch.save .pth, safetensors, a Hugging Face folder): "
                 "the zoo model or TorchScript module (FILE.pt) they are for; default: the zoo model their names fit");
  app.add_option("--image-size", options.image_size,
                 "for weights from elsewhere: the input size (default: the model's)")
      ->check(at_least(1));
  add_model_code_option(app, options.allow_model_code);
}

}  // namespace frugal::cli
