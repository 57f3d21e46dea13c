// The data a training session reads (internal to the session): the training and validation sets
// opened under the run's options (data_options.h, the rule Python's frugal.Loader shares), their
// loaders, and the checks of the validation images, before training and after each evaluation.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "frugal/budget/budget.h"
#include "frugal/loader/loader.h"
#include "frugal/dataset/dataset.h"
#include "frugal/training/train_config.h"
#include "frugal/util/env.h"

namespace frugal {

// Sums tensors over the run's processes in place (one process alone: leaves them).
using SumOverRanks = std::function<void(std::vector<torch::Tensor>&)>;

// Which share of every global batch this process's loaders read: replica `replica` of `replicas`
// (copies of the model); `reads_images` false for a pipeline stage after the first (labels only).
struct LoaderShare {
  int replica = 0, replicas = 1;
  bool reads_images = true;
};

// What {disk_budget} counts besides the workspace (budget_workspace()): the tars
// {cache_decompressed} makes of DATA and VAL wherever the cache folder is.
DiskBudgetOptions disk_budget_options(const TrainConfig& c, const std::filesystem::path& run_dir);

struct TrainingData {
  std::shared_ptr<Dataset> train, val;
  std::vector<double> sample_weights;  // --sampler balanced: per training sample; empty: shuffle
  std::vector<std::string> classes;
  std::map<std::string, std::uint64_t> skipped, val_skipped;  // files left out opening, by reason (the outcome)
  nlohmann::json decided;  // which files train and validate (TrainVal::decided): config.json, the outcome
  std::unique_ptr<BatchSource> train_loader;  // Loader, GpuLoader (--decode gpu) or LabelLoader (a later stage)
  std::unique_ptr<BatchSource> val_loader;    // Loader, or LabelLoader (a later stage: not read)

  // DATA and its validation data, as `c` says (train_val_options); with {disk_budget}, the
  // decompressed tars get what is left of it.
  static TrainingData open(const TrainConfig& c, const std::filesystem::path& run_dir, Env& env);

  // The loaders of `image_size` images (CPU, or GPU with --decode gpu; each replica its slice of
  // every global batch). A pipeline stage after the first reads labels only (LabelLoader) for both:
  // its input comes from the stage before.
  // `train_size` (--progressive, --test-size): the training batches' image size, when not image_size (0).
  // sample_weights (--sampler balanced): the training loader's (LoaderOptions::sample_weights).
  void make_loaders(const TrainConfig& c, int image_size, const torch::Device& device, const LoaderShare& share,
                    int train_size = 0);

  // --check-val auto: a validation set of at most kCheckValMax images is decoded once before the
  // first step, so that a damaged file is refused before any training (exit 3, nothing written)
  // rather than found by the first evaluation (exit 75 after the epoch's training is saved).
  void check_validation_up_front(const TrainConfig& c, Env& env, const SumOverRanks& sum, const torch::Device& device);
  // Validation's undecodable images and images seen since its loader's start(), every rank's summed.
  std::pair<std::int64_t, std::int64_t> validation_bad_seen(const SumOverRanks& sum, const torch::Device& device) const;
  // The undecodable validation files (the first 5 named) and the --exclude words that leave them
  // out (the first 20), for a message.
  std::pair<std::string, std::string> bad_validation_files() const;

  // The outcome's figures of the data: classes, images, the skips found opening it and the
  // images the loaders could not decode since, and what was decided.
  void describe(SessionOutcome& o) const;
};

// --decode, once the device is known: `gpu` needs a CUDA device (else a usage error naming the
// device) and a machine and build that can (else select_decode's usage error naming what is
// missing); `auto` takes the GPU only when all of that and the data allow. Returns cpu or gpu.
DecodeChoice choose_decode(const TrainConfig& c, const torch::Device& device, const Dataset& train);

}  // namespace frugal
