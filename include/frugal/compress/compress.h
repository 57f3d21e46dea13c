// Smaller models: L1 unstructured pruning, int8 / fp16 weights, and writing the compressed model
// file (docs/compressed-model.md). Reading it (load_model_any, the one loader eval / predict /
// export use for checkpoints, run folders and compressed files alike) is checkpoint.h's.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "frugal/checkpoint/checkpoint.h"
#include "frugal/dataset/dataset.h"
#include "frugal/models/models.h"
#include "frugal/checkpoint/safetensors.h"

namespace frugal {

// ---- Pruning --------------------------------------------------------------------------------------
enum class PruneScope {
  layer,   // each weight loses the same fraction of its entries
  global,  // one magnitude threshold over all prunable weights together
};

// Conv (4-D) and linear (2-D) weights of `model`, under torchvision names, sharing storage with it.
std::vector<std::pair<std::string, torch::Tensor>> prunable_weights(Model& model);

// name -> bool tensor of the weight's shape, true where the weight is kept.
using PruneMasks = std::map<std::string, torch::Tensor>;

// Masks that drop the `fraction` (0..1) of entries with the smallest |w| (L1 unstructured);
// exactly floor(fraction * n) entries per weight (layer) or over all weights (global), ties broken
// by position so the result is deterministic.
PruneMasks l1_prune_masks(Model& model, double fraction, PruneScope scope);

// Zeroes the pruned entries in place (after every fine-tuning step too: masks stay fixed).
void apply_masks(Model& model, const PruneMasks& masks);

// ---- Weight encoding ------------------------------------------------------------------------------
enum class WeightFormat { float32, float16, int8 };
std::string to_string(WeightFormat f);

// The stored form of a state dict: compressible weights (conv/linear) as values + optional bitmask
// + optional per-output-channel int8 scales; everything else as is. `index` describes each
// encoded weight ("compression" metadata, docs/compressed-model.md).
struct EncodedWeights {
  NamedTensors tensors;
  nlohmann::json index = nlohmann::json::object();
};
EncodedWeights encode_weights(const std::map<std::string, torch::Tensor>& state,
                              const std::vector<std::string>& compressible, WeightFormat format);

// ---- Files --------------------------------------------------------------------------------------
struct CompressOptions {
  double prune = 0;  // fraction of conv/linear weights set to zero
  PruneScope prune_scope = PruneScope::global;
  WeightFormat weights = WeightFormat::float32;
  int finetune_epochs = 0;  // recorded in the metadata
};

// A checkpoint of kind "model" (frugal::save_checkpoint) whose weights are encode_weights()'s and
// whose metadata carries "compression" (JSON). `model`'s weights are stored as they are (prune
// and fine-tune first).
void save_compressed_model(const std::filesystem::path& out, const ModelInfo& info, Model& model,
                           const CompressOptions& options);

}  // namespace frugal

namespace frugal {

// Top-1 accuracy of `model` on every image of `archive` (resized to info.image_size, normalized
// with info.mean/std). Dataset classes are matched to info.classes by name; a class the model does
// not know is an Error(invalid). Used by `compress --data` for its before/after report.
// A multi-label model's figure is its mean average precision (EvalResult::score()).
struct AccuracyReport {
  double accuracy = 0;
  std::uint64_t images = 0;
  std::string metric = "accuracy";  // or "mean AP"
};
AccuracyReport measure_accuracy(Model& model, const ModelInfo& info, const std::filesystem::path& archive,
                                const DatasetOptions& dataset = {}, int batch_size = 256, int workers = 2);

}  // namespace frugal

namespace frugal {

// Short fine-tuning after pruning, with the training engine's optimizer and step
// (include/frugal/train/optim.h): AdamW, no weight decay, on the CPU in float32; the masks are applied
// again after every step, so pruned weights stay zero. Leaves the model in eval mode.
struct FinetuneOptions {
  int epochs = 1;
  int batch_size = 64;
  double lr = 1e-4;
  int workers = 2;
  std::uint64_t seed = 0;
  DatasetOptions dataset;  // where the labels come from (--labels, --label-separator, ...)
};
void finetune_pruned(Model& model, const ModelInfo& info, const PruneMasks& masks, const std::filesystem::path& archive,
                     const FinetuneOptions& options);

}  // namespace frugal
