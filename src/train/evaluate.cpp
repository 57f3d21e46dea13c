// Evaluation: loss, top-1 accuracy and per-class accuracy over any source of batches, with the
// evaluation chunk halved on running out of GPU memory; and the one rule that matches a dataset's
// classes to a model's outputs.
#include <c10/util/Exception.h>
#include <torch/torch.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <optional>

#include "frugal/loader/loader.h"
#include "frugal/util/error.h"
#include "frugal/util/progress.h"
#include "frugal/train/evaluate.h"
#include "frugal/train/amp.h"
#include "frugal/train/step.h"
#include "frugal/training/train_log.h"
#include "frugal/models/models.h"
#include "frugal/loader/oom.h"
#include "train/device.h"
#include "train/multi_label.h"

namespace frugal {
namespace {

// "a, b, c, d, e, ... (10 in all)": enough names to see how two lists differ.
std::string first_names(const std::vector<std::string>& names, std::size_t shown = 5) {
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < shown; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > shown) out += ", ... (" + std::to_string(names.size()) + " in all)";
  return out.empty() ? "none" : out;
}

// "0_T-shirt" -> "T-shirt": the number prefix `frugal pack` gives IDX classes; "" when none.
std::string without_number_prefix(const std::string& name) {
  std::size_t i = 0;
  while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) ++i;
  return i > 0 && i + 1 < name.size() && name[i] == '_' ? name.substr(i + 1) : "";
}

// A multi-label chunk: the binary cross-entropy summed over images (each image's mean over its
// classes, as training's loss), and the tags' counts.
void add_multi_label(const torch::Tensor& logits, const torch::Tensor& y, torch::Tensor& loss_sum,
                     MultiLabelTally& tags) {
  auto loss = torch::binary_cross_entropy_with_logits(logits, y.to(torch::kFloat32), {}, {}, at::Reduction::None)
                  .mean(1)
                  .sum()
                  .to(torch::kFloat64);
  tags.add(logits, y.to(torch::kFloat32));
  loss_sum += loss;
}

// A chunk's candidates for the worst list: its `limit` images of highest loss, with what the
// model predicted for them (`samples`: the chunk's dataset indices, or null).
std::vector<Prediction> worst_of_chunk(const torch::Tensor& logits, const torch::Tensor& y, std::size_t limit,
                                       const std::int64_t* samples) {
  auto losses = torch::nn::functional::cross_entropy(
      logits, y, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
  const std::int64_t k = std::min<std::int64_t>(static_cast<std::int64_t>(limit), losses.size(0));
  auto [top, rows] = losses.topk(k);
  auto picked = logits.index_select(0, rows);
  auto predicted = picked.argmax(1);
  auto probability = torch::softmax(picked, 1).gather(1, predicted.unsqueeze(1)).squeeze(1);
  auto loss_cpu = top.to(torch::kFloat64).cpu(), prob_cpu = probability.to(torch::kFloat64).cpu();
  auto rows_cpu = rows.cpu(), pred_cpu = predicted.cpu(), true_cpu = y.index_select(0, rows).cpu();
  std::vector<Prediction> out;
  for (std::int64_t j = 0; j < k; ++j) {
    Prediction p;
    const std::int64_t row = rows_cpu[j].item<std::int64_t>();
    p.sample = samples ? samples[row] : -1;
    p.true_class = true_cpu[j].item<std::int64_t>();
    p.predicted = pred_cpu[j].item<std::int64_t>();
    p.probability = prob_cpu[j].item<double>();
    p.loss = loss_cpu[j].item<double>();
    out.push_back(std::move(p));
  }
  return out;
}

// What evaluate() adds up, on the device: the loss, per class the images right and seen, all the
// images seen; a multi-label model's tag counts; when asked, the confusion matrix (flat, true *
// classes + predicted) and the worst images (on the host).
}  // namespace

std::optional<Tta> parse_tta(const std::string& text) {
  if (text == "none") return Tta::none;
  if (text == "flip") return Tta::flip;
  return std::nullopt;
}

const char* to_string(Tta tta) { return tta == Tta::flip ? "flip" : "none"; }

