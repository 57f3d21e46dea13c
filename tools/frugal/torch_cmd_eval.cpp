// frugal eval CKPT --data ARCHIVE [--json]
#include "cli.h"
#include "commands.h"
#include "frugal/compress.h"
#include "frugal/data.h"
#include "frugal/error.h"
#include "frugal/progress.h"
#include "frugal/train.h"

namespace frugal::cli {

int cmd_eval(int argc, char** argv) {
  CLI::App app("Loss, top-1 and per-class accuracy of a model on an archive.", "eval");
  std::string ckpt, data, label_pattern;
  int batch_size = 256, workers = 2;
  bool json = false;
  app.add_option("CKPT", ckpt, "checkpoint file, compressed model or run folder (its best.safetensors)")->required();
  app.add_option("--data", data, "archive to evaluate on (the model's class names, all or some of them)")->required();
  app.add_option("--label-pattern", label_pattern, "regex with one capture group for labels in file names");
  app.add_option("--batch-size", batch_size, "images per forward pass");
  app.add_option("--workers", workers, "decode threads");
  app.add_flag("--json", json, "print {accuracy, loss, per_class} as JSON on stdout");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  Progress::set_quiet(json);

  auto loaded = load_model_any(ckpt);
  DatasetOptions d;
  d.label_pattern = label_pattern;
  d.channels = loaded.info.channels;
  auto dataset = Dataset::open(data, d);
  // The data may hold a subset of the model's classes (said in a note); a class the model does not
  // know is exit 3 naming it.
  const ClassMatch match = match_classes(loaded.info.classes, dataset->classes(), data);
  if (!match.absent.empty()) note("note: " + match.note(data));
  LoaderOptions lo;
  lo.image_size = loaded.info.image_size;
  lo.train = false;
  lo.shuffle = false;
  lo.batch_size = batch_size;
  lo.workers = workers;
  Loader loader(dataset, lo);
  StepOptions so;
  so.mean = loaded.info.mean;
  so.std = loaded.info.std;
  EvalResult r = evaluate(*loaded.model, loader, match, so);
  const auto& classes = dataset->classes();  // per_class follows the data's classes
  if (json) {
    auto doc = r.to_json(classes);
    if (!match.absent.empty()) doc["absent_classes"] = match.absent;
    print_json(doc);
  } else {
    note("accuracy " + std::to_string(100.0 * r.accuracy) + "% loss " + std::to_string(r.loss) + " on " +
         std::to_string(r.samples) + " images");
    for (std::size_t i = 0; i < r.per_class.size(); ++i)
      note("  " + classes[i] + ": " + std::to_string(100.0 * r.per_class[i]) + "%");
  }
  return 0;
}

}  // namespace frugal::cli
