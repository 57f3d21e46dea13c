// What `eval` and `report` share: a loaded model evaluated over a data set, in order.
#pragma once

#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "frugal/checkpoint/checkpoint.h"
#include "frugal/loader/loader.h"
#include "frugal/train/evaluate.h"
#include "frugal/train/step.h"

namespace frugal::cli {

// --tta none|flip (eval, predict, report): the test-time augmentation of frugal/train/evaluate.h.
inline void add_tta_option(CLI::App& app, Tta& tta) {
  app.add_option_function<std::string>(
         "--tta", [&tta](const std::string& v) { tta = parse_tta(v).value_or(Tta::none); },
         "test-time augmentation: none (the default) or flip (each image's logits averaged with its left-right "
         "mirror's)")
      ->check(CLI::IsMember({"none", "flip"}));
}

// `loaded` over `data` in its order, at the model's own image size and normalisation, `batch_size`
// images a batch decoded by `workers` threads: the figures `eo` asks for (confusion, worst, tags).
inline EvalResult evaluate_loaded(LoadedModel& loaded, const std::shared_ptr<Dataset>& data, const ClassMatch& match,
                                  int batch_size, int workers, EvalOptions& eo) {
  LoaderOptions lo;
  lo.image_size = loaded.info.image_size;
  lo.train = false;
  lo.shuffle = false;
  lo.batch_size = batch_size;
  lo.workers = workers;
  Loader loader(data, lo);
  StepOptions so;
  so.mean = loaded.info.mean;
  so.std = loaded.info.std;
  return evaluate(*loaded.model, loader, match, so, &eo);
}

}  // namespace frugal::cli
