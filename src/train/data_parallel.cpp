// Data parallelism (see data_parallel.h).
#include "train/data_parallel.h"

namespace frugal {

DataParallel::DataParallel(Comm& comm) : Parallelism(comm) {
  replicas_ = comm.world();
  replica_ = comm.rank();
}

std::unique_ptr<TrainStep> DataParallel::make_step(Model& model, torch::optim::Optimizer& optimizer, LossScaler& scaler,
                                                   const StepOptions& options) {
  auto step = std::make_unique<TrainStep>(model, optimizer, scaler, options);
  if (ProcessGroup* g = comm_.group()) {
    step->zero_gradients = [g](const std::vector<torch::Tensor>& params) { g->prepare_gradients(params); };
    step->reduce_gradients = [g](const std::vector<torch::Tensor>& params, std::vector<torch::Tensor> extra) {
      g->all_reduce_gradients(params, std::move(extra));
    };
  }
  return step;
}

// Each rank's counts are those of its shard of the validation set: summed, the whole set's.
Parallelism::Evaluation DataParallel::for_evaluation(Model& model, BatchSource& val, EvalOptions& options) {
  if (comm_.grouped()) options.reduce = [&comm = comm_](std::vector<torch::Tensor>& counts) { comm.sum(counts); };
  return {model, val};
}

std::string DataParallel::describe() const {
  if (!comm_.grouped()) return "";
  return "distributed: rank " + std::to_string(comm_.rank()) + " of " + std::to_string(comm_.world()) + " (" +
         comm_.backend() + ")";
}

}  // namespace frugal
