// compress's before/after accuracy: the one evaluation (evaluate.h) with the one class rule.
#include "frugal/compress/compress.h"
#include "frugal/loader/loader.h"
#include "frugal/util/error.h"
#include "frugal/util/progress.h"
#include "frugal/train/step.h"
#include "frugal/train/evaluate.h"
#include "frugal/training/train_log.h"
#include "frugal/models/models.h"

namespace frugal {

AccuracyReport measure_accuracy(Model& model, const ModelInfo& info, const std::filesystem::path& archive,
                                const DatasetOptions& dataset, int batch_size, int workers) {
  DatasetOptions dopts = dataset;
  dopts.channels = info.channels;
  auto data = Dataset::open(archive, dopts);
  const ClassMatch match = match_classes(info.classes, data->classes(), archive.string());
  if (!match.absent.empty()) note("note: " + match.note(archive.string()));

  LoaderOptions lopts;
  lopts.image_size = info.image_size;
  lopts.train = false;
  lopts.shuffle = false;
  lopts.batch_size = batch_size;
  lopts.workers = workers;
  Loader loader(data, lopts);
  StepOptions sopts;  // on the CPU, float32, as load_model_any leaves the model
  sopts.mean = info.mean;
  sopts.std = info.std;

  Progress progress("accuracy " + archive.filename().string(), data->size(), Progress::Unit::items);
  EvalOptions eopts;
  eopts.multi_label = info.multi_label;
  if (info.multi_label)
    eopts.thresholds = info.thresholds.empty() ? std::vector<float>{info.threshold} : info.thresholds;
  check_label_kind(info.multi_label, data->multi_label(), archive.string());
  eopts.after_batch = [&](std::int64_t n) { progress.advance(static_cast<std::uint64_t>(n)); };
  const EvalResult r = evaluate(model, loader, match, sopts, &eopts);
  progress.finish();
  if (r.samples == 0)
    fail(ErrorKind::invalid, archive.string(), "images to evaluate on", "none", "pass an archive of images");
  return {r.score(), static_cast<std::uint64_t>(r.samples), r.score_name()};
}

}  // namespace frugal