torch::Tensor forward_tta(Model& model, const torch::Tensor& x, Tta tta) {
  torch::Tensor logits = model.forward(x).to(torch::kFloat32);
  if (tta == Tta::none) return logits;
  torch::Tensor mirrored = model.forward(x.flip(3)).to(torch::kFloat32);
  return (logits + mirrored) * 0.5;
}

namespace {

struct EvalTally {
  torch::Tensor loss_sum, correct, count, seen, confusion;
  std::optional<MultiLabelTally> tags;
  std::optional<WorstPredictions> worst;
  Tta tta = Tta::none;

  EvalTally(int num_classes, const EvalOptions& e, const torch::Device& device) : tta(e.tta) {
    auto dev = torch::TensorOptions().device(device);
    loss_sum = torch::zeros({}, dev.dtype(torch::kFloat64));
    correct = torch::zeros({num_classes}, dev.dtype(torch::kInt64));
    count = torch::zeros({num_classes}, dev.dtype(torch::kInt64));
    seen = torch::zeros({1}, dev.dtype(torch::kInt64));  // images, whatever their labels
    if (e.multi_label) tags.emplace(num_classes, e.thresholds, device);
    if (!e.multi_label && e.confusion)
      confusion = torch::zeros({std::int64_t{num_classes} * num_classes}, dev.dtype(torch::kInt64));
    if (!e.multi_label && e.worst > 0) worst.emplace(e.worst);
  }

