#include "frugal/compress.h"
#include "frugal/data.h"
#include "frugal/error.h"
#include "frugal/progress.h"

namespace frugal {

AccuracyReport measure_accuracy(Model& model, const ModelInfo& info, const std::filesystem::path& archive,
                                int batch_size, int workers) {
  DatasetOptions dopts;
  dopts.channels = info.channels;
  auto data = Dataset::open(archive, dopts);

  // Dataset label -> model output index, by class name.
  std::vector<std::int64_t> to_model;
  for (const auto& name : data->classes()) {
    auto it = std::find(info.classes.begin(), info.classes.end(), name);
    if (it == info.classes.end())
      fail(ErrorKind::invalid, archive.string(), "classes the model knows (" + std::to_string(info.classes.size()) +
           " of them)", "class \"" + name + "\"", "evaluate on data with the model's classes");
    to_model.push_back(it - info.classes.begin());
  }
  auto remap = torch::tensor(to_model, torch::kInt64);

  LoaderOptions lopts;
  lopts.image_size = info.image_size;
  lopts.train = false;
  lopts.shuffle = false;
  lopts.batch_size = batch_size;
  lopts.workers = workers;
  Loader loader(data, lopts);
  loader.start(0);

  model.eval();
  torch::NoGradGuard no_grad;
  Progress progress("accuracy " + archive.filename().string(), data->size(), Progress::Unit::items);
  AccuracyReport r;
  std::uint64_t correct = 0;
  while (auto batch = loader.next()) {
    auto logits = model.forward(normalize(batch->images, info.mean, info.std));
    auto labels = remap.index_select(0, batch->labels);
    correct += static_cast<std::uint64_t>((logits.argmax(1) == labels).sum().item<std::int64_t>());
    r.images += static_cast<std::uint64_t>(batch->labels.size(0));
    progress.advance(static_cast<std::uint64_t>(batch->labels.size(0)));
  }
  progress.finish();
  if (r.images == 0)
    fail(ErrorKind::invalid, archive.string(), "images to evaluate on", "none", "pass an archive of images");
  r.accuracy = static_cast<double>(correct) / static_cast<double>(r.images);
  return r;
}

}  // namespace frugal
