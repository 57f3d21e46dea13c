// Evaluation of a model over a source of batches: mean cross-entropy, top-1 and per-class accuracy;
// for multi-label data mean binary cross-entropy, mean average precision and F1 (EvalResult).
// Its callers pass the step's StepOptions (train/step.h); this header only names them.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "frugal/loader/loader.h"
#include "frugal/models/models.h"
#include "frugal/training/train_log.h"

namespace frugal {

struct StepOptions;

// ---------------------------------------------------------------------------------------------
// Evaluation

// How a dataset's classes map onto a model's outputs: by name. The one rule for `eval`, compress's
// accuracy report and fine-tuning: the data may hold every class of the model or a subset of
// them, in any order; a class the model does not know is Error(invalid) (exit 3) naming the
// first of them, with the first names of both lists (a "0_T-shirt" beside "T-shirt" shows).
struct ClassMatch {
  std::vector<std::int64_t> to_model;  // dataset label -> model output index
  std::vector<std::string> absent;     // the model's classes the data lacks, in the model's order
  int model_classes = 0;               // the model's output count
  torch::Tensor remap() const;         // to_model as an int64 tensor (index_select the labels)
  // A batch's labels as the model's outputs number them: class indices mapped, or multi-label
  // targets' columns placed at the model's (a class the data lacks: 0). `remap` is remap() on the
  // labels' device.
  torch::Tensor model_labels(const torch::Tensor& labels, const torch::Tensor& remap) const;
  // One line for a subset: the data holds K of the model's N classes (which are absent), and the
  // figures are over the classes present. Empty when the data holds them all.
  std::string note(const std::string& data_name) const;
};
// A multi-label model on data of one class per image, or the reverse, would be scored and trained
// by the wrong rule: Error(usage) naming the data and the options that give tags.
void check_label_kind(bool model_multi_label, bool data_multi_label, const std::string& data_name);

ClassMatch match_classes(const std::vector<std::string>& model_classes, const std::vector<std::string>& data_classes,
                         const std::string& data_name);

// Test-time augmentation (`--tta`): none, or flip: the logits are the mean of the image's and its
// left-right mirror's (as airbench and timm's flip TTA average them), in float32.
enum class Tta { none, flip };
// "none" | "flip"; nullopt for anything else.
std::optional<Tta> parse_tta(const std::string& text);
const char* to_string(Tta tta);
// The model's float32 logits of `x` (B, C, H, W), with `tta`.
torch::Tensor forward_tta(Model& model, const torch::Tensor& x, Tta tta);

// Each loader batch (>= 256 samples in `frugal train`) is forwarded in chunks of at most
// `micro_batch` (0: whole); on running out of memory the chunk is halved and redone (nothing of a
// failed chunk is counted), and the size kept here for later calls; at 1 it is Error(budget).
struct EvalOptions {
  // Multi-label data ((B, classes) 0/1 labels): a class is predicted when its sigmoid reaches its
  // threshold, thresholds[c] or one for all (src/train/multi_label.h has the figures).
  bool multi_label = false;
  std::vector<float> thresholds{0.5f};
  Tta tta = Tta::none;
  // Single-label: count the confusion matrix (EvalResult::confusion), and keep the `worst` images of
  // highest loss (EvalResult::worst; their dataset index where the source says it: Batch::samples).
  bool confusion = false;
  std::size_t worst = 0;
  std::int64_t micro_batch = 0;
  bool oom_noted = false;
  std::function<void(std::int64_t forward)> before_forward;  // test seam, as TrainStep's
  std::function<void(std::int64_t samples)> after_batch;     // each batch done (progress)
  // Data-parallel: each process evaluates its shard of the data; this sums the counts (loss sum,
  // hits and samples per class) over the processes in place, so every one reports the whole set.
  std::function<void(std::vector<torch::Tensor>& counts)> reduce;
  // Called instead of halving the chunk when it runs out of GPU memory, by a process that cannot
  // halve alone (a pipeline stage: the others would wait for halves that never come); it throws.
  std::function<void(std::int64_t chunk)> out_of_memory;
};

EvalResult evaluate(Model& model, BatchSource& source, int num_classes, const StepOptions& options,
                    EvalOptions* eval = nullptr);
// The same over any source of batches: next_batch fills (B, C, H, W) uint8 images and (B) labels,
// false at the end.
EvalResult evaluate(Model& model, const std::function<bool(torch::Tensor&, torch::Tensor&)>& next_batch,
                    int num_classes, const StepOptions& options, EvalOptions* eval = nullptr);
// The same with each image's dataset index (EvalBatch::samples; empty where unknown): what
// EvalResult::worst numbers its images by.
struct EvalBatch {
  torch::Tensor images, labels;
  std::vector<std::int64_t> samples;
};
EvalResult evaluate_batches(Model& model, const std::function<bool(EvalBatch&)>& next_batch, int num_classes,
                            const StepOptions& options, EvalOptions* eval = nullptr);
// Data whose classes are matched to the model's by name (match_classes): labels are mapped to the
// model's outputs, accuracy is top-1 over all of them, and per_class follows the data's classes.
EvalResult evaluate(Model& model, BatchSource& source, const ClassMatch& match, const StepOptions& options,
                    EvalOptions* eval = nullptr);

}  // namespace frugal