  // One chunk of images `x` with labels `y` through the model, added (`samples`: the chunk's
  // dataset indices, or null).
  void add(Model& model, const torch::Tensor& x, const torch::Tensor& y, const StepOptions& options,
           const std::int64_t* samples) {
    torch::Tensor logits;
    {
      AutocastGuard autocast(options.device.type(), options.amp);
      logits = forward_tta(model, x, tta);
    }
    TORCH_CHECK(y.dim() == (tags ? 2 : 1), "evaluation: expected ", tags ? "multi-label targets" : "class indices",
                ", found labels of ", y.dim(), " dimensions");
    if (tags) {
      add_multi_label(logits, y, loss_sum, *tags);
      return;
    }
    // Every temporary first: a chunk that runs out of memory must add nothing.
    auto loss = torch::nn::functional::cross_entropy(
                    logits, y, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                    .to(torch::kFloat64);
    auto predicted = logits.argmax(1);
    auto hit = (predicted == y).to(torch::kInt64);
    auto ones = torch::ones_like(y);
    std::vector<Prediction> candidates;
    if (worst) candidates = worst_of_chunk(logits, y, worst->limit(), samples);
    loss_sum += loss;
    correct.index_add_(0, y, hit);
    count.index_add_(0, y, ones);
    if (confusion.defined()) confusion.index_add_(0, y * logits.size(1) + predicted, ones);
    for (auto& p : candidates) worst->add(std::move(p));
  }

  // The counts summed over the ranks (e.reduce), then as an EvalResult.
  EvalResult result(int num_classes, const EvalOptions& e) {
    if (e.reduce) {
      std::vector<torch::Tensor> counts{loss_sum.reshape({1}), correct, count, seen};
      if (confusion.defined()) counts.push_back(confusion);
      if (tags)
        for (auto& t : tags->counts()) counts.push_back(t);
      e.reduce(counts);
    }
    EvalResult r;
    auto c = correct.cpu(), n = count.cpu();
    r.samples = seen.item<std::int64_t>();
    if (r.samples == 0) return r;
    r.loss = loss_sum.item<double>() / static_cast<double>(r.samples);
    if (tags) {
      tags->fill(r);
      return r;
    }
    r.accuracy = static_cast<double>(c.sum().item<std::int64_t>()) / static_cast<double>(r.samples);
    for (int i = 0; i < num_classes; ++i) {
      auto ni = n[i].item<std::int64_t>();
      r.per_class.push_back(ni ? static_cast<double>(c[i].item<std::int64_t>()) / static_cast<double>(ni) : NAN);
    }
    if (confusion.defined()) {
      auto m = confusion.cpu().contiguous();
      const std::int64_t* v = m.data_ptr<std::int64_t>();
      for (int t = 0; t < num_classes; ++t) r.confusion.emplace_back(v + t * num_classes, v + (t + 1) * num_classes);
    }
    if (worst) r.worst = worst->sorted();
    return r;
  }
};

// A chunk of `chunk` images ran out of memory: the next chunks are half as large (said once).
// Evaluation batches are >= 256 samples: more than a training micro-batch that fits.
void halve_after_oom(std::int64_t chunk, EvalOptions& e, const torch::Device& device) {
  empty_device_cache(device);
  if (e.out_of_memory) e.out_of_memory(chunk);  // throws
  if (chunk <= 1)
    fail(ErrorKind::budget, "GPU memory", "room to evaluate one image", "out of memory",
         "use a smaller {image_size} or model, or a larger {gpu_memory}");
  e.micro_batch = chunk / 2;
  if (!e.oom_noted)
    note("out of GPU memory evaluating " + std::to_string(chunk) + " images at once; continuing with " +
         std::to_string(e.micro_batch));
  e.oom_noted = true;
}

}  // namespace

void check_label_kind(bool model_multi_label, bool data_multi_label, const std::string& data_name) {
  if (model_multi_label == data_multi_label) return;
  if (model_multi_label)
    fail(ErrorKind::usage, data_name, "tags, for a multi-label model", "one class per image",
         "give the data's tags as training did: {label_separator} for a column of tag lists, or {label_columns} "
         "ID,* for one 0/1 column per tag");
  fail(ErrorKind::usage, data_name, "one class per image, for a single-label model", "tags (multi-label data)",
       "use a model trained on these tags, or labels of one class per image");
}

torch::Tensor ClassMatch::remap() const { return torch::tensor(to_model, torch::kInt64); }

torch::Tensor ClassMatch::model_labels(const torch::Tensor& labels, const torch::Tensor& remap) const {
  if (labels.dim() != 2) return remap.index_select(0, labels);
  auto out = torch::zeros({labels.size(0), model_classes}, labels.options());
  return out.index_copy_(1, remap, labels);
}

std::string ClassMatch::note(const std::string& data_name) const {
  if (absent.empty()) return "";
  return data_name + " holds " + std::to_string(to_model.size()) + " of the model's " + std::to_string(model_classes) +
         " classes (absent: " + first_names(absent) + "); accuracy and per-class figures are over the classes present";
}

ClassMatch match_classes(const std::vector<std::string>& model_classes, const std::vector<std::string>& data_classes,
                         const std::string& data_name) {
  ClassMatch m;
  m.model_classes = static_cast<int>(model_classes.size());
  std::map<std::string, std::int64_t> index;
  for (std::size_t i = 0; i < model_classes.size(); ++i) index.emplace(model_classes[i], static_cast<std::int64_t>(i));
  std::vector<std::string> unknown;
  std::vector<bool> present(model_classes.size(), false);
  for (const auto& name : data_classes) {
    auto it = index.find(name);
    if (it == index.end()) {
      unknown.push_back(name);
      continue;
    }
    m.to_model.push_back(it->second);
    present[static_cast<std::size_t>(it->second)] = true;
  }
  if (!unknown.empty()) {
    std::vector<std::string> quoted;
    for (const auto& u : unknown) quoted.push_back("\"" + u + "\"");
    // The model's class that a data class is, but for a number prefix on either side ("0_T-shirt"
    // and "T-shirt": `frugal pack` names IDX classes that way); "" when none.
    std::map<std::string, std::string> model_bare;
    for (const auto& c : model_classes)
      if (auto bare = without_number_prefix(c); !bare.empty()) model_bare.emplace(bare, c);
    auto counterpart = [&](const std::string& u) -> std::string {
      if (auto bare = without_number_prefix(u); !bare.empty() && index.count(bare)) return bare;
      auto it = model_bare.find(u);
      return it == model_bare.end() ? "" : it->second;
    };
    const bool prefixed =
        std::all_of(unknown.begin(), unknown.end(), [&](const std::string& u) { return !counterpart(u).empty(); });
    std::string hint =
        "the model's classes: " + first_names(model_classes) + "; the data's: " + first_names(data_classes);
    hint += prefixed ? "; the names differ by a number prefix (\"" + unknown[0] + "\" where the model has \"" +
                           counterpart(unknown[0]) + "\"): name the classes of both sets alike"
                     : "; evaluate on data with the model's class names";
    fail(ErrorKind::invalid, data_name, "classes the model knows",
         std::to_string(unknown.size()) + (unknown.size() == 1 ? " class" : " classes") +
             " it does not: " + first_names(quoted, 3),
         hint);
  }
  for (std::size_t i = 0; i < model_classes.size(); ++i)
    if (!present[i]) m.absent.push_back(model_classes[i]);
  return m;
}

EvalResult evaluate(Model& model, BatchSource& loader, int num_classes, const StepOptions& options, EvalOptions* eval) {
  loader.start(0, 0);
  return evaluate_batches(
      model,
      [&](EvalBatch& batch) {
        auto b = loader.next();
        if (!b) return false;
        batch.images = b->images;
        batch.labels = b->labels;
        batch.samples = std::move(b->samples);
        return true;
      },
      num_classes, options, eval);
}

EvalResult evaluate(Model& model, const std::function<bool(torch::Tensor&, torch::Tensor&)>& next_batch,
                    int num_classes, const StepOptions& options, EvalOptions* eval) {
  return evaluate_batches(
      model, [&](EvalBatch& b) { return next_batch(b.images, b.labels); }, num_classes, options, eval);
}

EvalResult evaluate_batches(Model& model, const std::function<bool(EvalBatch&)>& next_batch, int num_classes,
                            const StepOptions& options, EvalOptions* eval) {
  EvalOptions local;
  EvalOptions& e = eval ? *eval : local;
  torch::NoGradGuard no_grad;
  bool was_training = model.is_training();
  model.eval();
  EvalTally tally(num_classes, e, options.device);
  std::int64_t forwards = 0;
  EvalBatch batch;
  while (next_batch(batch)) {
    const torch::Tensor& batch_images = batch.images;
    const torch::Tensor& batch_labels = batch.labels;
    const std::int64_t n = batch_images.size(0);
    const bool numbered = static_cast<std::int64_t>(batch.samples.size()) == n;
    for (std::int64_t start = 0; start < n;) {
      const std::int64_t end = e.micro_batch > 0 ? std::min(n, start + e.micro_batch) : n;
      try {
        if (e.before_forward) e.before_forward(forwards);
        ++forwards;
        auto x = prepare_batch(batch_images.slice(0, start, end), options);
        auto y = batch_labels.slice(0, start, end).to(options.device, /*non_blocking=*/true);
        tally.add(model, x, y, options, numbered ? batch.samples.data() + start : nullptr);
        tally.seen += end - start;
        start = end;
      } catch (const c10::Error& err) {
        if (!is_out_of_memory(err)) throw;
        halve_after_oom(end - start, e, options.device);
      }
    }
    if (e.after_batch) e.after_batch(n);
  }
  model.train(was_training);
  return tally.result(num_classes, e);
}

EvalResult evaluate(Model& model, BatchSource& source, const ClassMatch& match, const StepOptions& options,
                    EvalOptions* eval) {
  torch::Tensor remap = match.remap();
  source.start(0, 0);
  EvalResult r = evaluate_batches(
      model,
      [&](EvalBatch& batch) {
        auto b = source.next();
        if (!b) return false;
        if (remap.device() != b->labels.device()) remap = remap.to(b->labels.device());
        batch.images = b->images;
        batch.labels = match.model_labels(b->labels, remap);
        batch.samples = std::move(b->samples);
        return true;
      },
      match.model_classes, options, eval);
  // The model's outputs -> the data's classes.
  auto to_data = [&](auto& per_output) {
    if (per_output.empty()) return;
    std::remove_reference_t<decltype(per_output)> per;
    for (auto i : match.to_model) per.push_back(per_output[static_cast<std::size_t>(i)]);
    per_output = std::move(per);
  };
  to_data(r.per_class);
  to_data(r.class_precision);
  to_data(r.class_recall);
  to_data(r.class_f1);
  to_data(r.positives);
  to_data(r.best_thresholds);
  return r;
}

}  // namespace frugal
