#include "frugal/compress/compress.h"
#include "frugal/loader/loader.h"
#include "frugal/util/error.h"
#include "frugal/util/progress.h"
#include "frugal/train/amp.h"
#include "frugal/train/optim.h"
#include "frugal/train/step.h"
#include "frugal/train/evaluate.h"
#include "frugal/models/models.h"

namespace frugal {

void finetune_pruned(Model& model, const ModelInfo& info, const PruneMasks& masks, const std::filesystem::path& archive,
                     const FinetuneOptions& options) {
  DatasetOptions dopts = options.dataset;
  dopts.channels = info.channels;
  auto data = Dataset::open(archive, dopts);
  check_label_kind(info.multi_label, data->multi_label(), archive.string());
  // The one class rule (evaluate.h): by name; a subset of the model's classes is fine-tuned on.
  const ClassMatch match = match_classes(info.classes, data->classes(), archive.string());
  const auto remap = match.remap();

  LoaderOptions lopts;
  lopts.image_size = info.image_size;
  lopts.train = true;
  lopts.batch_size = options.batch_size;
  lopts.workers = options.workers;
  lopts.seed = options.seed;
  Loader loader(data, lopts);

  OptimizerOptions oopts;
  oopts.lr = options.lr;
  oopts.weight_decay = 0.0;
  auto setup = make_optimizer(model, oopts);
  LossScalerOptions sopts;
  sopts.enabled = false;
  LossScaler scaler(sopts);
  StepOptions step_opts;
  step_opts.micro_batch = options.batch_size;
  step_opts.mean = info.mean;
  step_opts.std = info.std;
  TrainStep step(model, *setup.optimizer, scaler, step_opts);

  model.train();
  for (int epoch = 0; epoch < options.epochs; ++epoch) {
    Progress progress("fine-tune epoch " + std::to_string(epoch + 1) + "/" + std::to_string(options.epochs),
                      data->size(), Progress::Unit::items);
    loader.start(epoch);
    while (auto batch = loader.next()) {
      step.run({{batch->images, match.model_labels(batch->labels, remap)}});
      apply_masks(model, masks);
      progress.advance(static_cast<std::uint64_t>(batch->labels.size(0)));
    }
    progress.finish();
  }
  model.eval();
}

}  // namespace frugal
