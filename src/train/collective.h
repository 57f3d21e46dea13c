// What a training session needs from the other processes of its run, behind one seam (internal):
// nothing for a single process (solo), the c10d process group for the ranks torchrun started, and
// later the stages of a pipeline. The session asks the same questions either way; a solo run's
// answers are its own values, so it trains exactly as before the seam existed.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "frugal/data/loader.h"
#include "frugal/train/evaluate.h"
#include "frugal/train/train.h"
#include "train/distributed.h"

namespace frugal {

// --pipeline: how the model is cut into stages (train/pipeline.cpp).
struct PipelineOptions {
  int stages = 1;                    // 1: no pipeline
  int micro_batches = 0;             // per step
  std::vector<std::string> split;    // pieces that start stages 1..N-1 (empty: balanced)
  std::string balance = "time";      // what a balanced cut evens out: "time" (measured) or "parameters"
  std::vector<std::int64_t> sample;  // (micro-batch, C, H, W) of a measuring input
  AmpMode amp = AmpMode::off;
};

class Collective {
 public:
  // What every process agrees on before a step: a stop asked for anywhere stops all, the step's
  // samples over all processes weigh each loss, and rank 0's plan is everyone's.
  struct StepPlan {
    enum class Stop { none, deadline, signal } stop = Stop::none;  // a signal anywhere wins over a deadline
    std::int64_t samples = 0;      // this process's, summed over all (solo: 0, the batches are the step)
    std::int64_t total_steps = 0;  // rank 0's
    double lr = 0;                 // rank 0's
    bool save_after = false;       // rank 0's cadence
  };

  // Solo unless `env` names a launch of several ranks: then joins their group (ProcessGroup::join).
  // With pipeline.stages > 1: the stages of a pipeline (train/pipeline.h), one per rank.
  static std::unique_ptr<Collective> join(const std::optional<DistEnv>& env, const torch::Device& device,
                                          std::chrono::milliseconds timeout,
                                          const std::function<bool()>& stop_requested,
                                          const PipelineOptions& pipeline = {});
  virtual ~Collective() = default;

  virtual bool grouped() const { return false; }
  virtual int rank() const { return 0; }
  virtual int world() const { return 1; }
  bool rank0() const { return rank() == 0; }
  // Copies of the model that each train on their share of every batch (data parallel), and which
  // one this process's is: every rank of a data-parallel run; one for a pipeline, whose stages
  // all load the same batches.
  virtual int replicas() const { return world(); }
  virtual int replica() const { return rank(); }

  // Whether this process's steps read the images of their batches: a pipeline stage after the
  // first takes its input from the stage before and its micro-batches' sizes and labels from the
  // first (train/pipeline.cpp), so its training loader reads labels only (LabelLoader).
  virtual bool reads_images() const { return true; }

  virtual StepPlan agree_on_step(const StepPlan& mine) { return mine; }
  // Whether any process says true (solo: this one).
  virtual bool any(bool mine) { return mine; }
  virtual std::int64_t from_rank0(std::int64_t value) { return value; }
  // Rank 0's values into every process's tensors.
  virtual void broadcast_from_rank0(std::vector<torch::Tensor>&) {}
  // Sums over the processes, in place (evaluation counts, synchronised batch norm).
  virtual void sum(std::vector<torch::Tensor>&) {}
  // The mean over the processes, in place (batch-norm statistics before evaluating and saving).
  virtual void average(std::vector<torch::Tensor>&) {}
  // Gradients summed over the processes at each step (TrainStep's hooks); solo: none needed.
  virtual void attach(TrainStep&) {}
  // What runs a step: a TrainStep attached as above; a pipeline's stage schedule.
  virtual std::unique_ptr<TrainStep> make_step(Model& model, torch::optim::Optimizer& optimizer, LossScaler& scaler,
                                               const StepOptions& options);
  // Where the model lives: all of it on `device`; a pipeline stage's pieces only (the rest stays
  // on the CPU, unused, and so does the optimizer's state for it).
  virtual void place(Model& model, const torch::Device& device) { model.to(device); }
  // Before a save: this process's copy of the model and its optimizer state made whole (a
  // pipeline's stages send theirs); every process takes part.
  virtual void gather(Model&, const OptimizerSetup&) {}
  // What an epoch's metrics record of the processes' own work (null: nothing): a pipeline's
  // per-rank memory, schedule and wait seconds. Every process takes part.
  virtual nlohmann::json epoch_figures() { return nullptr; }
  // What evaluate() runs and reads here, its options set for it: the model and this process's
  // validation batches; on a pipeline stage its part of the forward, the first stage's batches
  // (the others read no image: their `val` is a LabelLoader they leave alone), chunks of the
  // training micro-batch and no halving on one stage alone. Every process takes part.
  struct Evaluation {
    Model& model;
    BatchSource& batches;
  };
  virtual Evaluation for_evaluation(Model& model, BatchSource& val, EvalOptions&) { return {model, val}; }
  // How the processes' counts become the whole set's (summed over data-parallel shards; a
  // pipeline's last stage's).
  virtual void combine_eval(std::vector<torch::Tensor>& counts) { sum(counts); }
  // Before a step: each process's dropout draws from a generator of (seed, rank, step), so that
  // ranks resume as they ran whatever the world size before; solo: the one generator goes on.
  virtual void seed_step(std::uint64_t, std::int64_t) {}
  // Seconds spent in collectives (waiting for the slowest included), and in the gradients' share.
  virtual double comm_seconds() const { return 0; }
  virtual double gradient_seconds() const { return 0; }
  // "distributed: rank 0 of 2 (gloo)"; empty when solo.
  virtual std::string describe() const { return ""; }
};

// The ranks torchrun started, through their c10d process group (collective.cpp).
class GroupCollective : public Collective {
 public:
  explicit GroupCollective(std::unique_ptr<ProcessGroup> g) : g_(std::move(g)) {}

  bool grouped() const override { return true; }
  int rank() const override { return g_->rank(); }
  int world() const override { return g_->world(); }
  StepPlan agree_on_step(const StepPlan& mine) override;
  bool any(bool mine) override;
  std::int64_t from_rank0(std::int64_t value) override;
  void broadcast_from_rank0(std::vector<torch::Tensor>& tensors) override { g_->broadcast(tensors); }
  void sum(std::vector<torch::Tensor>& tensors) override { g_->all_reduce_sum(tensors); }
  void average(std::vector<torch::Tensor>& tensors) override;
  void attach(TrainStep& step) override;
  void seed_step(std::uint64_t seed, std::int64_t step) override;
  double comm_seconds() const override { return g_->comm_seconds(); }
  double gradient_seconds() const override { return g_->gradient_seconds(); }
  std::string describe() const override;

 protected:
  std::unique_ptr<ProcessGroup> g_;
};

}  // namespace frugal
