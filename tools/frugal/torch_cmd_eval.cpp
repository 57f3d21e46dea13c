// frugal eval CKPT --data ARCHIVE [--max-pixels N] [--max-bad-fraction F] [--json] [--confusion] [--worst N]
#include <cmath>

#include <cstdio>

#include "cli.h"
#include "commands.h"
#include "torch_eval.h"
#include "frugal/compress/compress.h"
#include "frugal/loader/loader.h"
#include "frugal/training/classification_report.h"
#include "frugal/util/error.h"
#include "frugal/util/progress.h"
#include "frugal/util/terminal.h"
#include "frugal/train/step.h"
#include "frugal/train/evaluate.h"
#include "frugal/training/train_log.h"
#include "frugal/models/models.h"
#include "frugal/util/units.h"

namespace frugal::cli {
namespace {

// The thresholds a multi-label evaluation uses: --threshold, else the model's.
std::vector<float> thresholds_of(const ModelInfo& info, double given) {
  if (given > 0) return {static_cast<float>(given)};
  if (!info.thresholds.empty()) return info.thresholds;
  return {info.threshold};
}

void print_multi_label(const EvalResult& r, const std::vector<std::string>& classes, bool per_class_thresholds) {
  std::printf("mean AP %s F1 %s (precision %s, recall %s) all tags right %s loss %s on %s (%s)\n",
              format_percent(r.mean_ap).c_str(), format_percent(r.f1).c_str(), format_percent(r.precision).c_str(),
              format_percent(r.recall).c_str(), format_percent(r.accuracy).c_str(), std::to_string(r.loss).c_str(),
              count_of(r.samples, "image").c_str(),
              per_class_thresholds ? "the model's per-class thresholds" : "one threshold for all");
  for (std::size_t i = 0; i < r.per_class.size() && i < classes.size(); ++i) {
    if (r.positives[i] == 0) {
      std::printf("  %s: no image has it\n", printable(classes[i]).c_str());
      continue;
    }
    std::printf("  %s: AP %s precision %s recall %s F1 %s (%s)\n", printable(classes[i]).c_str(),
                format_percent(r.per_class[i]).c_str(),
                std::isnan(r.class_precision[i]) ? "-" : format_percent(r.class_precision[i]).c_str(),
                format_percent(r.class_recall[i]).c_str(), format_percent(r.class_f1[i]).c_str(),
                count_of(r.positives[i], "image").c_str());
  }
}

struct EvalArgs {
  std::string ckpt, data;
  int batch_size = 256, workers = 2;
  double threshold = 0;
  bool json = false, confusion = false;
  std::size_t worst = 0;
  Tta tta = Tta::none;
  DatasetOptions d;
  ForeignModelOptions foreign;
};

void add_eval_options(CLI::App& app, EvalArgs& a) {
  DatasetOptions& d = a.d;
  app.add_option("CKPT", a.ckpt,
                 "checkpoint file, compressed model, run folder (its best.safetensors), or weights from elsewhere "
                 "with --model (their classes: the data's, sorted)")
      ->required();
  app.add_option("--data", a.data,
                 "data to evaluate on (the model's class names, all or some of them; any DATA, docs/data.md)")
      ->required();
  app.add_option("--label-pattern", d.label_pattern,
                 "RE2 regex with one capture group, the class: searched for in the file name, else in the path "
                 "inside the data (e.g. '([a-z]+)\\.[0-9]+\\.jpg$' for train/cat.0.jpg)");
  app.add_option("--batch-size", a.batch_size, "images per forward pass")->capture_default_str()->check(at_least(1));
  app.add_option("--workers", a.workers, "decode threads")->capture_default_str()->check(integer_in(1, kMaxWorkers));
  // The advice of the bad-image limit names these (a test set with a few broken files of many).
  app.add_option("--max-pixels", d.max_pixels, "larger images count as undecodable (decompression bombs)")
      ->capture_default_str()
      ->check(at_least(1));
  app.add_option("--max-bad-fraction", d.max_bad_fraction, "stop when more than this fraction of images is undecodable")
      ->capture_default_str()
      ->check(number_in(0, 1));
  add_max_file_bytes_option(app, d.max_file_bytes, "skipped and counted, as an empty file is");
  add_foreign_model_options(app, a.foreign);
  app.add_option("--threshold", a.threshold,
                 "multi-label models: a tag counts as predicted when its probability reaches this (default: the "
                 "model's per-class thresholds when it has them, else the threshold it was trained with)")
      ->check(probability());
  add_tta_option(app, a.tta);
  app.add_flag("--json", a.json,
               "print {accuracy, loss, per_class, classes, confusion, per_class_report, macro, weighted} as JSON on "
               "stdout (multi-label: {mean_ap, f1, precision, recall, exact_match, loss, per_class: {ap, precision, "
               "recall, f1, positives, best_threshold}})");
  app.add_flag("--confusion", a.confusion,
               "print the confusion matrix (rows: true class, columns: predicted, in the model's class order) and "
               "each class's precision, recall, F1 and support, with their macro and weighted averages (as "
               "scikit-learn's classification_report; always in --json); single-label models");
  app.add_option("--worst", a.worst,
                 "list the N images of highest loss: name in the data, true class, predicted class, its probability "
                 "and the loss (--json: \"worst\"); single-label models")
      ->check(at_least(1));
  add_data_options(app, d);
  add_label_options(app, d);
  add_exclude_option(app, d);
}

// --data opened as the model reads it (its channels; a split's validation folder), which part of
// it is evaluated said.
std::shared_ptr<Dataset> open_eval_data(EvalArgs& a, const LoadedModel& loaded) {
  a.d.channels = loaded.info.channels;
  a.d.split = SplitFolder::validation;  // on data with train/ val/ test/ at the top: its validation folder
  auto dataset = Dataset::open(a.data, a.d);
  if (const auto& files = dataset->split_files())
    note("note: " + a.data + ": " + files->what + ": evaluating on " +
         (files->validation.empty() ? files->test : files->validation));
  else if (!dataset->split_folder().empty())
    note("note: " + a.data + ": its top level is split folders: evaluating on " + dataset->split_folder());
  return dataset;
}

// --confusion and --worst are a single-label model's: refused (exit 2) on a multi-label one.
void check_single_label_options(const EvalArgs& a, bool multi_label) {
  if (!multi_label || (!a.confusion && a.worst == 0)) return;
  fail(ErrorKind::usage, a.confusion ? "--confusion" : "--worst", "a model of one class per image",
       "a multi-label model (" + a.ckpt + ")",
       "a multi-label evaluation gives each tag's AP, precision, recall and F1 instead: leave the option out");
}

// The worst images' entry names, from the dataset's indices.
void name_worst(EvalResult& r, const Dataset& data) {
  for (Prediction& p : r.worst)
    if (p.sample >= 0) p.name = data.name(static_cast<std::size_t>(p.sample));
}

void print_eval(const EvalArgs& a, const EvalResult& r, const std::vector<std::string>& classes,
                const std::vector<std::string>& model_classes, const ClassMatch& match, bool per_class_thresholds) {
  const ClassificationReport report = classification_report(r.confusion);
  if (r.multi_label && !a.json) {
    print_multi_label(r, classes, per_class_thresholds);
  } else if (a.json) {
    auto doc = r.to_json(classes);
    if (!match.absent.empty()) doc["absent_classes"] = match.absent;
    if (!r.multi_label) doc.update(classification_json(r.confusion, report, model_classes));
    if (a.worst > 0) doc["worst"] = worst_json(r.worst, model_classes);
    print_json(doc);
  } else {
    // The result: stdout (CLI.md), class names from data escaped.
    std::printf("accuracy %s loss %s on %s\n", format_percent(r.accuracy).c_str(), std::to_string(r.loss).c_str(),
                count_of(r.samples, "image").c_str());
    for (std::size_t i = 0; i < r.per_class.size(); ++i)
      std::printf("  %s: %s\n", printable(classes[i]).c_str(),
                  std::isnan(r.per_class[i]) ? "no images read" : format_percent(r.per_class[i]).c_str());
    if (a.confusion) std::printf("\n%s", confusion_text(r.confusion, report, model_classes).c_str());
    if (a.worst > 0) std::printf("\n%s", worst_text(r.worst, model_classes).c_str());
  }
}

}  // namespace

int cmd_eval(int argc, char** argv) {
  // The model runs as load_model_any leaves it: on the CPU, in float32, whatever --amp trained it.
  CLI::App app(
      "Loss, top-1 and per-class accuracy of a model on an archive, on the CPU in float32 (a multi-label model:\n"
      "mean average precision, and precision, recall and F1 at its thresholds, overall and per class).\n"
      "Training's evaluation runs under its --amp (bf16, fp16): its accuracy can differ by a few\n"
      "hundredths of a point.",
      "eval");
  EvalArgs a;
  add_eval_options(app, a);
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  Progress::set_quiet(a.json);

  auto loaded = load_model_any(a.ckpt, a.foreign);
  auto dataset = open_eval_data(a, loaded);
  use_data_classes(loaded, dataset->classes(), a.data);
  // The data may hold a subset of the model's classes (said in a note); a class the model does not
  // know is exit 3 naming it.
  check_label_kind(loaded.info.multi_label, dataset->multi_label(), a.data);
  check_single_label_options(a, loaded.info.multi_label);
  const ClassMatch match = match_classes(loaded.info.classes, dataset->classes(), a.data);
  if (!match.absent.empty()) note("note: " + match.note(a.data));
  EvalOptions eo;
  eo.multi_label = loaded.info.multi_label;
  eo.thresholds = thresholds_of(loaded.info, a.threshold);
  eo.confusion = !eo.multi_label;  // --json always carries it
  eo.worst = a.worst;
  eo.tta = a.tta;
  EvalResult r = evaluate_loaded(loaded, dataset, match, a.batch_size, a.workers, eo);
  name_worst(r, *dataset);
  // per_class follows the data's classes; the confusion matrix and the worst images the model's
  print_eval(a, r, dataset->classes(), loaded.info.classes, match, eo.thresholds.size() > 1);
  return 0;
}

}  // namespace frugal::cli
