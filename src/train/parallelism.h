// Where a training run's model lives over its processes and how their steps run (internal):
// data parallelism (train/data_parallel.h: the whole model on every rank, or on the one process
// of a run alone) or a pipeline (train/pipeline.h: each rank a stage of the model). Both talk
// through the run's Comm (train/comm.h), the wire they share; train/make_parallelism.h chooses.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "frugal/loader/loader.h"
#include "frugal/image/image.h"
#include "frugal/train/evaluate.h"
#include "frugal/train/amp.h"
#include "frugal/train/optim.h"
#include "frugal/train/step.h"
#include "frugal/models/models.h"
#include "train/comm.h"

namespace frugal {

class Parallelism {
 public:
  virtual ~Parallelism() = default;

  // Copies of the model that each train on their share of every batch (data parallel), and which
  // one this process's is: every rank of a data-parallel run; one for a pipeline, whose stages
  // all load the same batches.
  int replicas() const { return replicas_; }
  int replica() const { return replica_; }
  // Whether this process's steps read the images of their batches: a pipeline stage after the
  // first takes its input from the stage before and its micro-batches' sizes and labels from the
  // first (train/pipeline.cpp), so its training loader reads labels only (LabelLoader), and only
  // the first counts the step's samples (Comm::StepPlan::samples).
  bool reads_images() const { return reads_images_; }
  // Before a step: each process's dropout draws from a generator of (seed, replica, step), so that
  // ranks resume as they ran whatever the world size before (a pipeline's stages as the
  // data-parallel rank of their replica would); solo: the one generator goes on.
  void seed_step(std::uint64_t seed, std::int64_t step) const {
    if (comm_.grouped())
      torch::manual_seed(
          mix_seed(mix_seed(seed, static_cast<std::uint64_t>(replica_)), static_cast<std::uint64_t>(step)));
  }

  // Where the model lives: all of it on `device`; a pipeline stage's pieces only (the rest stays
  // on the CPU, unused, and so does the optimizer's state for it).
  virtual void place(Model& model, const torch::Device& device) = 0;
  // What runs a step: a TrainStep whose gradients are summed over the ranks (solo: none needed);
  // a pipeline's stage schedule.
  virtual std::unique_ptr<TrainStep> make_step(Model& model, torch::optim::Optimizer& optimizer, LossScaler& scaler,
                                               const StepOptions& options) = 0;
  // Before the first step: rank 0's parameters and buffers (`state`) into every copy of the model.
  virtual void equalize(std::vector<torch::Tensor>& state) = 0;
  // The mean over the copies of the model, in place, of those of `buffers` this process holds
  // (batch-norm statistics before evaluating and saving).
  virtual void average(std::vector<torch::Tensor>& buffers) = 0;
  // Before a save: this process's copy of the model and its optimizer state made whole (a
  // pipeline's stages send theirs); every process takes part.
  virtual void gather(Model& model, const OptimizerSetup& optimizer) = 0;
  // What evaluate() runs and reads here, its options set for it: the model and this process's
  // validation batches, and (options.reduce) how the processes' counts become the whole set's:
  // summed over data-parallel shards. On a pipeline stage its part of the forward, the first
  // stage's batches (the others read no image: their `val` is a LabelLoader they leave alone),
  // chunks of the training micro-batch, no halving on one stage alone, and the last stage's
  // counts. Every process takes part.
  struct Evaluation {
    Model& model;
    BatchSource& batches;
  };
  virtual Evaluation for_evaluation(Model& model, BatchSource& val, EvalOptions& options) = 0;
  // What an epoch's metrics record of the processes' own work (null: nothing): a pipeline's
  // per-rank memory, schedule and wait seconds. Every process takes part.
  virtual nlohmann::json epoch_figures() = 0;
  // "distributed: rank 0 of 2 (gloo)", "pipeline: stage 1 of 2 (nccl)"; empty when solo.
  virtual std::string describe() const = 0;

 protected:
  explicit Parallelism(Comm& comm) : comm_(comm) {}
  Comm& comm_;
  int replicas_ = 1, replica_ = 0;
  bool reads_images_ = true;
};

}  // namespace frugal
