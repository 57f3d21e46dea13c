// Data parallelism (internal): the whole model on every rank, each training on its share of
// every batch, their gradients summed at each step through c10d (ProcessGroup's buckets, as DDP);
// a single process is the one copy, trained exactly as without a group.
#pragma once

#include "train/parallelism.h"

namespace frugal {

class DataParallel final : public Parallelism {
 public:
  explicit DataParallel(Comm& comm);

  void place(Model& model, const torch::Device& device) override { model.to(device); }
  std::unique_ptr<TrainStep> make_step(Model& model, torch::optim::Optimizer& optimizer, LossScaler& scaler,
                                       const StepOptions& options) override;
  void equalize(std::vector<torch::Tensor>& state) override { comm_.broadcast_from_rank0(state); }
  void average(std::vector<torch::Tensor>& buffers) override { comm_.average(buffers); }
  void gather(Model&, const OptimizerSetup&) override {}  // every rank holds the whole model
  Evaluation for_evaluation(Model& model, BatchSource& val, EvalOptions& options) override;
  nlohmann::json epoch_figures() override { return nullptr; }
  std::string describe() const override;
};

}  // namespace frugal
