// Evaluation of a model over a source of batches: mean cross-entropy, top-1 and per-class accuracy.
// Included by train.h (it uses StepOptions from there).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "frugal/data.h"
#include "frugal/models.h"

namespace frugal {

struct StepOptions;

// ---------------------------------------------------------------------------------------------
// Evaluation

struct EvalResult {
  double loss = 0, accuracy = 0;  // mean cross-entropy; top-1 in [0, 1]
  std::int64_t samples = 0;
  std::vector<double> per_class;  // accuracy per class index (NaN when a class has no samples)
  nlohmann::json to_json(const std::vector<std::string>& classes) const;  // eval --json shape
};

// Each loader batch (>= 256 samples in `frugal train`) is forwarded in chunks of at most
// `micro_batch` (0: whole); on running out of memory the chunk is halved and redone (nothing of a
// failed chunk is counted), and the size kept here for later calls; at 1 it is Error(budget).
struct EvalOptions {
  std::int64_t micro_batch = 0;
  bool oom_noted = false;
  std::function<void(std::int64_t forward)> before_forward;  // test seam, as TrainStep's
};

EvalResult evaluate(Model& model, BatchSource& source, int num_classes, const StepOptions& options,
                    EvalOptions* eval = nullptr);
// The same over any source of batches: next_batch fills (B, C, H, W) uint8 images and (B) labels,
// false at the end.
EvalResult evaluate(Model& model, const std::function<bool(torch::Tensor&, torch::Tensor&)>& next_batch,
                    int num_classes, const StepOptions& options, EvalOptions* eval = nullptr);

}  // namespace frugal
