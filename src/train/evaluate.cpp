// Evaluation: loss, top-1 accuracy and per-class accuracy over any source of batches, with the
// evaluation chunk halved on running out of GPU memory.
#include <c10/util/Exception.h>
#include <torch/torch.h>

#include <cmath>

#include "frugal/data.h"
#include "frugal/error.h"
#include "frugal/progress.h"
#include "frugal/evaluate.h"
#include "frugal/train.h"
#include "data/oom.h"
#include "train/device.h"

namespace frugal {

nlohmann::json EvalResult::to_json(const std::vector<std::string>& classes) const {
  nlohmann::json per = nlohmann::json::object();
  for (std::size_t i = 0; i < per_class.size() && i < classes.size(); ++i)
    per[classes[i]] = std::isnan(per_class[i]) ? nlohmann::json(nullptr) : nlohmann::json(per_class[i]);
  return {{"accuracy", accuracy}, {"loss", loss}, {"samples", samples}, {"per_class", per}};
}

EvalResult evaluate(Model& model, BatchSource& loader, int num_classes, const StepOptions& options, EvalOptions* eval) {
  loader.start(0, 0);
  return evaluate(model, [&](torch::Tensor& images, torch::Tensor& labels) {
    auto b = loader.next();
    if (!b) return false;
    images = b->images;
    labels = b->labels;
    return true;
  }, num_classes, options, eval);
}

EvalResult evaluate(Model& model, const std::function<bool(torch::Tensor&, torch::Tensor&)>& next_batch, int num_classes,
                    const StepOptions& options, EvalOptions* eval) {
  EvalOptions local;
  EvalOptions& e = eval ? *eval : local;
  torch::NoGradGuard no_grad;
  bool was_training = model.is_training();
  model.eval();
  auto dev = torch::TensorOptions().device(options.device);
  auto loss_sum = torch::zeros({}, dev.dtype(torch::kFloat64));
  auto correct = torch::zeros({num_classes}, dev.dtype(torch::kInt64));
  auto count = torch::zeros({num_classes}, dev.dtype(torch::kInt64));
  std::int64_t forwards = 0;
  torch::Tensor batch_images, batch_labels;
  while (next_batch(batch_images, batch_labels)) {
    const std::int64_t n = batch_images.size(0);
    for (std::int64_t start = 0; start < n;) {
      const std::int64_t end = e.micro_batch > 0 ? std::min(n, start + e.micro_batch) : n;
      try {
        if (e.before_forward) e.before_forward(forwards);
        ++forwards;
        auto x = prepare_batch(batch_images.slice(0, start, end), options);
        auto y = batch_labels.slice(0, start, end).to(options.device, /*non_blocking=*/true);
        torch::Tensor logits;
        {
          AutocastGuard autocast(options.device.type(), options.amp);
          logits = model.forward(x).to(torch::kFloat32);
        }
        // Every temporary first: a chunk that runs out of memory must add nothing.
        auto loss = torch::nn::functional::cross_entropy(
            logits, y, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum)).to(torch::kFloat64);
        auto hit = (logits.argmax(1) == y).to(torch::kInt64);
        auto ones = torch::ones_like(y);
        loss_sum += loss;
        correct.index_add_(0, y, hit);
        count.index_add_(0, y, ones);
        start = end;
      } catch (const c10::Error& err) {
        // Evaluation batches are >= 256 samples: more than a training micro-batch that fits.
        if (!is_out_of_memory(err)) throw;
        empty_device_cache(options.device);
        const std::int64_t chunk = end - start;
        if (chunk <= 1)
          fail(ErrorKind::budget, "GPU memory", "room to evaluate one image", "out of memory",
               "use a smaller --image-size or model, or a larger --gpu-memory");
        e.micro_batch = chunk / 2;
        if (!e.oom_noted)
          note("out of GPU memory evaluating " + std::to_string(chunk) + " images at once; continuing with " +
               std::to_string(e.micro_batch));
        e.oom_noted = true;
      }
    }
  }
  model.train(was_training);
  EvalResult r;
  auto c = correct.cpu(), n = count.cpu();
  r.samples = n.sum().item<std::int64_t>();
  if (r.samples == 0) return r;
  r.loss = loss_sum.item<double>() / static_cast<double>(r.samples);
  r.accuracy = static_cast<double>(c.sum().item<std::int64_t>()) / static_cast<double>(r.samples);
  for (int i = 0; i < num_classes; ++i) {
    auto ni = n[i].item<std::int64_t>();
    r.per_class.push_back(ni ? static_cast<double>(c[i].item<std::int64_t>()) / static_cast<double>(ni) : NAN);
  }
  return r;
}

}  // namespace frugal
